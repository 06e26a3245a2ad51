"""DVC round trip as the project uses it: a stage whose outputs are pushed to a local remote
and restored by `dvc pull` after deletion (on a miniature project, offline)."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd):
    out = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"{args}: {out.stdout}{out.stderr}"
    return out.stdout


@pytest.mark.skipif(shutil.which("dvc") is None or shutil.which("git") is None, reason="dvc or git missing")
def test_dvc_push_and_pull_restore_prepared_data(tmp_path):
    project, remote = tmp_path / "project", tmp_path / "remote"
    project.mkdir()
    run("git", "init", "-q", cwd=project)
    run("dvc", "init", "-q", cwd=project)
    run("dvc", "remote", "add", "-d", "local", str(remote), cwd=project)
    (project / "make_data.py").write_text(
        "from gc2po.testbed.data import write_splits\nwrite_splits({'train': 20, 'test_id': 5}, 0, 'resources/data')\n")
    (project / "dvc.yaml").write_text(
        "stages:\n  data:\n    cmd: python make_data.py\n    deps:\n      - make_data.py\n"
        "    outs:\n      - resources/data:\n          persist: true\n")
    run("dvc", "repro", "-q", cwd=project)
    before = (project / "resources/data/train.jsonl").read_bytes()
    run("dvc", "push", "-q", cwd=project)
    shutil.rmtree(project / "resources/data")
    run("dvc", "pull", "-q", cwd=project)
    assert (project / "resources/data/train.jsonl").read_bytes() == before
    # the project's own dvc.yaml parses and names the workflow's outputs
    import yaml

    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["testbed"]
    outs = [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]
    assert outs == ["resources/testbed/data", "resources/testbed/models", "results/testbed/runs"]
