"""The Debian packages some tests need (bubblewrap for the code sandbox, SLURM and munge for the
cluster test, LaTeX for the table test), all from the one list in system-packages.txt.

tests/conftest.py installs every missing package of the list when the session starts (CI runs as
root with Debian's package registry reachable), so ``python3 -m pytest -q`` on a clean machine
needs nothing installed by hand. A test may skip only where installing is impossible (not root,
no apt-get); it then says why.
"""

from __future__ import annotations

from ci.system_packages import cannot_install_reason, install, read_list


def ensure_debian_packages(packages: dict[str, str]) -> str | None:
    """Make sure each command of ``packages`` ({command: Debian package}) is there.

    Every pair must be an entry of system-packages.txt (so the list stays the one source).
    Returns None when every command is available (installing what is missing), else the reason
    they cannot be installed here (for ``pytest.skip``). A failing apt-get raises.
    """
    entries = read_list()
    wanted = []
    for command, package in packages.items():
        entry = next((e for e in entries if e.package == package and command in e.provides), None)
        if entry is None:
            raise AssertionError(
                f"{command} ({package}) is not in system-packages.txt: add it there"
            )
        wanted.append(entry)
    if not any(e.missing() for e in wanted):
        return None
    reason = cannot_install_reason()
    if reason:
        missing = sorted({e.package for e in wanted if e.missing()})
        return f"needs the Debian package(s) {missing}; {reason}, so they cannot be installed here"
    install(wanted)
    return None
