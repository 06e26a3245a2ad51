"""One cgroup per code sample, so that memory and process limits hold for all its processes
together (a per-process address-space limit times a process cap is far looser).

Only root creates cgroups here. cgroup v2 (``/sys/fs/cgroup/cgroup.controllers`` exists): samples
live in ``/sys/fs/cgroup/gc2po-sandbox/<name>`` with ``memory.max``, ``memory.swap.max`` = 0 and
``pids.max``. cgroup v1 (separate ``memory`` and ``pids`` hierarchies, as on hybrid hosts): samples
live under the grader's own cgroup of each hierarchy with ``memory.limit_in_bytes`` (and
``memory.memsw.limit_in_bytes``: no swap) and ``pids.max``. Where neither works, the caller falls
back to rlimits (see ``gc2po.evaluation.sandbox``).
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
V2_PARENT = "gc2po-sandbox"
EMPTY_WAIT_SECONDS = (
    10.0  # how long removal waits for the kernel to finish killing a sample's processes
)

_names = itertools.count()
_names_lock = threading.Lock()


@dataclass(frozen=True)
class CgroupLayout:
    """Where sample cgroups are made: v2 has one parent, v1 a memory parent and a pids parent."""

    version: int
    memory_parent: Path
    pids_parent: Path


@dataclass
class SampleCgroup:
    layout: CgroupLayout
    memory_dir: Path
    pids_dir: Path

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its pid to, to enter this cgroup (one per hierarchy)."""
        dirs = [self.memory_dir] if self.layout.version == 2 else [self.memory_dir, self.pids_dir]
        return [str(d / "cgroup.procs") for d in dirs]

    def memory_peak_bytes(self) -> int | None:
        peak = self.memory_dir / (
            "memory.peak" if self.layout.version == 2 else "memory.max_usage_in_bytes"
        )
        try:
            return int(peak.read_text())
        except (OSError, ValueError):
            return None  # memory.peak needs Linux 5.19

    def _pids(self) -> set[int]:
        pids = set()
        for procs in self.procs_files:
            try:
                pids.update(int(line) for line in Path(procs).read_text().split())
            except FileNotFoundError:
                pass
        return pids

    def remove(self) -> str | None:
        """Kill what is left in the cgroup and remove it; a problem description, or None."""
        kill_switch = self.memory_dir / "cgroup.kill"
        if self.layout.version == 2 and kill_switch.exists():
            kill_switch.write_text("1")
        deadline = time.monotonic() + EMPTY_WAIT_SECONDS
        while pids := self._pids():
            if time.monotonic() > deadline:
                return f"processes {sorted(pids)} of the sample outlived it in {self.memory_dir}"
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)
        for directory in {self.memory_dir, self.pids_dir}:
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:  # EBUSY while the last exits are accounted
                    if time.monotonic() > deadline:
                        return f"cannot remove {directory}: {error}"
                    time.sleep(0.002)
        return None


def create_sample_cgroup(layout: CgroupLayout, memory_bytes: int, max_tasks: int) -> SampleCgroup:
    """A new sample cgroup; ``max_tasks`` bounds processes and threads together (pids.max)."""
    with _names_lock:
        name = f"gc2po-{os.getpid()}-{next(_names)}"
    if layout.version == 2:
        directory = layout.memory_parent / name
        directory.mkdir()
        group = SampleCgroup(layout, directory, directory)
        (directory / "memory.max").write_text(str(memory_bytes))
        if (directory / "memory.swap.max").exists():
            (directory / "memory.swap.max").write_text("0")
    else:
        group = SampleCgroup(layout, layout.memory_parent / name, layout.pids_parent / name)
        group.memory_dir.mkdir()
        group.pids_dir.mkdir()
        (group.memory_dir / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (group.memory_dir / "memory.memsw.limit_in_bytes").exists():
            (group.memory_dir / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
    (group.pids_dir / "pids.max").write_text(str(max_tasks))
    return group


def _own_v1_path(controller: str, cgroup_file: Path) -> str | None:
    for line in cgroup_file.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path.lstrip("/")
    return None


def _v2_layout(root: Path) -> CgroupLayout:
    needed = {"memory", "pids"}
    missing = needed - set((root / "cgroup.controllers").read_text().split())
    if missing:
        raise OSError(f"{root} offers no {sorted(missing)} controller")
    if needed - set((root / "cgroup.subtree_control").read_text().split()):
        (root / "cgroup.subtree_control").write_text("+memory +pids")
    parent = root / V2_PARENT
    parent.mkdir(exist_ok=True)
    (parent / "cgroup.subtree_control").write_text("+memory +pids")
    return CgroupLayout(2, parent, parent)


def _v1_layout(root: Path, cgroup_file: Path) -> CgroupLayout:
    parents = []
    for controller in ("memory", "pids"):
        own = _own_v1_path(controller, cgroup_file)
        if own is None or not (root / controller).is_dir():
            raise OSError(f"no cgroup v1 {controller} hierarchy under {root}")
        parents.append(root / controller / own)
    return CgroupLayout(1, *parents)


def detect_cgroup_layout(
    root: Path = CGROUP_ROOT, cgroup_file: Path = Path("/proc/self/cgroup")
) -> tuple[CgroupLayout | None, str]:
    """(layout, how samples are bounded), after making and removing one trial sample cgroup."""
    if os.geteuid() != 0:
        return None, "not root, so no per-sample cgroup"
    try:
        layout = (
            _v2_layout(root)
            if (root / "cgroup.controllers").exists()
            else _v1_layout(root, cgroup_file)
        )
        trial = create_sample_cgroup(layout, 64 << 20, 4)
        problem = trial.remove()
        if problem:
            raise OSError(problem)
    except OSError as error:
        return None, f"no per-sample cgroup ({error})"
    return layout, f"a cgroup v{layout.version} per sample under {layout.memory_parent}"
