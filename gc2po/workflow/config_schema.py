"""The workflow config against its schema (``config.schema.yaml``, package data beside this
module), refused in one line.

Snakemake's own ``validate`` prints the whole schema (hundreds of lines) under a one-line
reason; ``check_schema`` raises a ValueError that names the key and the fix instead. The
commonest mistakes get their own message: an overlay given alone (``--configfile my.yaml``
replaces the default, it does not change it) and an earlier version's spelling (``mode:
benchmarks``, ``train.task``), named with the file that sets it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from gc2po.errors import did_you_mean

SCHEMA = Path(__file__).with_name("config.schema.yaml")  # package data: ships with the package
DEFAULT_FILE = "config/config.yaml"  # the embedded default, as the Snakefile names it
# relative to the working folder the workflow runs in (Snakemake's -d), never to the package
DEFAULT_PATH = Path(DEFAULT_FILE)


def _key(path) -> str:
    """train.trainer.learning_rate, seeds[1]; "the config" for the top level."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "the config"


def _shown(path) -> str:
    """A config file as the user would type it: relative to the working folder when inside it."""
    relative = os.path.relpath(path)
    return str(path) if relative.startswith("..") else relative


def _short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(error) -> str:
    """What the schema asked for, in a few words (never the instance or schema in full)."""
    rule, want, got = error.validator, error.validator_value, error.instance
    if rule == "required":
        missing = [k for k in want if isinstance(got, dict) and k not in got]
        return f"missing key(s) {missing}"
    if rule == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(k for k in got if k not in known)
        hint = "".join(did_you_mean(k, known) for k in extra[:1])  # the first key's closest
        return f"unknown key(s) {extra}{hint}" + (f"; valid: {known}" if known else "")
    words = {
        "type": lambda: f"must be {want if isinstance(want, str) else ' or '.join(want)}",
        "enum": lambda: f"must be one of {want}",
        "minimum": lambda: f"must be >= {want}",
        "maximum": lambda: f"must be <= {want}",
        "exclusiveMinimum": lambda: f"must be > {want}",
        "exclusiveMaximum": lambda: f"must be < {want}",
        "minItems": lambda: f"needs at least {want} item(s)",
        "maxItems": lambda: f"takes at most {want} item(s)",
        "pattern": lambda: f"must match {want!r}",
        "uniqueItems": lambda: "must not repeat an item",
    }
    reason = words[rule]() if rule in words else f"fails {rule!r} {_short(want)}"
    hint = did_you_mean(got, want) if rule == "enum" else ""  # a misspelt method or name
    return f"{reason}, got {_short(got)}{hint}"


def setting_file(files: list[str] | None, keys: tuple[str, ...]) -> str:
    """The last of ``files`` (default: the embedded default) that sets ``keys`` (its value is the
    one that counts), as the user would type it: named at the head of a one-line error; the
    default's file when none does."""
    return file_setting(files or [DEFAULT_PATH], keys) or DEFAULT_FILE


def file_setting(files: list[str], keys: tuple[str, ...]) -> str | None:
    """The last of ``files`` that sets ``keys`` (shown as the user typed it), None when none
    does (the value is a default)."""
    found = None
    for file in files:
        try:
            node = yaml.safe_load(Path(file).read_text())
        except (OSError, yaml.YAMLError):
            continue  # unreadable files were refused when the config was loaded
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            found = _shown(file)
    return found


# --- a later check's error, located in the files -----------------------------------------------
#
# The checks after the schema (every job's GC2POConfig, the memory plan, the report's wiring)
# name what is wrong by a key: a dotted path (``report.comparisons``), a trainer key
# (``trainer.reward_weights``) or a bare trainer field (``vllm_gpu_memory_utilization``), often
# after the job it concerns. :func:`locate` puts the file that sets that key and its full path in
# front, so that every config error names both.

OLD_WHERE = re.compile(r"^config '[^']*': ")  # what the checks prefix: the config's name
JOB = re.compile(r"^training job (?P<base>[^/\s]+)/(?P<run>[^\s:(]+): (?:run config: )?")
TOKEN = re.compile(r"^(?P<token>[A-Za-z_][\w.<>\[\]-]*?)(?::\s|\s)")
TRAINER_FIELDS = Path(__file__).resolve().parents[1] / "training" / "config_fields.json"


def _trainer_keys(config: dict, field: str, run: str | None) -> tuple[str, ...]:
    """Where a job's value of a trainer field comes from: its variant's trainer, its method's
    ``per_method``, or the shared ``train.trainer`` (the first that sets it; the shared section
    when none does)."""
    variants = config.get("variants") or {}
    per_method = config["train"].get("per_method") or {}
    candidates = []
    if run is not None and run in variants:
        candidates.append(("variants", run, "trainer", field))
        candidates.append(("train", "per_method", variants[run].get("method"), field))
    elif run is not None:  # a method's label, or a sweep's <method>_<key>_<value>
        methods = [m for m in per_method if run == m or run.startswith(f"{m}_")]
        candidates += [("train", "per_method", m, field) for m in sorted(methods, key=len)[::-1]]
    candidates.append(("train", "trainer", field))
    for keys in candidates:
        node = config
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return keys
    return ("train", "trainer", field)


def _keys_of(token: str, config: dict, run: str | None) -> tuple[str, ...] | None:
    """The config keys a message's first word names, or None when it names none."""
    fields = json.loads(TRAINER_FIELDS.read_text())
    if token.startswith("trainer.") and token[len("trainer.") :] in fields:
        return _trainer_keys(config, token[len("trainer.") :], run)
    if token in fields and token not in config:
        return _trainer_keys(config, token, run)
    keys = tuple(part for part in re.split(r"\.|\[\d+\]", token) if part)
    return keys if keys and keys[0] in config else None


def locate(message: str, config: dict, files: list[str]) -> str:
    """A check's error as one line that starts with the file setting the key it names and the
    key's full path (``my.yaml: train.trainer.vllm_gpu_memory_utilization: must be in (0, 1),
    got 1.5``); one naming no key starts with the files given."""
    given = " ".join(_shown(f) for f in files)
    rest = OLD_WHERE.sub("", message, count=1)
    job = JOB.match(rest)
    body = rest[job.end() :] if job else rest
    token = TOKEN.match(body)
    keys = (
        _keys_of(token["token"].rstrip(":"), config, job["run"] if job else None) if token else None
    )
    if keys is None:
        return f"{given}: {rest}"
    what = body[token.end() :]
    after = f" (training job {job['base']}/{job['run']})" if job else ""
    # a config path stays as the check wrote it (``report.dose_response[0]``); a trainer field
    # becomes the whole path that sets it
    written = token["token"].rstrip(":")
    path = written if written.split(".")[0].split("[")[0] in config else ".".join(keys)
    return f"{file_setting(files, keys) or given}: {path}: {what}{after}"


# where the workflow writes: a file there given to --configfile is a target placed after it
OUTPUT_FOLDERS = ("results", "resources", "logs")


def check_config_files(files: list[str] | None) -> None:
    """A workflow output given as a config file is a target written after ``--configfile``
    (which takes every word after it): one line saying where it goes. (A target that does not
    exist yet fails in Snakemake itself, before the workflow is read.)"""
    for file in files or []:
        path = Path(os.path.relpath(Path(file).resolve()))
        if path.parts[:1] and path.parts[0] in OUTPUT_FOLDERS:
            raise ValueError(
                f"{_shown(file)} is not a config file: put targets before --configfile, which "
                f"reads every word after it as a config file (snakemake -n --cores 2 {path} "
                f"--configfile {DEFAULT_FILE})"
            )


def check_old_spellings(config: dict, files: list[str] | None = None) -> None:
    """An earlier version's spelling of the task (gc2po.data.tasks) fails in one line naming the
    key, the file that sets it and the value that replaces it."""
    from gc2po.data.tasks import OLD_SPELLINGS, check_task

    files = list(files or [DEFAULT_PATH])
    train = config.get("train")
    if isinstance(train, dict) and "task" in train:
        task = train["task"]
        new = OLD_SPELLINGS.get(task, task) if isinstance(task, str) else task
        where = setting_file(files, ("train", "task"))
        raise ValueError(
            f"{where}: train.task: {task!r} is now set by mode: remove train.task and "
            f"set mode: {new}"
        )
    mode = config.get("mode")
    if isinstance(mode, str) and mode in OLD_SPELLINGS:
        check_task(mode, f"{setting_file(files, ('mode',))}: mode")


def load_schema(schema: Path = SCHEMA) -> dict:
    """The schema, its method names (``$defs.method``) those of the registry: a new method's
    file is all a config needs to name it."""
    from gc2po.methods import METHODS

    loaded = yaml.safe_load(schema.read_text())
    loaded["$defs"]["method"]["enum"] = sorted(METHODS)
    return loaded


def check_schema(config: dict, files: list[str] | None = None, schema: Path = SCHEMA) -> None:
    """ValueError with one line naming the key (the first problem found) and what it needs.

    ``files``: the config files as given (``--configfile``), named in the message."""
    import jsonschema

    check_config_files(files)
    check_old_spellings(config, files)

    validator = jsonschema.Draft202012Validator(load_schema(schema))
    errors = sorted(
        validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.path)))
    )
    if not errors:
        return
    given = " ".join(_shown(f) for f in files) if files else DEFAULT_FILE
    missing = [k for k in validator.schema.get("required", []) if k not in config]
    layered = any(Path(f).resolve() == DEFAULT_PATH.resolve() for f in files or [DEFAULT_PATH])
    if missing and not layered:
        raise ValueError(
            f"{given}: a config given alone must be complete (missing: {', '.join(missing)}); "
            f"to change a few keys, pass {DEFAULT_FILE} first: --configfile {DEFAULT_FILE} {given}"
        )
    error = jsonschema.exceptions.best_match(errors)
    raise ValueError(f"{given}: {_key(error.absolute_path)}: {_reason(error)}")
