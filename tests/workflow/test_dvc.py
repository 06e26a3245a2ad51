"""DVC as the README uses it, on the repository's own dvc.yaml: every `workflow@<config>` stage
runs a valid Snakemake DAG whose prepared data and checkpoints lie in the stage's outputs, and the
round trip on the ci miniature from a clean clone: `dvc repro`, a clean `dvc status`, `dvc push`
to the local remote, `dvc pull` into a second clone (byte-identical files, clean status there)."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.workflow.slurm_workflow import ROOT, new_workdir

STAGE = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["workflow"]
ENV = {
    **os.environ,
    "DVC_NO_ANALYTICS": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def run(*args: str, cwd: Path) -> str:
    out = subprocess.run(list(args), cwd=cwd, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{args}: {out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def stage_outs(name: str) -> list[str]:
    return [next(iter(out)).replace("${key}", name) for out in STAGE["do"]["outs"]]


def config_files(name: str) -> list[str]:
    """The config files of the stage's Snakemake command (none given: the embedded default)."""
    args = shlex.split(STAGE["foreach"][name]["snakemake"])
    if "--configfile" not in args:
        return ["config/config.yaml"]
    files = args[args.index("--configfile") + 1 :]
    return files[: next((i for i, a in enumerate(files) if a.startswith("-")), len(files))]


@pytest.mark.parametrize("name", ["testbed", "ci", "paper"])
def test_stage_versions_the_configs_prepared_data_and_checkpoints(name, tmp_path):
    assert name in STAGE["foreach"]
    merged: dict = {}
    for path in config_files(name):
        merged.update(yaml.safe_load((ROOT / path).read_text()))
    assert merged["name"] == name  # the key names the folders the stage's outs point at
    work = new_workdir(tmp_path / "wf")
    summary = run(
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--summary",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        *config_files(name),
        cwd=work,
    )
    outputs = [line.split("\t")[0] for line in summary.splitlines()[1:] if "\t" in line]
    kept = [p for p in outputs if p.startswith((f"resources/{name}/", f"results/{name}/runs/"))]
    outs = stage_outs(name)
    assert [p for p in kept if not any(p.startswith(out + "/") for out in outs)] == []
    assert any(p.startswith(f"resources/{name}/data/") for p in kept)
    assert any(p.startswith(f"results/{name}/runs/") and p.endswith("/final") for p in kept)


def tree_digest(root: Path, folders: list[str]) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in folders
        for p in sorted((root / folder).rglob("*"))
        if p.is_file()
    }


def clean_clone(dest: Path) -> Path:
    """The repository's files as a fresh clone has them: tracked and not-ignored files, in a new
    git repository (the working tree as it is, so uncommitted changes are tested too)."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    for relative in filter(None, listed.split("\0")):
        if (ROOT / relative).is_file():
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / relative, dest / relative)
    run("git", "init", "-q", cwd=dest)
    run("git", "add", "-A", cwd=dest)
    run("git", "commit", "-qm", "clean clone", cwd=dest)
    return dest


# the first test of a session to use the ci run pays for it (up to 1,200 s, conftest.py)
@pytest.mark.system("git")  # the clones, and DVC's own use of git
@pytest.mark.timeout(1800)
def test_dvc_round_trip_on_the_ci_miniature(ci_local_run, tmp_path):
    finished, out = ci_local_run  # `snakemake --cores 2` with the ci overlay (conftest.py)
    assert out.returncode == 0, out.stderr[-3000:]
    project = clean_clone(tmp_path / "gc2po")
    assert not (project / "dvc.lock").exists()  # not committed: README, DVC
    # Snakemake's outputs of the session's ci run, so that `dvc repro` finds them up to date
    # instead of training again (their mtimes kept: Snakemake compares them)
    for folder in ("resources/ci", "results/ci", ".snakemake/metadata"):
        shutil.copytree(finished / folder, project / folder)
    repro = run("dvc", "repro", "workflow@ci", cwd=project)
    assert "Nothing to be done" in repro  # Snakemake reran nothing
    assert "Data and pipelines are up to date" in run("dvc", "status", "workflow@ci", cwd=project)
    # bytecode that running the code leaves in the stage's dependencies is not a change (.dvcignore)
    for folder in ("gc2po/__pycache__", "workflow/scripts/__pycache__"):
        (project / folder).mkdir(exist_ok=True)
        (project / folder / "plan.cpython-311.pyc").write_bytes(b"bytecode")
    assert "Data and pipelines are up to date" in run("dvc", "status", "workflow@ci", cwd=project)
    run("dvc", "push", "workflow@ci", cwd=project)  # to ../gc2po-dvc-store (.dvc/config)
    assert (tmp_path / "gc2po-dvc-store" / "files" / "md5").is_dir()
    run("git", "add", "dvc.lock", cwd=project)
    run("git", "commit", "-qm", "the ci run's dvc.lock", cwd=project)

    second = tmp_path / "second"
    run("git", "clone", "-q", str(project), str(second), cwd=tmp_path)
    assert not (second / "resources").exists()
    run("dvc", "pull", "workflow@ci", cwd=second)
    outs = stage_outs("ci")
    assert tree_digest(second, outs) == tree_digest(project, outs)
    assert tree_digest(project, outs) == tree_digest(finished, outs)
    assert any(p.endswith("final/model.safetensors") for p in tree_digest(second, outs))
    assert "Data and pipelines are up to date" in run("dvc", "status", "workflow@ci", cwd=second)
