"""Running the workflow through a SLURM cluster in tests: the repository's profile with its
placeholders filled for the cluster, Snakemake in the foreground or the background, and the
SLURM jobs the executor plugin reports in its output."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.workflow.slurm_cluster import SlurmCluster

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "workflow" / "profiles" / "slurm" / "config.yaml"
PLACEHOLDERS = ("CHANGE_ME_account", "CHANGE_ME_cpu_partition", "CHANGE_ME_gpu_partition")
# Snakemake with the executor plugin's status checks at most 2 s apart (the file says why)
PROMPT_STATUS = Path(__file__).with_name("snakemake_prompt_status.py")
# The test cluster has no accounting database, so sacct cannot answer: job status comes from
# squeue (MinJobAge 300 s >= 3 x the first check's delay), checked 2 s after submission.
TEST_CLUSTER_SETTINGS = {
    "slurm-status-command": "squeue",
    "slurm-init-seconds-before-status-checks": 2,
}

_SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


@dataclass(frozen=True)
class SubmittedJob:
    snakemake_id: str
    slurm_id: str
    rule: str
    log: Path  # the SLURM job's own log (stdout and stderr of the batch script)


def cluster_profile(
    dest: Path,
    cluster: SlurmCluster,
    account: str = "gc2po",
    partition: str | None = None,
    set_resources: dict | None = None,
) -> Path:
    """The repository's SLURM profile with its placeholders filled as a user would fill them
    (every partition -> ``partition``, default: the cluster's), plus the test cluster's status
    settings and any ``set_resources`` (rule -> resources) merged in. Returns the profile folder."""
    text = PROFILE.read_text()
    missing = [p for p in PLACEHOLDERS if p not in text]
    assert not missing, f"{PROFILE}: placeholders {missing} are gone; update the test"
    partition = partition or cluster.partition
    for placeholder in PLACEHOLDERS:
        text = text.replace(placeholder, account if placeholder.endswith("account") else partition)
    profile = yaml.safe_load(text)
    for rule, resources in (set_resources or {}).items():
        profile["set-resources"].setdefault(rule, {}).update(resources)
    profile.update(TEST_CLUSTER_SETTINGS)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return dest


def new_workdir(path: Path) -> Path:
    """A work folder holding a copy of the configs, as the workflow tests use."""
    path.mkdir(parents=True)
    shutil.copytree(ROOT / "config", path / "config")
    return path


def snakemake_command(
    *args: str, snakefile: Path = ROOT / "Snakefile", on_cluster: bool = False
) -> list[str]:
    """``--configfile`` takes several values: put targets before it. ``on_cluster``: a run that
    submits to the test cluster, through ``PROMPT_STATUS``."""
    runner = [str(PROMPT_STATUS)] if on_cluster else ["-m", "snakemake"]
    return [sys.executable, *runner, "-s", str(snakefile), *args]


def dry_run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``snakemake -n *args`` in the repository (no cluster), its output captured: the plan, or
    the one-line refusal of a config."""
    return subprocess.run(
        snakemake_command("-n", *args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def run_snakemake(
    cluster: SlurmCluster,
    workdir: Path,
    *args: str,
    timeout: float,
    snakefile: Path = ROOT / "Snakefile",
) -> subprocess.CompletedProcess:
    return subprocess.run(
        snakemake_command(*args, snakefile=snakefile, on_cluster=True),
        cwd=workdir,
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_snakemake(
    cluster: SlurmCluster, workdir: Path, *args: str, output: Path
) -> subprocess.Popen:
    """Snakemake in the background, stdout and stderr into ``output`` (read it while it runs)."""
    with open(output, "w") as handle:  # the child keeps its own descriptor
        return subprocess.Popen(
            snakemake_command(*args, on_cluster=True),
            cwd=workdir,
            env=cluster.env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def submitted_jobs(output: str) -> list[SubmittedJob]:
    """The SLURM jobs the executor plugin reports ('Job 3 has been submitted with SLURM jobid 7
    (log: .../rule_train/<wildcards>/7.log).'), in submission order."""
    jobs = []
    for snakemake_id, slurm_id, log in _SUBMITTED.findall(output):
        rule = re.search(r"/rule_([^/]+)/", log).group(1)
        jobs.append(SubmittedJob(snakemake_id, slurm_id, rule, Path(log)))
    return jobs


def planned_jobs(output: str) -> dict[str, int]:
    """Rule -> job count of the first 'Job stats' table Snakemake prints (the plan)."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {name: int(count) for name, count in re.findall(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def planned_job_blocks(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, {"input": ..., "output": ..., "resources": ...}) of every job a run or dry run
    prints."""
    blocks = re.findall(r"^(?:local)?rule (\w+):\n((?:    .*\n?)*)", output, re.MULTILINE)
    return [
        (rule, dict(re.findall(r"^    (\w+): (.*)$", body, re.MULTILINE))) for rule, body in blocks
    ]


def download_rules() -> list[str]:
    """DOWNLOAD_RULES as workflow/rules/common.smk declares them."""
    source = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    return ast.literal_eval(
        re.search(r"^DOWNLOAD_RULES = (\[.*?\])", source, re.MULTILINE | re.DOTALL).group(1)
    )


def sbatch_lines(output: str) -> list[str]:
    """The sbatch command lines the plugin prints (in its errors, or with --verbose)."""
    return [
        line.strip() for line in output.splitlines() if line.strip().startswith("sbatch --parsable")
    ]


def wait_until(condition: Callable[[], object], timeout: float, what: str, poll: float = 0.5):
    """The first truthy value of ``condition()``; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)
