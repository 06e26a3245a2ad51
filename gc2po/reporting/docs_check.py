"""Docs tables against the workflow outputs they name.

A table in a Markdown page is *bound* to a results file when the line that introduces it (the
last non-blank line before the table: a heading or a sentence) names, in backticks, one file
``results/<name>/tables/<table>.md``. :func:`check_page` compares each bound table, row by row,
with the table in that file (cells compared with their surrounding spaces stripped), so a number
pasted into the docs cannot drift from the output that produced it. A file holding several
tables (one per split, say) binds its N-th with ``results/<name>/tables/<table>.md#N`` (1-based;
without it, the first).

A page may pin the machine its numbers came from, with a line ``<!-- machine: <digest> -->``
(:func:`machine_digest` of the evaluation summaries' ``machine`` field) before the bound tables:
numbers are byte-identical only between equal fingerprints (docs/evaluation.md), so where
the results were made on another machine only the tables' shape (rows, columns and the first
column's labels) is compared, and the report says so.

A bound file that is not there is reported as MISSING (not as a difference), with the config
that writes it: the files of ``config/`` whose ``name`` is the ``<name>`` of
``results/<name>/`` (:func:`makers`), and the command that runs the first of them.

Command line: ``python -m gc2po.reporting.docs_check docs/testbed.md [--root DIR ...]``
(``--root``: a folder the ``results/`` paths are relative to, the first holding the file wins;
default the current folder); it prints a line per difference and per missing file, then one
summary line per page, and exits 1 on any difference, 2 when nothing differs but a bound file is
missing (nothing to compare), 0 when every bound table equals its file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

RESULTS_FILE = re.compile(r"`(results/[^`\s#]+/tables/[^`\s#]+\.md)(?:#(\d+))?`")
MACHINE_PIN = re.compile(r"<!--\s*machine:\s*([0-9a-f]{12,64})\s*-->")
# what decides a machine's bytes; cpu_count, thread counts and the env echo are left out of the
# digest only where they are implied by these (the fingerprint's own docstring says which)
DIGEST_FIELDS = (
    "cpu",
    "cpu_id",
    "architecture",
    "cpu_flags",
    "torch_cpu_capability",
    "torch_threads",
    "env",
    "versions",
    "packages",
    "kernels",
)


@dataclass(frozen=True)
class BoundTable:
    """A docs table: the results file it names, its first line number (1-based), its rows
    (cells stripped), the machine digest pinned above it (None: not pinned) and which of the
    file's tables it is (1-based)."""

    results_file: str
    line: int
    rows: tuple[tuple[str, ...], ...]
    machine: str | None
    index: int = 1


def table_rows(lines: list[str]) -> tuple[tuple[str, ...], ...]:
    """The rows of a Markdown table's lines (``| a | b |``), the separator row dropped."""
    rows = []
    for line in lines:
        cells = tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
        if all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
            continue
        rows.append(cells)
    return tuple(rows)


def table_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(first, past-the-last) line index of every Markdown table (a run of lines starting
    with ``|``)."""
    spans, index = [], 0
    while index < len(lines):
        if not lines[index].lstrip().startswith("|"):
            index += 1
            continue
        start = index
        while index < len(lines) and lines[index].lstrip().startswith("|"):
            index += 1
        spans.append((start, index))
    return spans


def bound_tables(text: str) -> list[BoundTable]:
    """Every table of a page whose introducing line names exactly one results table file."""
    lines = text.splitlines()
    pinned, machine = [], None  # the machine pinned at or above each line
    for line in lines:
        pin = MACHINE_PIN.search(line)
        machine = pin.group(1) if pin else machine
        pinned.append(machine)
    found = []
    for start, end in table_spans(lines):
        before = next((line for line in reversed(lines[:start]) if line.strip()), "")
        named = RESULTS_FILE.findall(before)
        if len(named) == 1:
            path, number = named[0]
            rows = table_rows(lines[start:end])
            machine = pinned[start - 1] if start else None
            found.append(BoundTable(path, start + 1, rows, machine, int(number or 1)))
    return found


def file_rows(path: Path, index: int = 1) -> tuple[tuple[str, ...], ...]:
    """The rows of the ``index``-th table (1-based) of a results Markdown file."""
    lines = path.read_text().splitlines()
    tables = [table_rows(lines[start:end]) for start, end in table_spans(lines)]
    if not tables:
        raise ValueError(f"{path}: no Markdown table")
    if index > len(tables):
        raise ValueError(f"{path}: no table {index} (it has {len(tables)})")
    return tables[index - 1]


def machine_digest(fingerprint: dict) -> str:
    """A short digest of the fields of a machine fingerprint that decide the bytes."""
    kept = {key: fingerprint.get(key) for key in DIGEST_FIELDS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def results_machine(results_dir: Path) -> str | None:
    """The machine digest of a results folder's evaluation summaries (None: no summary; a
    ValueError when two summaries disagree)."""
    digests = {
        machine_digest(json.loads(path.read_text())["machine"])
        for path in sorted(results_dir.glob("eval/**/*.summary.json"))
        if "machine" in json.loads(path.read_text())
    }
    if len(digests) > 1:
        raise ValueError(f"{results_dir}: evaluation summaries from {len(digests)} machines")
    return digests.pop() if digests else None


def shape(rows) -> tuple:
    return tuple(len(row) for row in rows), tuple(row[0] for row in rows)


@dataclass(frozen=True)
class Maker:
    """A config file that writes ``results/<name>/``, the command that runs it, and whether it
    is complete (runs alone) or an overlay on the default."""

    file: str
    command: str
    complete: bool


# the workflow's schema, read as data: a file setting all its required keys is a complete config;
# one that does not is an overlay, run after config/config.yaml
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "workflow" / "config.schema.yaml"
DEFAULT_CONFIG = "config/config.yaml"


def config_root(page: Path) -> Path:
    """The checkout a page belongs to: the nearest folder above it holding the default config
    (else the current folder)."""
    for folder in page.resolve().parents:
        if (folder / DEFAULT_CONFIG).is_file():
            return folder
    return Path(".")


def declared_tables(config: dict) -> set[str]:
    """The tables a config's ``report`` section names (so that, of several configs sharing a
    results folder, the one that writes a family's table is named for it): ``family_<name>``
    and ``candidates_<name>`` per family, ``<a>_vs_<b>`` per comparison,
    ``dose_response_<method>_<key>`` per dose-response."""
    report = config.get("report") if isinstance(config.get("report"), dict) else {}
    names = set()
    for family in report.get("families") or []:
        names |= {f"family_{family.get('name')}", f"candidates_{family.get('name')}"}
    for pair in report.get("comparisons") or []:
        names.add("_vs_".join(map(str, pair)))
    for dose in report.get("dose_response") or []:
        names.add(f"dose_response_{dose.get('method')}_{dose.get('key')}")
    return names


def makers(results_file: str, root: Path) -> list[Maker]:
    """The config files under ``root/config`` that write ``results_file``
    (``results/<name>/tables/<table>.md``): those whose ``name`` is ``<name>``, narrowed to the
    ones whose report names ``<table>`` where any does; the default first, then the complete
    configs, then the overlays. Each comes with the command that runs it from ``root``."""
    import yaml

    name, table = results_file.split("/")[1], Path(results_file).stem
    required = set(yaml.safe_load(SCHEMA_FILE.read_text())["required"])
    found, declaring = [], []
    for path in sorted((root / "config").glob("**/*.yaml")):
        try:
            config = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError):
            continue  # not a workflow config (an accelerate file) or unreadable: not a maker
        if not isinstance(config, dict) or config.get("name") != name:
            continue
        file = path.relative_to(root).as_posix()
        complete = required <= set(config)
        if file == DEFAULT_CONFIG:
            command = "snakemake --cores 2"
        elif complete:
            command = f"snakemake --cores 2 --configfile {file}"
        else:
            command = f"snakemake --cores 2 --configfile {DEFAULT_CONFIG} {file}"
        found.append(Maker(file, command, complete))
        if table in declared_tables(config):
            declaring.append(found[-1])
    return sorted(declaring or found, key=lambda m: (m.file != DEFAULT_CONFIG, not m.complete))


def missing_line(where: str, results_file: str, roots: list[Path], config_root: Path) -> str:
    """Where a missing results file was looked for, and which config writes it."""
    found = makers(results_file, config_root)
    under = ", ".join(map(str, roots))
    if not found:
        name = results_file.split("/")[1]
        return f"{where}: not under {under}; no file of {config_root / 'config'} has name: {name}"
    others = [maker.file for maker in found[1:]]
    also = f" (or {', '.join(others)})" if others else ""
    return f"{where}: not under {under}; {found[0].file} writes it{also}: {found[0].command}"


@dataclass(frozen=True)
class PageCheck:
    """One page's bound tables, the differences found, the bound files that are missing, and
    notes (tables compared by shape only)."""

    tables: list[BoundTable]
    differences: list[str]
    missing: list[str]
    notes: list[str]


def check_table(
    page: str, table: BoundTable, roots: list[Path], configs: Path = Path(".")
) -> tuple[str, str | None, str | None]:
    """(kind, what or None, a note or None) for one bound table against its results file,
    looked for under each of ``roots`` in turn; kind is ``equal``, ``differs`` or ``missing``
    (``configs``: the checkout whose config/ names the run that makes a missing file)."""
    where = f"{page}:{table.line}: {table.results_file}" + (
        f"#{table.index}" if table.index != 1 else ""
    )
    path = next((r / table.results_file for r in roots if (r / table.results_file).exists()), None)
    if path is None:
        return "missing", missing_line(where, table.results_file, roots, configs), None
    try:
        expected = file_rows(path, table.index)
    except ValueError as err:
        return "differs", f"{where}: {err}", None
    made_on = results_machine(path.parents[1])
    if table.machine is not None and made_on is not None and made_on != table.machine:
        note = f"{where}: made on machine {made_on}, the page pins {table.machine}: shape only"
        if shape(expected) != shape(table.rows):
            return (
                "differs",
                f"{where}: another machine's results, and the rows or columns differ",
                note,
            )
        return "equal", None, note
    for number, (mine, theirs) in enumerate(zip(table.rows, expected), 1):
        if mine != theirs:
            return (
                "differs",
                f"{where}: row {number} is {' | '.join(mine)!r}, the file has "
                + repr(" | ".join(theirs)),
                None,
            )
    if len(table.rows) != len(expected):
        return "differs", f"{where}: {len(table.rows)} rows, the file has {len(expected)}", None
    return "equal", None, None


def check_page(page: Path, root: Path | list[Path]) -> PageCheck:
    """One page against the results under ``root`` (one folder or several, searched in
    order)."""
    roots = root if isinstance(root, list) else [root]
    tables = bound_tables(page.read_text())
    configs = config_root(page)
    checked = [check_table(str(page), table, roots, configs) for table in tables]
    return PageCheck(
        tables,
        differences=[what for kind, what, _ in checked if kind == "differs"],
        missing=[what for kind, what, _ in checked if kind == "missing"],
        notes=[note for _, _, note in checked if note],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path, help="Markdown pages to check")
    parser.add_argument(
        "--root", type=Path, action="append", help="where results/ lies (repeatable; default .)"
    )
    args = parser.parse_args(argv)
    differs = missing = False
    for page in args.pages:
        if not page.is_file():
            parser.error(f"{page}: no such page")
        found = check_page(page, args.root or [Path(".")])
        for line in found.notes:
            print(f"note: {line}")
        for line in found.differences:
            print(f"DIFFERS: {line}")
        for line in found.missing:
            print(f"MISSING: {line}")
        print(
            f"{page}: {len(found.tables)} bound tables, {len(found.differences)} differ, "
            f"{len(found.missing)} missing"
        )
        differs |= bool(found.differences)
        missing |= bool(found.missing)
    return 1 if differs else 2 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
