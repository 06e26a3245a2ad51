"""The workflow config checked once, before any job: its schema, its base models
(``gc2po.workflow.base_models``), the jobs' resources (``gc2po.workflow.resources``), every
training job's resolved ``GC2POConfig`` and launcher (``gc2po.workflow.plan.validate``): what
``gc2po plan`` needs (``check_plannable``); then that each job fits its GPU
(``gc2po.workflow.memory_check``) and what the rules wire beyond the jobs
(``gc2po.workflow.report_plan.check``). It returns the runs' display names, the methods' roles
and sweeps (``gc2po.workflow.method_facts``) and the lines naming the base models the memory plan
leaves out, which the rules read and print.

Checking builds a ``GC2POConfig`` per distinct job, which imports TRL and torch: seconds. The
result is a pure function of the config, the schema, this package's source, the library versions
and where each base model's shape is found (a ``config.json`` that arrives in the Hugging Face
cache changes it), so it is memoised under that key in the working directory's ``.snakemake/``;
an unchanged rerun (a no-op ``snakemake``) reads the display names back and imports neither.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import gc2po
from gc2po.workflow.config_schema import DEFAULT_FILE, SCHEMA, file_setting, locate

CACHE_FILE = Path(".snakemake") / "gc2po" / "config_check.json"
RESULT_KEYS = ("display_names", "methods", "measure_splits", "warnings", "memory_notes")
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
            where = file_setting(files, (*keys, field)) or " ".join(files)
            warnings.append(
                f"{where}: {'.'.join((*keys, field))}: method {method!r} computes no "
                f"counterfactual signal and never reads {field}: the setting changes nothing"
            )
    return warnings


def shape_sources(config: dict) -> list[str] | None:
    """Where each base model's shape is found (``gc2po.workflow.model_shapes``), None for a
    config too malformed to say (the check then refuses it and nothing is stored)."""
    from gc2po.workflow.memory_check import shapes

    try:
        return [f"{label}: {found.source}" for label, found in shapes(config).items()]
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def check_key(config: dict, schema: Path) -> str:
    """sha256 of what the check depends on: the config, the schema, every source file of the
    package (its methods, config fields, validators), the libraries' versions and where the
    base models' shapes are found."""
    digest = hashlib.sha256()
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    digest.update(json.dumps(shape_sources(config)).encode())
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


def check_plannable(
    config: dict, files: list[str] | None, schema: Path = SCHEMA, where: str | None = None
) -> None:
    """What ``gc2po plan`` needs checked before it plans: the schema, the base models, the
    resources and every training job (ValueError, one line naming the file or config, and the
    key). ``where``: how job errors name the config (default: its files)."""
    from gc2po.workflow import base_models, plan, resources
    from gc2po.workflow.config_schema import DEFAULT_FILE, check_schema

    check_schema(config, files, schema)
    base_models.check(config, files)
    where = where or " ".join(files or [DEFAULT_FILE])
    try:
        plan.validate(config, where=where)
    except ValueError as err:  # named by the file that sets the key, where the files are known
        raise ValueError(locate(str(err), config, files) if files else str(err)) from err
    resources.check(config, files)


def checked(
    config: dict, files: list[str] | None, schema: Path = SCHEMA, cache: Path = CACHE_FILE
) -> dict:
    """Check ``config`` (ValueError naming the file and the key when it is bad) and return
    ``{"display_names": run label -> display name, "methods": method_facts(), "measure_splits":
    the testbed splits the mechanism measures read, "memory_notes": a line per base model the
    memory plan leaves out, "warnings": settings that change nothing}``; an unchanged config,
    schema, package, libraries and shapes reuse the last result (so a rerun imports neither the
    registry nor the testbed)."""
    from gc2po.testbed.mechanism import MEASURE_SPLITS
    from gc2po.workflow import memory_check, plan, report_plan
    from gc2po.workflow.method_facts import method_facts

    key = check_key(config, schema)
    try:
        stored = json.loads(cache.read_text())
        if stored.get("key") == key and set(RESULT_KEYS) <= set(stored):
            return {k: stored[k] for k in RESULT_KEYS}
    except (OSError, ValueError, AttributeError):
        pass  # no usable record: check
    check_plannable(config, files, schema, where=f"config {config.get('name')!r}")
    facts = method_facts()
    try:
        # a job the memory plan says will not fit its GPU (train.gpu_memory_gib) is refused here,
        # not after it waited in a queue and died out of memory (train.ignore_memory_plan lets it)
        memory_check.check(config, where=f"config {config['name']!r}")
        report_plan.check(config, facts, MEASURE_SPLITS)
    except ValueError as err:  # named by the file that sets the key, where the files are known
        raise ValueError(locate(str(err), config, files) if files else str(err)) from err
    result = {
        "display_names": plan.display_names(config),
        "methods": facts,
        "measure_splits": list(MEASURE_SPLITS),
        "warnings": unread_settings(config, files or [DEFAULT_FILE]),
        "memory_notes": memory_check.not_planned_lines(config),
    }
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".tmp")
    partial.write_text(json.dumps({"key": key, **result}, indent=1))
    partial.replace(cache)  # a concurrent reader sees the old record or the new one, whole
    return result
