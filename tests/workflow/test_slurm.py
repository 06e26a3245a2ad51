"""Cluster submission through a real SLURM: Debian's slurm-wlm 22.05 and munge on localhost
(installed when missing, as in CI), driven by the repository's profile with its placeholders
filled for the test cluster.

- the ci config's main tables (Table 1, generalization, ablation: its data, warm start, training
  and evaluation jobs and the table jobs, which cover every partition the profile sets) run
  through sbatch, every job is in SLURM's completion records, and the tables equal those of the
  local run of the whole ci config;
- GPU rules of the paper plan are submitted with one GPU option (--gpus, never --gres too);
- download rules run on the submit host, cluster jobs see HF_HUB_OFFLINE=1;
- a bad profile value fails at submission with the message that names it, not a hang;
- a cancelled (preempted) job is submitted again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.workflow.slurm_cluster import SLURM_PACKAGES, local_slurm_cluster, pid_alive
from tests.workflow.slurm_workflow import (
    ROOT,
    cluster_profile,
    download_rules,
    new_workdir,
    planned_job_blocks,
    planned_jobs,
    run_snakemake,
    sbatch_lines,
    snakemake_command,
    start_snakemake,
    submitted_jobs,
    wait_until,
)

CI_CONFIG = ("--configfile", "config/config.yaml", "config/ci.yaml")
TABLES = [f"table1.{ext}" for ext in ("md", "tex", "csv")]
# Rules the workflow runs on the submit host besides the downloads: the target and the
# training jobs' run configs (a file written from the config in a second).
LOCAL = {"all", "run_config", "rulegraph"}  # localrules: the submit host runs them
# What the ci test submits: Table 1, compared with the local run, not the whole ci config (its
# other tables, figures, audits, greedy evaluations and report pages are more of the same rules,
# trainings, evaluations and CPU jobs of the default partition; each SLURM job costs two Snakemake
# start-ups and status polls: the whole config through sbatch took 7.5 minutes of the suite, its
# three tables 3.2 minutes).
TABLE_TARGETS = [f"results/ci/tables/{name}" for name in TABLES]
# what the local cluster runs (slurm_cluster.py): the tests that start it name these packages
SLURM = pytest.mark.system(*sorted(set(SLURM_PACKAGES.values())))
TRAIN_TARGET = "results/ci/runs/testbed/grpo/seed0/final"


def _require_slurm():
    if os.geteuid() != 0:
        pytest.skip("the local cluster runs slurmd, which launches jobs, as root; not root here")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """One cluster for the module; afterwards no daemon it started is alive and its state and
    spool folders are gone."""
    _require_slurm()
    root = tmp_path_factory.mktemp("slurm")
    with local_slurm_cluster(root) as cluster:
        yield cluster
    alive = {name: pid for name, pid in cluster.pids.items() if pid_alive(pid)}
    assert not alive, f"daemons still running after the cluster stopped: {alive}"
    assert not (root / "state").exists() and not (root / "spool").exists()


@pytest.fixture(scope="module")
def ci_through_slurm(slurm, tmp_path_factory):
    """The ci config's main tables made through sbatch with the repository's profile: (work folder,
    output)."""
    base = tmp_path_factory.mktemp("ci_slurm")
    profile = cluster_profile(base / "profile", slurm)
    work = new_workdir(base / "wf")
    started = time.monotonic()
    out = run_snakemake(
        slurm, work, *TABLE_TARGETS, "--profile", str(profile), *CI_CONFIG, timeout=3000
    )
    print(f"ci tables through SLURM: {time.monotonic() - started:.0f} s")
    assert out.returncode == 0, out.stderr[-6000:] + slurm.log_tail()
    return work, out.stderr


@SLURM
def test_local_cluster_stops_its_daemons_when_the_test_fails(tmp_path):
    _require_slurm()
    root = tmp_path / "cluster"
    with pytest.raises(RuntimeError, match="a failing test"):
        with local_slurm_cluster(root) as cluster:
            assert cluster.run("sinfo", "-h", "-o", "%T").stdout.strip() == "idle"
            raise RuntimeError("a failing test")
    assert cluster.pids.keys() == {"munged", "slurmctld", "slurmd"}
    assert not [pid for pid in cluster.pids.values() if pid_alive(pid)]
    assert (
        not (root / "state").exists()
        and not (root / "spool").exists()
        and not (root / "munge").exists()
    )


@SLURM
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_ci_config_runs_through_sbatch_like_a_local_run(slurm, ci_through_slurm, ci_local_run):
    work, output = ci_through_slurm
    jobs = submitted_jobs(output)
    planned = planned_jobs(output)
    # Table 1's part of the ci config: its data, warm start, 4 trainings (its methods), 5
    # evaluations (with the base model's) and the table; GPU partition (train, evaluate) and
    # default partition (the rest), one and two threads (warm_start)
    assert planned == {
        "testbed_data": 1,
        "decontaminate": 1,
        "warm_start": 1,
        "run_config": 4,
        "train": 4,
        "evaluate": 5,
        "table": 1,
    }, planned
    # every job but the local ones (the run configs a training job reads) went to SLURM, once
    submitted_per_rule = {
        rule: sum(job.rule == rule for job in jobs) for rule in {job.rule for job in jobs}
    }
    assert submitted_per_rule == {rule: n for rule, n in planned.items() if rule not in LOCAL}, (
        planned,
        jobs,
    )
    local = re.findall(r"^localrule (\w+):", output, re.MULTILINE)
    assert set(local) == {"run_config"} and local.count("run_config") == planned["train"], local
    # ... and SLURM recorded each of them as completed, under the run's job name
    records = slurm.completed_jobs()
    run_id = re.search(r"SLURM run ID: (\S+)", output).group(1)
    for job in jobs:
        assert records[job.slurm_id]["JobState"] == "COMPLETED", records.get(job.slurm_id)
        assert records[job.slurm_id]["Name"] == run_id
        assert job.log.is_file() and job.log.is_relative_to(work / "logs" / "slurm")
    assert {f"JobId={job.slurm_id}" for job in jobs} <= set(
        re.findall(r"JobId=\d+", slurm.controller_log.read_text())
    )

    local_run, out = ci_local_run  # the same config run with `--cores 2` (conftest.py)
    assert out.returncode == 0, out.stderr[-5000:]
    for name in TABLES:
        through_slurm = (work / "results" / "ci" / "tables" / name).read_text()
        assert through_slurm == (local_run / "results" / "ci" / "tables" / name).read_text(), name


def _paper_inputs(work: Path) -> None:
    """The outputs of the paper plan's download rules, so that its GPU jobs are ready to submit
    without the internet (they are not run: this cluster has no GPUs)."""
    import yaml

    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    data = work / "resources" / "paper" / "data"
    models = work / "resources" / "paper" / "models"
    data.mkdir(parents=True)
    models.mkdir(parents=True)
    for key in paper["datasets"]:
        (data / f"{key}.jsonl").write_text("")
        (data / f"{key}.jsonl.manifest.json").write_text("{}")
    for label in paper["base_models"]:
        (models / f"{label}.hub.json").write_text("{}")
    (data / "decontamination.json").write_text("{}")  # the decontaminate job's output (a CPU job)
    # in the order the rules would write them: the benchmarks, then the training sets that are
    # decontaminated against them, then the check over both
    now = time.time()
    for key, spec in paper["datasets"].items():
        for path in (data / f"{key}.jsonl", data / f"{key}.jsonl.manifest.json"):
            os.utime(path, (now, now + 5 if spec.get("decontaminate") else now))
    os.utime(data / "decontamination.json", (now, now + 10))


@SLURM
@pytest.mark.timeout(600)
def test_gpu_rules_request_their_gpus_once(slurm, tmp_path):
    """One training and one evaluation job of the paper plan, submitted with the profile: the
    sbatch line carries --gpus=<the rule's gpu> once and no --gres. This cluster has no GPUs,
    so SLURM refuses them at submission and the plugin shows the line and SLURM's message."""
    profile = cluster_profile(tmp_path / "profile", slurm)
    work = new_workdir(tmp_path / "wf")
    _paper_inputs(work)
    targets = [
        "results/paper/runs/DeepScaleR-1.5B/gc2po/seed0/final",
        "results/paper/eval/DeepScaleR-1.5B/base/seed0/aime2024.jsonl",
    ]
    # --keep-going: the training job is submitted after its (local) run config is written, when
    # the evaluation job's submission has already failed
    out = run_snakemake(
        slurm,
        work,
        *targets,
        "--keep-going",
        "--profile",
        str(profile),
        "--configfile",
        "config/config.yaml",
        "config/paper.yaml",
        timeout=300,
    )
    assert out.returncode != 0
    assert "Invalid generic resource (gres) specification" in out.stderr  # SLURM's own message
    assert not submitted_jobs(out.stderr)
    lines = sbatch_lines(out.stderr)
    gpus_of_rule = {
        rule: int(n)
        for rule, n in re.findall(
            r"^rule (\w+):\n(?:    .*\n)*?    resources: .*\bgpu=(\d+)", out.stderr, re.MULTILINE
        )
    }
    assert set(gpus_of_rule) == {"train", "evaluate"} and min(gpus_of_rule.values()) >= 1, (
        gpus_of_rule
    )
    for rule, gpus in gpus_of_rule.items():
        rule_lines = [line for line in lines if f"--comment rule_{rule}_" in line]
        assert rule_lines, (rule, lines)
        for line in rule_lines:
            options = line.split(" --wrap=", 1)[0].split()
            assert [o for o in options if o.startswith(("--gpus", "--gres"))] == [
                f"--gpus={gpus}"
            ], line
            assert not [o for o in options if o.startswith(("--ntasks", "-n"))], (
                line
            )  # one task, N processes


def _env_snakefile(path: Path) -> Path:
    """The workflow plus one rule that records, inside its cluster job, what the job sees."""
    path.write_text(
        f'include: "{ROOT / "Snakefile"}"\n\n\n'
        "rule cluster_environment:\n"
        '    output: "cluster_environment.txt"\n'
        "    resources: mem_mb=200, runtime=5\n"
        "    shell: 'echo \"HF_HUB_OFFLINE=${{HF_HUB_OFFLINE-unset}} "
        "HF_DATASETS_OFFLINE=${{HF_DATASETS_OFFLINE-unset}} host=$(hostname) "
        "job=${{SLURM_JOB_ID-none}}\" > {output}'\n"
    )
    return path


def _offline_overlay(work: Path, tiny_model_dir: Path) -> Path:
    """Mode benchmark with one local dataset and one 'hub' base model in a local folder: the
    download rules have work to do without the internet."""
    data = work / "tiny_math500.jsonl"
    data.write_text(
        "".join(
            json.dumps({"problem": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n"
            for i in range(3)
        )
    )
    overlay = work / "config" / "slurmenv.yaml"
    overlay.write_text(
        json.dumps(
            {
                "name": "slurmenv",
                "mode": "benchmark",
                "seeds": [0],
                "methods": ["grpo"],
                "sweeps": {"lambda_exp": [], "lambda_cf": []},
                "datasets": {"tiny": {"benchmark": "math500", "path": str(data)}},
                "base_models": {
                    "tinyhub": {"source": "hub", "path": str(tiny_model_dir), "train_data": "tiny"}
                },
                "evaluate": {"benchmarks": ["tiny"], "budgets": []},
                "audit": {"models": []},
                "report": {
                    "main_methods": ["grpo"],
                    "ablation_methods": ["grpo"],
                    "generalization_benchmarks": ["tiny"],
                    "cost_reference": "grpo",
                    "comparisons": [],
                },
            }
        )
    )
    return overlay


@SLURM
@pytest.mark.timeout(600)
def test_downloads_run_on_the_submit_host_and_cluster_jobs_offline(slurm, tmp_path, tiny_model_dir):
    profile = cluster_profile(tmp_path / "profile", slurm)
    work = new_workdir(tmp_path / "wf")
    overlay = _offline_overlay(work, tiny_model_dir)
    snakefile = _env_snakefile(tmp_path / "Snakefile")
    targets = [
        "resources/slurmenv/data/tiny.jsonl",
        "resources/slurmenv/models/tinyhub.hub.json",
        "cluster_environment.txt",
    ]
    out = run_snakemake(
        slurm,
        work,
        *targets,
        "--profile",
        str(profile),
        "--configfile",
        "config/config.yaml",
        str(overlay),
        timeout=300,
        snakefile=snakefile,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    assert "localrule benchmark_data:" in out.stderr and "localrule hub_model:" in out.stderr
    assert [job.rule for job in submitted_jobs(out.stderr)] == ["cluster_environment"]
    seen = (work / "cluster_environment.txt").read_text()
    assert "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1" in seen and "job=none" not in seen, seen
    assert (
        json.loads((work / "resources/slurmenv/models/tinyhub.hub.json").read_text())[
            "local_folder"
        ]
        is True
    )


@pytest.mark.parametrize(
    "overlay, downloads",
    [
        ("config/paper.yaml", {"benchmark_data", "hub_model"}),
        ("config/smollm2.yaml", {"benchmark_data", "gguf_model"}),
    ],
)
def test_plan_submits_no_rule_that_downloads(overlay, downloads):
    """The cluster jobs of a plan are the rules outside DOWNLOAD_RULES (which the Snakefile makes
    localrules; test_downloads_run_on_the_submit_host_and_cluster_jobs_offline shows they run on
    the submit host): training, evaluation, tables and figures, which read files and the Hub
    cache. Every job that loads a Hub base model (training, evaluating the base model) waits for
    its download into the cache; evaluations of trained models load their checkpoint."""
    out = subprocess.run(
        snakemake_command(
            "-n",
            "--forceall",
            "--profile",
            "workflow/profiles/slurm",
            "--configfile",
            "config/config.yaml",
            overlay,
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    jobs = planned_job_blocks(out.stdout)
    planned = {rule for rule, _ in jobs}
    assert planned & set(download_rules()) == downloads
    assert planned - set(download_rules()) - LOCAL == {
        "decontaminate",
        "train",
        "evaluate",
        "table",
        "comparison",
        "report_table",  # the comparison's HTML copy for the report
        "figures",
        "training_cost",
        "report_setup",
        "length_figure",
    }
    import yaml

    config = yaml.safe_load((ROOT / overlay).read_text())
    hub_models = {label for label, spec in config["base_models"].items() if spec["source"] == "hub"}
    loads_base = [
        (rule, fields)
        for rule, fields in jobs
        if rule == "train" or (rule == "evaluate" and "model=base" in fields["wildcards"])
    ]
    assert loads_base
    for rule, fields in loads_base:
        base = re.search(r"\bbase=([^,\s]+)", fields["wildcards"]).group(1)
        if base in hub_models:
            inputs = fields["input"].split(", ")
            assert any(path.endswith(f"/models/{base}.hub.json") for path in inputs), (rule, inputs)


def test_hub_model_rule_records_the_snapshot_offline_jobs_load(tmp_path, tiny_model_dir):
    """The hub_model rule against a Hugging Face cache laid out as huggingface_hub writes it
    (refs/main -> snapshots/<commit>/): it records that snapshot, and a job with
    HF_HUB_OFFLINE=1 loads the same Hub id from it. (Here the cache is filled beforehand: the
    Hub itself is out of reach of this machine.)"""
    commit = "0123456789abcdef0123456789abcdef01234567"
    cached = tmp_path / "hf" / "hub" / "models--gc2po-test--tiny"
    shutil.copytree(tiny_model_dir, cached / "snapshots" / commit)
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text(commit)
    work = new_workdir(tmp_path / "wf")
    overlay = _offline_overlay(work, tiny_model_dir)
    overlay.write_text(
        overlay.read_text().replace(json.dumps(str(tiny_model_dir)), json.dumps("gc2po-test/tiny"))
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        snakemake_command(
            "resources/slurmenv/models/tinyhub.hub.json",
            "--cores",
            "1",
            "--configfile",
            "config/config.yaml",
            str(overlay),
        ),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads((work / "resources/slurmenv/models/tinyhub.hub.json").read_text())
    assert record["path"] == "gc2po-test/tiny" and record["revision"] == commit
    assert "model.safetensors" in record["files"]
    load = subprocess.run(
        [
            sys.executable,
            "-c",
            "from transformers import AutoModelForCausalLM as M; "
            "print(type(M.from_pretrained('gc2po-test/tiny')).__name__)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert load.returncode == 0 and "ForCausalLM" in load.stdout, load.stderr[-2000:]


@SLURM
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "setting, message",
    [
        ({"partition": "no_such_partition"}, "invalid partition specified: no_such_partition"),
        (
            {"set_resources": {"testbed_data": {"runtime": "two hours"}}},
            "Resource 'runtime' with value 'two hours' could not be parsed as minutes",
        ),
    ],
)
def test_bad_profile_value_fails_at_submission(slurm, tmp_path, setting, message):
    """An unknown partition reaches sbatch, which refuses it; a non-numeric runtime never does:
    Snakemake turns runtimes into minutes and refuses it, naming the rule, before submitting."""
    profile = cluster_profile(tmp_path / "profile", slurm, **setting)
    work = new_workdir(tmp_path / "wf")
    started = time.monotonic()
    out = run_snakemake(
        slurm,
        work,
        "resources/ci/data/manifest.json",
        "--profile",
        str(profile),
        *CI_CONFIG,
        timeout=240,
    )
    assert out.returncode != 0
    assert message in out.stderr, out.stderr[-3000:]
    assert not submitted_jobs(out.stderr)
    assert time.monotonic() - started < 120  # fails at submission, does not wait on a queue


@SLURM
@pytest.mark.timeout(300)
def test_the_profiles_placeholders_stop_the_run_before_any_submission(slurm, tmp_path):
    """The repository's profile as shipped (CHANGE_ME_account, CHANGE_ME_*_partition): the run
    plans its jobs, then stops naming each placeholder, and SLURM never sees a job
    (gc2po.workflow.profile_check)."""
    work = new_workdir(tmp_path / "wf")
    out = run_snakemake(
        slurm,
        work,
        "resources/ci/data/manifest.json",
        "--profile",
        str(ROOT / "workflow" / "profiles" / "slurm"),
        *CI_CONFIG,
        timeout=240,
    )
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: profile: placeholder value(s) default-resources: slurm_account")
    assert "set-resources: train: slurm_partition = 'CHANGE_ME_gpu_partition'" in last
    assert not submitted_jobs(out.stderr) and not sbatch_lines(out.stderr)


def _job_state(slurm, slurm_id: str) -> str:
    return slurm.run("squeue", "-h", "--states=all", "-j", slurm_id, "-o", "%T").stdout.strip()


@SLURM
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_scancel_resubmits_and_resumes(slurm, ci_through_slurm, tmp_path):
    """A training job cancelled while it runs (what preemption does) after its second checkpoint is
    submitted again by the profile's `retries`, resumes from its last complete checkpoint, and the
    workflow completes."""
    work = tmp_path / "wf"
    shutil.copytree(ci_through_slurm[0], work, symlinks=True)
    (work / "config" / "longer.yaml").write_text(
        "train: {trainer: {max_steps: 24, save_steps: 1}}\n"
    )
    profile = cluster_profile(tmp_path / "profile", slurm)
    log = tmp_path / "snakemake.log"
    run = start_snakemake(
        slurm,
        work,
        TRAIN_TARGET,
        "--profile",
        str(profile),
        *CI_CONFIG,
        "config/longer.yaml",
        output=log,
    )
    run_dir = work / TRAIN_TARGET.removesuffix("/final")
    try:
        first = wait_until(
            lambda: submitted_jobs(log.read_text()), 300, "the training job's submission"
        )[0]
        assert first.rule == "train"
        # any checkpoint-N with N >= 2: save_total_limit may remove checkpoint-2 before a
        # poll sees it
        wait_until(
            lambda: any(int(p.name.split("-")[1]) >= 2 for p in run_dir.glob("checkpoint-*")),
            900,
            f"job {first.slurm_id}'s second checkpoint",
            poll=0.2,
        )
        subprocess.run(["scancel", first.slurm_id], env=slurm.env, check=True, timeout=30)
        assert run.wait(timeout=1800) == 0, log.read_text()[-5000:]
    finally:
        if run.poll() is None:
            run.kill()
    output = log.read_text()
    jobs = submitted_jobs(output)
    assert [job.rule for job in jobs] == ["train", "train"], jobs
    records = slurm.completed_jobs()
    assert records[jobs[0].slurm_id]["JobState"] == "CANCELLED"
    assert records[jobs[1].slurm_id]["JobState"] == "COMPLETED"
    assert (work / TRAIN_TARGET).is_dir()
    train_log = (work / "logs" / "ci" / "train" / "testbed_grpo_seed0.log").read_text()
    assert "resume=True from checkpoint-" in train_log, train_log[-3000:]
