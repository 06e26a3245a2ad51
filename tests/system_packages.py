"""Debian packages that some tests need (bubblewrap for the code sandbox, SLURM and munge for
the cluster test), installed on demand so that a clean checkout's ``python3 -m pytest -q`` runs
them: CI runs as root with Debian's package registry reachable.

A test may skip only where installing is impossible (not root, no apt-get); it then says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess

_updated = False


def ensure_debian_packages(packages: dict[str, str]) -> str | None:
    """Make sure each command of ``packages`` ({command: Debian package}) is on PATH.

    Returns None when every command is available (installing what is missing), else the reason
    they cannot be installed here (for ``pytest.skip``). A failing apt-get raises.
    """
    global _updated
    missing = sorted({package for command, package in packages.items() if shutil.which(command) is None})
    if not missing:
        return None
    if os.geteuid() != 0:
        return f"needs the Debian package(s) {missing}; not root, so they cannot be installed here"
    if shutil.which("apt-get") is None:
        return f"needs the Debian package(s) {missing}; no apt-get on this machine"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if not _updated:
        subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True, env=env, timeout=600)
        _updated = True
    result = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
                            capture_output=True, text=True, env=env, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"apt-get install {missing} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    still = sorted(command for command in packages if shutil.which(command) is None)
    if still:
        raise RuntimeError(f"installed {missing} but {still} are still not on PATH")
    return None
