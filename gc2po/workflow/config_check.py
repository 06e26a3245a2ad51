"""The workflow config checked once, before any job: its schema, every training job's resolved
``GC2POConfig`` and launcher (``gc2po.workflow.plan.validate``), that each job fits its GPU
(``gc2po.workflow.memory_check``), what the rules wire beyond the
jobs (``gc2po.workflow.report_plan.check``), and the runs' display names and the methods' roles
and sweeps (``gc2po.workflow.method_facts``), which the rules read.

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
from gc2po.workflow.config_schema import DEFAULT_FILE, SCHEMA, locate, setting_file

CACHE_FILE = Path(".snakemake") / "gc2po" / "config_check.json"
RESULT_KEYS = ("display_names", "methods", "measure_splits", "warnings")
LIBRARIES = ("torch", "transformers", "trl", "accelerate", "jsonschema")


def unread_settings(config: dict, files: list[str]) -> list[str]:
    """A warning for each setting given to one method (``train.per_method.<method>``, a
    variant's ``trainer``) that the method never reads (``gc2po.methods.base.Method.unread``):
    accepted, it would change nothing."""
    from gc2po.methods import get_method

    given = [
        (("train", "per_method", method), method, settings)
        for method, settings in (config["train"].get("per_method") or {}).items()
    ] + [
        (("variants", label, "trainer"), variant["method"], variant.get("trainer") or {})
        for label, variant in (config.get("variants") or {}).items()
    ]
    warnings = []
    for keys, method, settings in given:
        for field in get_method(method).unread(settings or {}):
            where = setting_file(files, (*keys, field)) or " ".join(files)
            warnings.append(
                f"{where}: {'.'.join((*keys, field))}: method {method!r} computes no "
                f"counterfactual signal and never reads {field}: the setting changes nothing"
            )
    return warnings


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


def checked(
    config: dict, files: list[str] | None, schema: Path = SCHEMA, cache: Path = CACHE_FILE
) -> dict:
    """Check ``config`` (ValueError naming the file and the key when it is bad) and return
    ``{"display_names": run label -> display name, "methods": method_facts(), "measure_splits":
    the testbed splits the mechanism measures read, "warnings": settings that change nothing}``;
    an unchanged config, schema, package and libraries reuse the last result (so a rerun imports
    neither the registry nor the testbed)."""
    from gc2po.testbed.mechanism import MEASURE_SPLITS
    from gc2po.workflow import memory_check, plan, report_plan
    from gc2po.workflow.config_schema import check_schema
    from gc2po.workflow.method_facts import method_facts

    key = check_key(config, schema)
    try:
        stored = json.loads(cache.read_text())
        if stored.get("key") == key and set(RESULT_KEYS) <= set(stored):
            return {k: stored[k] for k in RESULT_KEYS}
    except (OSError, ValueError, AttributeError):
        pass  # no usable record: check
    check_schema(config, files, schema)
    facts = method_facts()
    try:
        plan.validate(config, where=f"config {config['name']!r}")
        # a job the memory plan says will not fit its GPU (train.gpu_memory_gib) is refused here,
        # not after it waited in a queue and died out of memory (train.ignore_memory_plan lets it)
        memory_check.check(config, plan.training_jobs(config), where=f"config {config['name']!r}")
        report_plan.check(config, facts, MEASURE_SPLITS)
    except ValueError as err:  # named by the file that sets the key, where the files are known
        raise ValueError(locate(str(err), config, files) if files else str(err)) from err
    result = {
        "display_names": plan.display_names(config),
        "methods": facts,
        "measure_splits": list(MEASURE_SPLITS),
        "warnings": unread_settings(config, files or [DEFAULT_FILE]),
    }
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".tmp")
    partial.write_text(json.dumps({"key": key, **result}, indent=1))
    partial.replace(cache)  # a concurrent reader sees the old record or the new one, whole
    return result
