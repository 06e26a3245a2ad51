"""What an evaluation summary records about where its numbers come from: the data file's
sha256, the code's git revision, the graders and their versions. Nothing here imports torch."""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # gc2po/

# Our graders' source files per task: their hash is "our grader's version".
GRADER_SOURCES = {
    "testbed": ("testbed/oracle.py", "core/segment.py"),
    "benchmark": ("evaluation/graders.py", "evaluation/sandbox.py", "data/benchmarks.py"),
}
GRADER_NAMES = {"testbed": "testbed oracle", "math": "math-verify", "choice": "choice letter", "label": "FOLIO label",
                "none_answer": "no-answer phrase", "code": "HumanEval execution"}


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def records_sha256(records: list[dict]) -> str:
    """sha256 of the records as JSON lines (what was evaluated, when it did not come from one file)."""
    return hashlib.sha256("".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()).hexdigest()


def data_provenance(path: str | Path | None, records: list[dict], source: str | None = None) -> dict:
    """``{"path", "sha256", "hashed"}``: the file's sha256 when the records came from one file,
    else the sha256 of the normalised records (a folder, the Hub, generated problems)."""
    if path is not None and Path(path).is_file():
        return {"path": str(path), "sha256": file_sha256(path), "hashed": "file"}
    return {"path": str(path) if path is not None else source, "sha256": records_sha256(records),
            "hashed": "normalised records"}


@cache
def git_revision() -> dict:
    """``{"revision", "dirty"}`` of the checkout the gc2po package runs from (None outside git)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"revision": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return {"revision": None, "dirty": None}
    return {"revision": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@cache
def grader_source_hash(task: str) -> str:
    digest = hashlib.sha256()
    for relative in GRADER_SOURCES[task]:
        digest.update((PACKAGE_DIR / relative).read_bytes())
    return digest.hexdigest()[:12]


def grader_provenance(task: str, records: list[dict]) -> tuple[str, dict]:
    """(grader names, versions) used for ``records``: our graders' source hash, and
    math-verify's version where it grades."""
    if task == "testbed":
        kinds = ["testbed"]
    else:
        kinds = sorted({r.get("meta", {}).get("grader", "math") for r in records})
    versions = {"gc2po-graders": grader_source_hash("testbed" if task == "testbed" else "benchmark")}
    if "math" in kinds:
        versions["math-verify"] = package_version("math-verify")
    return ", ".join(GRADER_NAMES.get(k, k) for k in kinds), versions


def code_provenance() -> dict:
    return {"gc2po": package_version("gc2po"), **git_revision()}
