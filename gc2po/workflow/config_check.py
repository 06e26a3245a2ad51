"""The workflow config checked once, before any job: its schema, every training job's resolved
``GC2POConfig`` and launcher (``gc2po.workflow.plan.validate``), and the runs' display names.

Checking builds a ``GC2POConfig`` per distinct job, which imports TRL and torch: seconds. The
result is a pure function of the config, the schema, this package's source and the library
versions, so it is memoised under that key in the working directory's ``.snakemake/``; an
unchanged rerun (a no-op ``snakemake``) reads the display names back and imports neither.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import gc2po

CACHE_FILE = Path(".snakemake") / "gc2po" / "config_check.json"
LIBRARIES = ("torch", "transformers", "trl", "accelerate", "jsonschema")


def check_key(config: dict, schema: Path) -> str:
    """sha256 of what the check depends on: the config, the schema, every source file of the
    package (its methods, config fields, validators) and the libraries' versions."""
    digest = hashlib.sha256()
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(Path(schema).read_bytes())
    package = Path(gc2po.__file__).parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json", ".yaml") and path.is_file():
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    for library in LIBRARIES:
        try:
            digest.update(f"{library}=={metadata.version(library)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{library} absent".encode())
    return digest.hexdigest()


def checked_display_names(
    config: dict, files: list[str] | None, schema: Path, cache: Path = CACHE_FILE
) -> dict[str, str]:
    """Check ``config`` (ValueError naming the key when it is bad) and return run label ->
    display name; an unchanged config, schema, package and libraries reuse the last result."""
    from gc2po.workflow import plan
    from gc2po.workflow.config_schema import check_schema

    key = check_key(config, schema)
    try:
        stored = json.loads(cache.read_text())
        if stored.get("key") == key:
            return stored["display_names"]
    except (OSError, ValueError, AttributeError):
        pass  # no usable record: check
    check_schema(config, files, schema)
    plan.validate(config, where=f"config {config['name']!r}")
    names = plan.display_names(config)
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".tmp")
    partial.write_text(json.dumps({"key": key, "display_names": names}, indent=1))
    partial.replace(cache)  # a concurrent reader sees the old record or the new one, whole
    return names
