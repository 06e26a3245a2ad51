"""What a sample sees (``gc2po.evaluation.sandbox.view``): the view built from a stand-in file
tree (installed packages hidden, shared objects staged under every name the loader uses, bound
by folder), the page cache warmed again only when an eviction counter moved, and the counters
read from /proc/vmstat and the grader's memory cgroup."""

import os
from pathlib import Path

from gc2po.evaluation.sandbox import view as sandbox_view
from gc2po.evaluation.sandbox.view import PageCacheWarmth, eviction_count, eviction_sources


def make_tree(root: Path) -> dict:
    stdlib = root / "lib" / "python3.11"
    (stdlib / "lib-dynload").mkdir(parents=True)
    (stdlib / "os.py").write_text("# os\n")
    (stdlib / "site-packages" / "torch").mkdir(parents=True)
    (stdlib / "site-packages" / "torch" / "__init__.py").write_text("# big\n")
    libs = root / "lib" / "x86_64-linux-gnu"
    libs.mkdir()
    (libs / "libz.so.1.2.13").write_bytes(b"\x7fELF z")
    os.symlink("libz.so.1.2.13", libs / "libz.so.1")
    (libs / "libunused.so.3").write_bytes(b"\x7fELF unused")
    interpreter = root / "bin" / "python3.11"
    interpreter.parent.mkdir()
    interpreter.write_bytes(b"\x7fELF python")
    return {
        "interpreter": str(interpreter),
        "paths": [str(stdlib), str(stdlib / "lib-dynload")],
        "mapped": [str(libs / "libz.so.1.2.13"), str(interpreter)],
    }


def test_the_view_binds_what_the_interpreter_maps_and_hides_installed_packages(tmp_path):
    tree = make_tree(tmp_path)
    binds, _, hidden = sandbox_view.read_only_view(**tree)
    stdlib = str(tmp_path / "lib" / "python3.11")
    libs = str(tmp_path / "lib" / "x86_64-linux-gnu")
    assert [destination for _, destination in binds] == sorted(
        [str(tmp_path / "bin"), stdlib, libs]
    )
    assert (stdlib, stdlib) in binds  # the standard library, whole
    assert hidden == (f"{stdlib}/site-packages",)
    staged = dict((destination, source) for source, destination in binds)[libs]
    assert sorted(os.listdir(staged)) == ["libz.so.1", "libz.so.1.2.13"]  # not libunused
    assert os.readlink(f"{staged}/libz.so.1") == "libz.so.1.2.13"  # the loader's name for it
    assert Path(f"{staged}/libz.so.1.2.13").read_bytes() == b"\x7fELF z"
    files = sandbox_view.view_files(binds, hidden)
    assert f"{stdlib}/os.py" in files and not any("site-packages" in f for f in files)
    assert f"{staged}/libz.so.1.2.13" in files and f"{staged}/libz.so.1" not in files  # a link


class Counter:
    def __init__(self, values):
        self.values = list(values)

    def __call__(self):
        return self.values.pop(0)


def test_the_view_is_read_again_only_after_the_counters_moved(tmp_path, monkeypatch):
    reads = []
    monkeypatch.setattr(sandbox_view, "read_whole", lambda files: reads.append(files))
    warmth = PageCacheWarmth(("a", "b"))
    warmth.counter = Counter([5, 5, 5, 7, None, None])
    outcomes = [warmth.ensure() for _ in range(6)]
    # read first, then only when the count moved (5 -> 7) or is unknown (None: every time)
    assert outcomes == [True, False, False, True, True, True]
    assert reads == [("a", "b")] * 4


def test_eviction_counters_are_summed_from_vmstat_and_the_memory_cgroup(tmp_path):
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 100\npgsteal_kswapd 3\npgsteal_direct 4\ndrop_pagecache 1\n")
    failcnt = tmp_path / "memory.failcnt"
    failcnt.write_text("2\n")
    sources = ((str(vmstat), ("pgsteal_", "drop_pagecache")), (str(failcnt), ("",)))
    assert eviction_count(sources) == 3 + 4 + 1 + 2
    assert eviction_count(((str(tmp_path / "missing"), ("",)),)) is None
    own = tmp_path / "cgroup"
    own.write_text("4:memory:/grader\n0::/grader\n")
    root = tmp_path / "fs"
    (root / "memory" / "grader").mkdir(parents=True)
    (root / "memory" / "grader" / "memory.failcnt").write_text("0\n")
    (root / "grader").mkdir()
    (root / "grader" / "memory.stat").write_text("pgsteal 9\npgscan 11\n")
    found = eviction_sources(str(root), str(own))
    assert found[1:] == (
        (str(root / "memory" / "grader" / "memory.failcnt"), ("",)),
        (str(root / "grader" / "memory.stat"), ("pgsteal",)),
    )
    assert eviction_count(found[1:]) == 9


def test_only_the_proc_files_this_kernel_has_are_covered(tmp_path):
    (tmp_path / "sys" / "kernel" / "random").mkdir(parents=True)
    for name in ("cmdline", "loadavg", "sys/kernel/random/boot_id"):
        (tmp_path / name).write_text("x")
    assert sandbox_view.proc_masks(str(tmp_path)) == (
        "/proc/cmdline",
        "/proc/loadavg",
        "/proc/sys/kernel/random/boot_id",
    )
