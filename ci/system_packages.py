"""Install the Debian packages listed in system-packages.txt that are missing (stdlib only).

    python3 ci/system_packages.py          # install what is missing, then check every entry
    python3 ci/system_packages.py --check  # only report what is missing (exit 1 if any)

Idempotent: a package whose commands and files are all present is left alone, and apt-get runs
only for the missing ones. Installing needs root and apt-get (CI runs as root on Debian).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LIST = Path(__file__).resolve().parents[1] / "system-packages.txt"


@dataclass(frozen=True)
class Entry:
    package: str
    provides: tuple[str, ...]  # commands on PATH, or absolute paths of files

    def missing(self) -> list[str]:
        return [
            p
            for p in self.provides
            if not (os.path.exists(p) if p.startswith("/") else shutil.which(p))
        ]


def read_list(path: Path = LIST) -> list[Entry]:
    """The entries of the list; a malformed line fails naming the file and line."""
    entries = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) < 2:
            raise ValueError(
                f"{path}:{number}: '{raw.strip()}' names no command or file that "
                f"shows the package is installed"
            )
        entries.append(Entry(line[0], tuple(line[1:])))
    return entries


def package_for(command: str, entries: list[Entry] | None = None) -> str | None:
    """The listed package that provides ``command`` (or file), or None if the list lacks it."""
    for entry in entries if entries is not None else read_list():
        if command in entry.provides:
            return entry.package
    return None


def cannot_install_reason() -> str | None:
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("apt-get") is None:
        return "no apt-get on this machine"
    return None


def install(entries: list[Entry]) -> list[str]:
    """Install the packages of ``entries`` that are missing; returns what was installed.

    Raises RuntimeError when something is missing and cannot be installed, or is still missing
    after apt-get."""
    missing = sorted({e.package for e in entries if e.missing()})
    if not missing:
        return []
    reason = cannot_install_reason()
    if reason:
        raise RuntimeError(
            f"the Debian package(s) {missing} are missing and cannot be installed "
            f"here ({reason}); install them: apt-get install {' '.join(missing)}"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # wait for another apt/dpkg run (a second test session, unattended upgrades) to finish
    wait = ["-o", "DPkg::Lock::Timeout=900"]
    for argv in (
        ["apt-get", *wait, "update", "-q"],
        ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", *missing],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
    still = {e.package: e.missing() for e in entries if e.missing()}
    if still:
        raise RuntimeError(f"installed {missing}, but still missing: {still}")
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="report what is missing; install nothing"
    )
    args = parser.parse_args(argv)
    entries = read_list()
    if args.check:
        missing = {e.package: e.missing() for e in entries if e.missing()}
        print("missing: " + (", ".join(missing) if missing else "none"))
        return 1 if missing else 0
    installed = install(entries)
    print(
        f"system packages: {len(entries)} listed, installed now: {', '.join(installed) or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
