"""Per-sample cgroups: the files written for cgroup v2 and v1 (on a stand-in directory tree: a
real cgroup v2 kernel is not available on the development machine, which is a v1/v2 hybrid), and
on this machine's real hierarchy, when root, that every sample's cgroup is gone afterwards."""

import os
from pathlib import Path

import pytest

from gc2po.evaluation.sandbox import cgroup as sandbox_cgroup
from gc2po.evaluation.sandbox import host as sandbox_host
from gc2po.evaluation.sandbox import run_python

# /proc/self/cgroup of a v1/v2 hybrid host (the development machine's own)
HYBRID = """9:name=systemd:/
8:pids:/
4:memory:/process_api/c8f751ac
1:cpu:/
0::/
"""


def fake_v2_root(tmp_path: Path) -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("cpu io\n")
    return root


def test_v2_samples_get_memory_and_pids_limits(tmp_path):
    root = fake_v2_root(tmp_path)
    layout = sandbox_cgroup._v2_layout(root)
    assert (
        root / "cgroup.subtree_control"
    ).read_text() == "+memory +pids"  # controllers handed down
    assert (root / "gc2po-sandbox" / "cgroup.subtree_control").read_text() == "+memory +pids"
    group = sandbox_cgroup.create_sample_cgroup(layout, 512 << 20, 8)
    assert group.memory_dir == group.pids_dir and group.memory_dir.parent == root / "gc2po-sandbox"
    assert (group.memory_dir / "memory.max").read_text() == str(512 << 20)
    assert (group.pids_dir / "pids.max").read_text() == "8"
    assert group.procs_files == [str(group.memory_dir / "cgroup.procs")]


def test_v2_without_a_memory_controller_is_no_layout(tmp_path):
    root = fake_v2_root(tmp_path)
    (root / "cgroup.controllers").write_text("cpu io hugetlb\n")
    with pytest.raises(OSError, match="memory"):
        sandbox_cgroup._v2_layout(root)


def test_v1_samples_live_under_the_graders_own_cgroups(tmp_path):
    root = tmp_path / "cgroup"
    for path in ("memory/process_api/c8f751ac", "pids"):
        (root / path).mkdir(parents=True)
    (tmp_path / "self").write_text(HYBRID)
    layout = sandbox_cgroup._v1_layout(root, tmp_path / "self")
    assert layout == sandbox_cgroup.CgroupLayout(
        1, root / "memory/process_api/c8f751ac", root / "pids"
    )
    group = sandbox_cgroup.create_sample_cgroup(layout, 256 << 20, 6)
    assert (group.memory_dir / "memory.limit_in_bytes").read_text() == str(256 << 20)
    assert (group.pids_dir / "pids.max").read_text() == "6"
    assert group.procs_files == [
        str(group.memory_dir / "cgroup.procs"),
        str(group.pids_dir / "cgroup.procs"),
    ]


def test_no_cgroup_without_root(monkeypatch):
    monkeypatch.setattr(sandbox_cgroup.os, "geteuid", lambda: 1000)
    assert sandbox_cgroup.detect_cgroup_layout() == (None, "not root, so no per-sample cgroup")


@pytest.mark.system("bubblewrap", "util-linux", "python3-minimal")
def test_every_sample_cgroup_is_removed_after_its_run():
    layout = sandbox_host.sandbox_setup().cgroups
    if layout is None:
        pytest.skip(
            "this machine gives the grader no per-sample cgroup (not root, or no controllers)"
        )
    ours = f"gc2po-{os.getpid()}-"
    for program in ("pass", "import os\nos.kill(os.getpid(), 9)", "import time\ntime.sleep(30)"):
        assert run_python(program, timeout=3).status != "error"
    for parent in {layout.memory_parent, layout.pids_parent}:
        assert [p.name for p in parent.iterdir() if p.name.startswith(ours)] == []
