"""config/README.md lists every config file of config/ in its table, and its facts about them
match the files (issue 51: it had listed 7 of 15)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
README = CONFIG / "README.md"


def config_files() -> list[str]:
    """Every file of config/ but the README, relative to config/."""
    return sorted(
        str(p.relative_to(CONFIG))
        for p in CONFIG.rglob("*")
        if p.is_file() and p != README and p.suffix in {".yaml", ".yml", ".json"}
    )


def listed() -> set[str]:
    """The files named in the first cell of the README's file table."""
    names = set()
    for line in README.read_text().splitlines():
        if line.startswith("| `"):
            first = line.split(" | ")[0]
            names.update(re.findall(r"`([^`]+)`", first))
    return names


def test_every_config_file_is_listed():
    missing = [f for f in config_files() if f not in listed()]
    assert not missing, f"{README.relative_to(ROOT)}: add a row for {missing}"


def test_every_listed_file_exists():
    files = set(config_files())
    gone = sorted(n for n in listed() if n.endswith((".yaml", ".json")) and n not in files)
    assert not gone, f"{README.relative_to(ROOT)} lists files that are not in config/: {gone}"


def _row(name: str) -> str:
    return next(line for line in README.read_text().splitlines() if line.startswith(f"| `{name}`"))


def test_the_studys_rho_values_are_the_configs():
    study = yaml.safe_load((CONFIG / "testbed_study.yaml").read_text())
    row = _row("testbed_study.yaml")
    rhos = study["sweeps"]["cf_signal_rho"]
    assert ", ".join(f"{r:g}" for r in rhos[:-1]) in row, row
    assert f"and {rhos[-1]:.1f}" in row, row
    assert f"{len(study['seeds'])} seeds" in row


def test_smollm2_names_every_benchmark_it_evaluates():
    smollm2 = yaml.safe_load((CONFIG / "smollm2.yaml").read_text())
    row = _row("smollm2.yaml").lower().replace(" ", "")
    benchmarks = smollm2["evaluate"]["benchmarks"]
    assert all(b.lower() in row for b in benchmarks), (benchmarks, row)
