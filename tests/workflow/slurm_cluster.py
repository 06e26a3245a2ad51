"""A one-node SLURM cluster on localhost for the cluster tests (Debian's slurm-wlm 22.05 + munge).

``local_slurm_cluster(root)`` writes a ``slurm.conf`` under ``root``, starts munged, slurmctld and
slurmd in the foreground as children of this process, waits until the node is idle and yields a
``SlurmCluster``; on the way out (also when the test fails) it cancels the cluster's jobs, stops
every daemon by the PID it started and removes the state and spool folders. Nothing outside
``root`` is touched: the munge socket, key, ports, state, spool and logs are private, so the
cluster does not collide with another one on the same machine.

No accounting database runs: ``sacct`` does not work, job status comes from ``squeue`` and the
record of finished jobs is SLURM's job-completion log (``jobcomp/filetxt``).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# command -> Debian package: what the cluster runs (test_slurm.py marks its tests with these)
SLURM_PACKAGES = {
    "slurmctld": "slurm-wlm",
    "slurmd": "slurm-wlm",
    "sbatch": "slurm-client",
    "munged": "munge",
}
PARTITION = "debug"
_START_TIMEOUT_S = 60
_STOP_TIMEOUT_S = 15


@dataclass
class SlurmCluster:
    root: Path
    partition: str
    env: dict[str, str]  # the environment SLURM's clients need (SLURM_CONF)
    pids: dict[str, int]  # daemon name -> PID started here

    @property
    def controller_log(self) -> Path:
        return self.root / "log" / "slurmctld.log"

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run a SLURM client command (squeue, scontrol, scancel, ...) against this cluster."""
        return subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def completed_jobs(self) -> dict[str, dict[str, str]]:
        """SLURM's job-completion log: job id -> its fields (JobState, Name, Partition, ...)."""
        path = self.root / "jobcomp.log"
        if not path.exists():
            return {}
        records = {}
        for line in path.read_text().splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            if "JobId" in fields:
                records[fields["JobId"]] = fields
        return records

    def log_tail(self, chars: int = 3000) -> str:
        """The end of every daemon log, for assertion messages."""
        parts = []
        for log in sorted((self.root / "log").glob("*.log")):
            parts.append(f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}")
        return "\n".join(parts)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _memory_mb() -> int:
    meminfo = Path("/proc/meminfo").read_text()
    return int(re.search(r"MemTotal:\s+(\d+) kB", meminfo).group(1)) // 1024


def slurm_conf(root: Path, host: str, partition: str, munge_socket: Path) -> str:
    """A one-node configuration without systemd, cgroups or accounting (see shared SLURM.md)."""
    memory = int(_memory_mb() * 0.9)
    return f"""\
ClusterName=gc2potest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.log
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
MinJobAge=300
ReturnToService=2
MailProg=/bin/true
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={memory} State=UNKNOWN
PartitionName={partition} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _srun_wrapper(root: Path, conf: Path) -> Path:
    """A folder with an ``srun`` that finds this cluster's slurm.conf.

    Real clusters keep slurm.conf in /etc/slurm; this private one is found through SLURM_CONF,
    which the executor plugin's job step (2.8) drops with every other SLURM_* variable before it
    calls srun inside the job. The wrapper sets it again.
    """
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "srun"
    wrapper.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which("srun")} "$@"\n')
    wrapper.chmod(0o755)
    return bin_dir


def _start(
    name: str, command: list[str], env: dict[str, str], root: Path, pids: dict, procs: dict
) -> None:
    with open(root / "log" / f"{name}.out", "wb") as out:  # the daemon keeps its own descriptor
        procs[name] = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    pids[name] = procs[name].pid


def _wait_for(check, what: str, procs: dict, cluster_root: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not check():
        dead = {name: proc.returncode for name, proc in procs.items() if proc.poll() is not None}
        if dead or time.monotonic() > deadline:
            logs = "\n".join(
                f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
                for p in sorted((cluster_root / "log").glob("*"))
            )
            raise RuntimeError(
                f"local SLURM: {what} did not happen (exited daemons: {dead})\n{logs}"
            )
        time.sleep(0.5)


def _node_idle(env: dict[str, str], partition: str) -> bool:
    out = subprocess.run(
        ["sinfo", "-h", "-p", partition, "-o", "%T"], env=env, capture_output=True, text=True
    )
    return out.returncode == 0 and out.stdout.strip() == "idle"


def _cancel_jobs(env: dict[str, str]) -> None:
    """Cancel this cluster's jobs and give slurmd a moment to end their processes."""
    subprocess.run(
        ["scancel", "--user", getpass.getuser()], env=env, capture_output=True, timeout=30
    )
    deadline = time.monotonic() + _STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        queue = subprocess.run(
            ["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True, timeout=30
        )
        if queue.returncode != 0 or not queue.stdout.strip():
            return
        time.sleep(0.5)


def _stop(procs: dict[str, subprocess.Popen], env: dict[str, str]) -> None:
    """Cancel what still runs, then stop the daemons in reverse start order, by PID."""
    if "slurmctld" in procs and procs["slurmctld"].poll() is None and "slurmd" in procs:
        _cancel_jobs(env)
    for name in reversed(list(procs)):
        proc = procs[name]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=_STOP_TIMEOUT_S)


@contextlib.contextmanager
def local_slurm_cluster(root: Path, partition: str = PARTITION) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and slurmd under ``root``; stop them and clean up on exit."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)  # munged refuses sockets and keys in folders others can write
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(mode=0o700, exist_ok=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = root / "munge" / "munge.socket"
    conf = root / "slurm.conf"
    host = socket.gethostname().split(".")[0]
    conf.write_text(slurm_conf(root, host, partition, munge_socket))
    env = {
        **os.environ,
        "SLURM_CONF": str(conf),
        "PATH": f"{_srun_wrapper(root, conf)}:{os.environ['PATH']}",
    }
    pids: dict[str, int] = {}
    procs: dict[str, subprocess.Popen] = {}
    try:
        _start(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={munge_socket}",
                f"--key-file={key}",
                f"--pid-file={root}/munge/munged.pid",
                f"--log-file={root}/log/munged.log",
                f"--seed-file={root}/munge/munged.seed",
            ],
            env,
            root,
            pids,
            procs,
        )
        _wait_for(munge_socket.exists, "munged socket", procs, root)
        _start("slurmctld", ["slurmctld", "-D", "-i", "-f", str(conf)], env, root, pids, procs)
        _start("slurmd", ["slurmd", "-D", "-f", str(conf)], env, root, pids, procs)
        _wait_for(
            lambda: _node_idle(env, partition),
            f"node {host} idle in partition {partition}",
            procs,
            root,
        )
        yield SlurmCluster(root=root, partition=partition, env=env, pids=pids)
    finally:
        _stop(procs, env)
        for sub in ("state", "spool", "munge"):
            shutil.rmtree(root / sub, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    """True while a process with this PID exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status
