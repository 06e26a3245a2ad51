"""The README's map of the code is true: every ``gc2po.<...>`` name it writes in backticks (the
method-in-code table, the package map, the how-tos) imports, as a module or as a name defined in
one, and every file path of the package it names exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# a dotted name (not a file name such as gc2po/methods/gc2po.py or workflow/envs/gc2po.yaml)
DOTTED = re.compile(r"`[^`]*?(?<![/\w-])(gc2po(?:\.\w+)+)(?![\w/])")
FILE_SUFFIXES = (".py", ".yaml", ".yml", ".json")
PATH = re.compile(r"(?<![\w./])(gc2po/[\w/]+\.(?:py|json|yaml))\b")


def resolves(dotted: str) -> bool:
    """The longest importable module prefix, then attributes for the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_every_dotted_name_in_the_readme_imports():
    names = sorted({name for name in DOTTED.findall(README) if not name.endswith(FILE_SUFFIXES)})
    assert len(names) > 20  # the map and the method table are there
    missing = [name for name in names if not resolves(name)]
    assert not missing, f"README names that do not import: {missing}"


def test_every_package_path_in_the_readme_exists():
    paths = sorted(set(PATH.findall(README)))
    assert paths
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing, f"README paths that do not exist: {missing}"


def test_every_module_of_the_package_map_exists():
    """The layer table names modules by their short name in the row of their package(s)."""
    table = README.split("### The package, layer by layer", 1)[1].split("\n\n", 2)[2]
    rows = [line for line in table.splitlines() if line.startswith("| `gc2po.")]
    assert len(rows) == 7
    missing = []
    for row in rows:
        packages_cell, modules_cell = row.split("|")[1:3]
        packages = re.findall(r"`(gc2po\.\w+)`", packages_cell)
        for short in re.findall(r"`([a-z_]+)`", modules_cell):
            if not any(resolves(f"{package}.{short}") for package in packages):
                missing.append((packages, short))
    assert not missing, f"modules the package map names that do not exist: {missing}"
