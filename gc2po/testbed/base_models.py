"""Shipped base models of the testbed: a warm start's files kept in the repository
(``data/base_models/<name>/``) with the recipe that made them and each file's sha256, so that
the default and the studies start from the same bytes on every CPU.

Why: the warm start is 3,008 AdamW steps of a tiny model whose float sums round differently on
different CPUs (AVX2 or AVX-512 kernels, thread splits), and the runs drift apart: the same
recipe gave uncued test_id pass@1 of 56% on one machine and 75% on another. The paper's base
models come from the Hub; the testbed's come from here.

A recipe is everything that decides a warm start's bytes on a given CPU: the warm start's
settings (``WarmStartConfig``, thread count and copy form included), the sha256 of the train
split it reads, and ``RECIPE_VERSION`` (raised whenever the warm start's code changes what a
recipe trains). Its hash names the recipe; the workflow's ``warm_start`` rule installs the
shipped artifact whose recipe hash matches (each file checked against its sha256 first) and
trains only a recipe no artifact has (``install_or_none``). ``pack`` turns a trained model
folder into an artifact; ``python -m gc2po.testbed.base_models`` verifies or packs from the
command line.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path

from gc2po.testbed.warmstart import WarmStartConfig

RECIPE_VERSION = 1  # raise when the warm start's code changes what a recipe trains
ARTIFACT_FILE = "artifact.json"  # in an artifact folder: the recipe, its hash, the checksums
PROVENANCE_FILE = "base_model.json"  # in an installed or trained model folder: where it came from
CHUNK = 1 << 20


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def recipe(config: WarmStartConfig, train_path: str | Path) -> dict:
    """The recipe of a warm start of ``config`` on the train split file ``train_path``."""
    return {
        "recipe_version": RECIPE_VERSION,
        "warm_start": canonical(config),
        "train_sha256": file_sha256(train_path),
    }


def canonical(config: WarmStartConfig) -> dict:
    """The warm start's settings with each float field as a float (``epochs: 32`` and
    ``epochs: 32.0`` are one recipe)."""
    values = dataclasses.asdict(config)
    for field in dataclasses.fields(config):
        if isinstance(field.default, float):
            values[field.name] = float(values[field.name])
    return values


def recipe_hash(recipe_: dict) -> str:
    """The first 16 hex digits of the sha256 of the recipe as canonical JSON (sorted keys)."""
    text = json.dumps(recipe_, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_artifact(folder: str | Path) -> dict:
    """An artifact folder's ``artifact.json``; a missing or malformed one fails naming it."""
    path = Path(folder) / ARTIFACT_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a base-model artifact ({err})") from err
    for key in ("recipe", "recipe_hash", "files"):
        if key not in record:
            raise ValueError(f"{path}: missing key {key!r}")
    return record


def verify(folder: str | Path) -> dict:
    """Check an artifact: its recipe hashes to its ``recipe_hash`` and every listed file exists
    with its sha256. Returns the artifact record; the first mismatch fails naming the file."""
    folder = Path(folder)
    record = read_artifact(folder)
    if recipe_hash(record["recipe"]) != record["recipe_hash"]:
        raise ValueError(
            f"{folder / ARTIFACT_FILE}: recipe_hash {record['recipe_hash']} is not the hash of "
            f"its recipe ({recipe_hash(record['recipe'])})"
        )
    for name, expected in sorted(record["files"].items()):
        path = folder / name
        if not path.is_file():
            raise ValueError(f"{path}: listed in {ARTIFACT_FILE} but missing")
        actual = file_sha256(path)
        if actual != expected:
            raise ValueError(f"{path}: sha256 {actual} where {ARTIFACT_FILE} lists {expected}")
    return record


def find(root: str | Path, hash_: str) -> Path | None:
    """The artifact folder under ``root`` whose recipe hash is ``hash_`` (None: none)."""
    root = Path(root)
    if not root.is_dir():
        return None
    for path in sorted(root.glob(f"*/{ARTIFACT_FILE}")):
        if read_artifact(path.parent)["recipe_hash"] == hash_:
            return path.parent
    return None


def install(folder: str | Path, out_dir: str | Path) -> dict:
    """Verify the artifact ``folder`` and copy its files to ``out_dir`` with a provenance file;
    the copies are checked again after copying. Returns the provenance."""
    folder, out_dir = Path(folder), Path(out_dir)
    record = verify(folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, expected in sorted(record["files"].items()):
        target = out_dir / name
        shutil.copyfile(folder / name, target)
        if file_sha256(target) != expected:
            raise OSError(f"{target}: copy differs from {folder / name}")
    provenance = {
        "source": "shipped",
        "artifact": folder.name,
        "recipe_hash": record["recipe_hash"],
        "recipe": record["recipe"],
        "files": record["files"],
    }
    (out_dir / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")
    return provenance


def install_or_none(
    root: str | Path, config: WarmStartConfig, train_path: str | Path, out_dir: str | Path
) -> dict | None:
    """Install the shipped artifact of this recipe into ``out_dir``; None when none is shipped
    (the caller then trains it)."""
    wanted = recipe(config, train_path)
    folder = find(root, recipe_hash(wanted))
    return None if folder is None else install(folder, out_dir)


def trained_provenance(config: WarmStartConfig, train_path: str | Path, out_dir) -> dict:
    """The provenance of a model trained here (written beside its files): its recipe and the
    files' checksums, which match a shipped artifact's only on a CPU that rounds alike."""
    wanted = recipe(config, train_path)
    out_dir = Path(out_dir)
    provenance = {
        "source": "trained",
        "recipe_hash": recipe_hash(wanted),
        "recipe": wanted,
        "files": model_files(out_dir),
    }
    (out_dir / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")
    return provenance


def model_files(folder: str | Path) -> dict[str, str]:
    """File name -> sha256 of a model folder's files (the provenance file and hidden files, such
    as Snakemake's ``.snakemake_timestamp`` of a folder output, left out)."""
    folder = Path(folder)
    return {
        path.name: file_sha256(path)
        for path in sorted(folder.iterdir())
        if path.is_file()
        and path.name not in (PROVENANCE_FILE, ARTIFACT_FILE)
        and not path.name.startswith(".")
    }


def pack(model_dir: str | Path, root: str | Path, name: str) -> Path:
    """Make the artifact ``root/name`` from a trained model folder holding its provenance
    (``base_model.json``, written by the workflow's warm start): its files, their checksums
    and the recipe. Refuses a folder without provenance or an existing artifact."""
    model_dir = Path(model_dir)
    try:
        provenance = json.loads((model_dir / PROVENANCE_FILE).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{model_dir / PROVENANCE_FILE}: no recipe to pack ({err})") from err
    target = Path(root) / name
    if target.exists():
        raise ValueError(f"{target}: already exists; choose another name or remove it first")
    files = model_files(model_dir)
    target.mkdir(parents=True)
    for file in files:
        shutil.copyfile(model_dir / file, target / file)
    record = {
        "recipe_hash": recipe_hash(provenance["recipe"]),
        "recipe": provenance["recipe"],
        "files": files,
    }
    (target / ARTIFACT_FILE).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    verify(target)
    return target


def compare(a: str | Path, b: str | Path) -> list[str]:
    """The files of two model folders whose bytes differ, or that only one holds (empty: the
    same model), the provenance files left out."""
    files_a, files_b = model_files(a), model_files(b)
    return sorted(
        name for name in set(files_a) | set(files_b) if files_a.get(name) != files_b.get(name)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gc2po.testbed.base_models",
        description="Verify the shipped testbed base models, or pack a trained one.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("verify", help="check every artifact's recipe hash and file sha256s")
    check.add_argument("root", nargs="?", default="data/base_models")
    add = sub.add_parser("pack", help="make an artifact from a model folder the workflow wrote")
    add.add_argument("model_dir")
    add.add_argument("name")
    add.add_argument("--root", default="data/base_models")
    same = sub.add_parser("compare", help="say whether two model folders hold the same bytes")
    same.add_argument("a")
    same.add_argument("b")
    ns = parser.parse_args(argv)
    try:
        if ns.command == "verify":
            folders = sorted(p.parent for p in Path(ns.root).glob(f"*/{ARTIFACT_FILE}"))
            if not folders:
                raise ValueError(f"{ns.root}: no artifact ({ARTIFACT_FILE}) below it")
            for folder in folders:
                record = verify(folder)
                print(f"{folder}: recipe {record['recipe_hash']}, {len(record['files'])} files ok")
        elif ns.command == "compare":
            differ = compare(ns.a, ns.b)
            print(
                f"{ns.a} and {ns.b}: "
                + (f"differ in {', '.join(differ)}" if differ else "the same bytes")
            )
            return 1 if differ else 0
        else:
            target = pack(ns.model_dir, ns.root, ns.name)
            print(f"{target}: recipe {read_artifact(target)['recipe_hash']}")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
