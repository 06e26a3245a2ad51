"""The config reference (``docs/config-reference.md``, the workflow keys and the run and eval
configs' keys, and ``docs/config-reference-trainer.md``, the trainer keys), written from the schema
and the trainer's config class, so that a key added later is documented where users look.

    python -m gc2po.workflow.config_reference          # rewrite both pages
    python -m gc2po.workflow.config_reference --check  # exit 1 when a page is stale

Workflow keys come from ``config.schema.yaml`` (each key's ``description`` and, where the code has
one, ``default``), the warm start's from ``WarmStartConfig``'s fields; trainer keys from
``GC2POConfig`` (the fields it adds to TRL's ``GRPOConfig``, with their ``help``), from
``gc2po.training.run_config`` (the TRL defaults every run changes, and the keys set from the run
config) and from TRL's own ``help`` for every other TRL field a shipped config sets (the files of
``config/`` and ``config/examples/``); the keys of ``gc2po train`` and ``gc2po eval`` configs
from ``RUN_KEYS`` and ``EVAL_KEYS``. ``tests/workflow/test_config_reference.py`` fails when a key
has no description, when a shipped config sets a key the page has no row for, or when the
committed page differs from what this writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from gc2po.workflow.config_schema import SCHEMA, load_schema

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "config-reference.md"
TRAINER_PAGE = PAGE.with_name("config-reference-trainer.md")
COMMAND = "python -m gc2po.workflow.config_reference"
# the config files users edit: workflow configs, run configs (gc2po train), eval configs (gc2po
# eval); config/accelerate/ holds accelerate's and DeepSpeed's own formats
SHIPPED = ("config/*.yaml", "config/examples/*.yaml")
# the workflow keys whose values are GC2POConfig fields, and the warm start's fields
TRAINER_PATHS = ("train.trainer", "train.per_method.<label>", "variants.<label>.trainer")
WARM_START_PATH = "testbed.warm_start"


def trl_version() -> str:
    """The installed TRL's version (the pin of pyproject.toml where the package is installed)."""
    return metadata.version("trl")


def trl_reference() -> str:
    """TRL's GRPOConfig reference at the installed release, not at its moving main branch."""
    return f"https://huggingface.co/docs/trl/v{trl_version()}/en/grpo_trainer#trl.GRPOConfig"


@dataclasses.dataclass(frozen=True)
class Key:
    """One workflow config key: its dotted path (``<label>`` for a mapping's own keys, ``[]`` for
    a list's items) and the schema node that describes it."""

    path: str
    node: dict
    required: bool


def schema_keys(schema: dict) -> list[Key]:
    """Every key of the schema, depth first, in the schema's order."""
    keys: list[Key] = []

    def walk(node: dict, prefix: str) -> None:
        required = set(node.get("required", []))
        for name, child in node.get("properties", {}).items():
            path = f"{prefix}.{name}" if prefix else name
            keys.append(Key(path, child, name in required))
            walk(child, path)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("properties"):
            walk(extra, f"{prefix}.<label>")
        items = node.get("items")
        if isinstance(items, dict) and items.get("properties"):
            walk(items, f"{prefix}[]")

    walk(schema, "")
    return keys


def undescribed(schema: dict) -> list[str]:
    """The keys with no ``description`` (each key must say what it means)."""
    return [k.path for k in schema_keys(schema) if not str(k.node.get("description", "")).strip()]


def type_of(node: dict) -> str:
    """A schema node's type in a few words: ``integer >= 1``, ``list of string``, ``method``."""
    if node.get("$ref") == "#/$defs/method":
        return "method name"
    if "enum" in node:
        return "one of " + ", ".join(map(str, node["enum"]))
    kind = node.get("type", "any")
    kinds = [kind] if isinstance(kind, str) else list(kind)
    words = []
    for k in kinds:
        if k == "array":
            items = node.get("items", {})
            inner = type_of(items) if items.get("type") != "object" else "mapping"
            words.append(f"list of {inner}")
        elif k == "object":
            extra = node.get("additionalProperties")
            words.append(
                f"mapping of {type_of(extra)}"
                if isinstance(extra, dict) and "properties" not in extra and extra
                else "mapping"
            )
        else:
            words.append(k)
    text = " or ".join(words)
    bounds = (
        ("minimum", ">="),
        ("exclusiveMinimum", ">"),
        ("maximum", "<="),
        ("exclusiveMaximum", "<"),
    )
    limits = [f"{sign} {node[key]}" for key, sign in bounds if key in node]
    return text + (" " + ", ".join(limits) if limits else "")


def _cell(text) -> str:
    """Markdown table cell: no pipe, no raw angle bracket (read as HTML), one line."""
    text = " ".join(str(text).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _value(value) -> str:
    return f"`{json.dumps(value)}`"


def _default(key: Key) -> str:
    if "default" in key.node:
        return _value(key.node["default"])
    return "required" if key.required else ""


def workflow_tables(schema: dict) -> list[str]:
    """One table per top-level section (the top-level keys first, in one table)."""
    keys = schema_keys(schema)
    header = ["| key | type | default | meaning |", "|---|---|---|---|"]

    def row(key: Key) -> str:
        meaning = _cell(key.node.get("description", ""))
        return f"| `{key.path}` | {type_of(key.node)} | {_default(key)} | {meaning} |"

    lines = ["### Top level", "", *header]
    lines += [row(k) for k in keys if "." not in k.path and "[" not in k.path]
    for top in schema.get("properties", {}):
        nested = [k for k in keys if k.path.startswith((f"{top}.", f"{top}["))]
        if nested:
            rows = [row(k) for k in nested]
            if top == WARM_START_PATH.split(".")[0]:
                at = next(i for i, k in enumerate(nested) if k.path == WARM_START_PATH)
                rows[at + 1 : at + 1] = warm_start_rows()
            lines += ["", f"### `{top}`", "", *header, *rows]
    return lines


def warm_start_rows() -> list[str]:
    """A row per ``WarmStartConfig`` field, under ``testbed.warm_start``."""
    from gc2po.testbed.warmstart import WarmStartConfig

    return [
        f"| `{WARM_START_PATH}.{field.name}` | {type(field.default).__name__} | "
        f"{_value(field.default)} | {_cell(field.metadata.get('help', ''))} |"
        for field in dataclasses.fields(WarmStartConfig)
    ]


# --- the keys the shipped configs set ----------------------------------------------------------


def config_kind(config: dict) -> str:
    """``run`` (a ``gc2po train`` config), ``eval`` (a ``gc2po eval`` config) or ``workflow``."""
    if "train_data" in config and "model" in config:
        return "run"
    if isinstance(config.get("benchmarks"), dict):
        return "eval"
    return "workflow"


def shipped_configs(root: Path = ROOT) -> list[tuple[str, dict]]:
    """(file relative to ``root``, its mapping) of every shipped config file."""
    import yaml

    files = sorted({path for pattern in SHIPPED for path in root.glob(pattern)})
    return [(path.relative_to(root).as_posix(), yaml.safe_load(path.read_text())) for path in files]


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


def workflow_config_keys(config: dict, schema: dict) -> list[tuple[str, str | None]]:
    """(a key the config sets, as written with its labels; the reference row that documents it,
    or None) for every key of a workflow config. Rows: a schema path (``base_models.<label>.
    source``), ``trainer:<field>`` for a trainer section's key, ``testbed.warm_start.<field>``.
    A mapping's own labels (a base model's name, a sweep's key) are values, not keys."""
    found: list[tuple[str, str | None]] = []

    def walk(value, node: dict, shown: str, row: str) -> None:
        if row in TRAINER_PATHS or row == WARM_START_PATH:
            prefix = "trainer:" if row in TRAINER_PATHS else f"{WARM_START_PATH}."
            found.extend((_join(shown, key), f"{prefix}{key}") for key in value or {})
            return
        if isinstance(value, list):
            items = node.get("items")
            if isinstance(items, dict) and items.get("properties"):
                for index, item in enumerate(value):
                    walk(item, items, f"{shown}[{index}]", f"{row}[]")
            return
        if not isinstance(value, dict):
            return
        properties, extra = node.get("properties", {}), node.get("additionalProperties")
        for key, child in value.items():
            if key in properties:
                found.append((_join(shown, key), _join(row, key)))
                walk(child, properties[key], _join(shown, key), _join(row, key))
            elif isinstance(extra, dict) and extra:
                walk(child, extra, _join(shown, key), _join(row, "<label>"))
            else:
                found.append((_join(shown, key), None))

    walk(config, schema, "", "")
    return found


def file_keys(config: dict, schema: dict) -> list[tuple[str, str | None]]:
    """(key as written, its reference row or None) of any shipped config: run configs' rows are
    ``run:<key>`` (their trainer's ``trainer:<field>``), eval configs' ``eval:<dotted key>``."""
    kind = config_kind(config)
    if kind == "workflow":
        return workflow_config_keys(config, schema)
    found = []
    for key, value in config.items():
        if kind == "run" and key == "trainer":
            found.append((key, "run:trainer"))
            found += [(f"trainer.{field}", f"trainer:{field}") for field in value or {}]
        elif kind == "eval" and key == "benchmarks":
            found.append((key, "eval:benchmarks"))
            for label, spec in (value or {}).items():
                found += [(f"benchmarks.{label}.{k}", f"eval:benchmarks.<label>.{k}") for k in spec]
        elif kind == "eval" and key == "sampling":
            found.append((key, "eval:sampling"))
            found += [(f"sampling.{k}", f"eval:sampling.{k}") for k in value or {}]
        else:
            found.append((key, f"{kind}:{key}"))
    return found


def shipped_trainer_keys(schema: dict, root: Path = ROOT) -> dict[str, list[str]]:
    """Trainer field -> the shipped config files that set it."""
    found: dict[str, list[str]] = {}
    for file, config in shipped_configs(root):
        for _, row in file_keys(config, schema):
            if row and row.startswith("trainer:"):
                files = found.setdefault(row.removeprefix("trainer:"), [])
                files += [file] if file not in files else []
    return found


def first_sentences(text: str, at_least: int = 30) -> str:
    """The first sentence of a help text, the second too when the first is shorter than
    ``at_least`` characters ("Epsilon value for clipping." says little alone); argparse's
    escaped ``%%`` unescaped."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.replace("%%", "%").split()))
    kept = sentences[0]
    if len(kept) < at_least and len(sentences) > 1:
        kept += " " + sentences[1]
    return kept


def _type_words(types: list[str]) -> str:
    return " or ".join("None" if t == "null" else t for t in types)


def _trl_default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # a mutable default (a list, a dict)


def trl_rows(schema: dict) -> list[str]:
    """A row per TRL field gc2po sets by default or a shipped config sets: type, gc2po's default
    (``TRAINER_DEFAULTS``, else TRL's), TRL's default and TRL's help, shortened."""
    from trl import GRPOConfig

    from gc2po.training.config import GC2POConfig
    from gc2po.training.run_config import DERIVED_KEYS, FIELDS_FILE, TRAINER_DEFAULTS

    types = json.loads(FIELDS_FILE.read_text())
    trl_fields = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    added = {f.name for f in dataclasses.fields(GC2POConfig)} - set(trl_fields)
    shipped = [
        key
        for key in shipped_trainer_keys(schema)
        if key in trl_fields and key not in added and key not in DERIVED_KEYS
    ]
    rows = []
    for name in sorted(set(TRAINER_DEFAULTS) | set(shipped)):
        trl_default = _trl_default(trl_fields[name])
        ours = _value(TRAINER_DEFAULTS[name]) if name in TRAINER_DEFAULTS else "TRL's"
        meaning = first_sentences(trl_fields[name].metadata.get("help", ""))
        rows.append(
            f"| `{name}` | {_type_words(types[name])} | {ours} | {_value(trl_default)} | "
            f"{_cell(meaning)} |"
        )
    return rows


def trainer_tables(schema: dict) -> list[str]:
    """The fields GC2POConfig adds (type, default, help), the TRL fields gc2po or a shipped
    config sets, and the keys set from the run config."""
    from trl import GRPOConfig

    from gc2po.training.config import GC2POConfig
    from gc2po.training.run_config import DERIVED_KEYS, FIELDS_FILE

    types = json.loads(FIELDS_FILE.read_text())
    trl_fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    lines = [
        "### Fields GC2POConfig adds",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for field in dataclasses.fields(GC2POConfig):
        if field.name in trl_fields or field.name in DERIVED_KEYS:
            continue
        lines.append(
            f"| `{field.name}` | {_type_words(types[field.name])} | {_value(field.default)} | "
            f"{_cell(field.metadata.get('help', ''))} |"
        )
    lines += [
        "",
        "### TRL fields gc2po or a shipped config sets",
        "",
        "Every TRL field whose default gc2po changes (`TRAINER_DEFAULTS` of",
        "`gc2po.training.run_config`: TRL's defaults changed across releases and some are traps,",
        "so every run sets them; a method may fix some, `gc2po methods` lists which) and every",
        "other TRL field a file of `config/` or `config/examples/` sets. *gc2po default*: what a",
        "run gets when no config sets the key; the meaning: the start of TRL's help",
        f"([GRPOConfig at TRL {trl_version()}]({trl_reference()}) has it whole).",
        "",
        f"| key | type | gc2po default | TRL {trl_version()} default | meaning |",
        "|---|---|---|---|---|",
        *trl_rows(schema),
        "",
        "### Keys set from the run config, never in the trainer section",
        "",
        "| key | set from |",
        "|---|---|",
        *(f"| `{name}` | {_cell(source)} |" for name, source in DERIVED_KEYS.items()),
    ]
    return lines


def command_config_tables() -> list[str]:
    """The keys of a ``gc2po train`` run config and of a ``gc2po eval`` config."""
    from gc2po.evaluation.cli_eval import EVAL_KEYS
    from gc2po.training.run_config import RUN_KEYS

    return [
        "## Run configs (`gc2po train --config`)",
        "",
        "A run config trains one model outside the workflow (`config/examples/run_*.yaml`); the",
        "workflow writes one per training job",
        "(`results/<name>/runs/<base>/<run>/seed<k>/run.yaml`).",
        "",
        "| key | meaning |",
        "|---|---|",
        *(f"| `{key}` | {_cell(meaning)} |" for key, meaning in RUN_KEYS.items()),
        "",
        "## Eval configs (`gc2po eval --config`)",
        "",
        "An eval config evaluates one model outside the workflow (`config/examples/eval_*.yaml`).",
        "",
        "| key | meaning |",
        "|---|---|",
        *(f"| `{key}` | {_cell(meaning)} |" for key, meaning in EVAL_KEYS.items()),
    ]


def render_pages() -> dict[Path, str]:
    """Each page of the reference -> its text: the workflow keys with the run and eval configs'
    keys (``PAGE``) and the trainer keys (``TRAINER_PAGE``), two pages so that each stays
    readable; a pure function of the schema, GC2POConfig and the pinned TRL."""
    schema = load_schema(SCHEMA)
    header = [
        f"Generated by `{COMMAND}` from `gc2po/workflow/config.schema.yaml` and",
        "`gc2po/training/config.py`; do not edit by hand (a test compares this page with the",
        "generator's output; another fails when a file of `config/` or `config/examples/` sets a",
        "key the reference has no row for). How configs are layered and what each file in",
        "`config/` is: [config/README.md](../config/README.md).",
        "",
    ]
    workflow = [
        "# Config reference",
        "",
        *header,
        "A *default* is what the workflow uses when the key is absent; *required* keys have none.",
        "`<label>` stands for a name you choose (a base model, a dataset key, a run label). The",
        f"trainer keys are on [{TRAINER_PAGE.name}]({TRAINER_PAGE.name}).",
        "",
        "## Workflow keys",
        "",
        *workflow_tables(schema),
        "",
        *command_config_tables(),
        "",
    ]
    trainer = [
        "# Config reference: trainer keys",
        "",
        *header,
        f"The workflow keys and the run and eval configs' keys: [{PAGE.name}]({PAGE.name}).",
        "",
        "## Trainer keys",
        "",
        "`train.trainer`, `train.per_method.<method>` and `variants.<label>.trainer` take them.",
        "",
        "Every field of `GC2POConfig`: TRL's `GRPOConfig` (see TRL's",
        f"[GRPOConfig reference at {trl_version()}]({trl_reference()}) for the fields not listed",
        "here) plus the ones below. A misspelt key fails naming the closest field.",
        "",
        *trainer_tables(schema),
        "",
    ]
    return {PAGE: "\n".join(workflow), TRAINER_PAGE: "\n".join(trainer)}


def render() -> str:
    """The whole reference, its pages one after the other (what :func:`read_pages` reads)."""
    return "\n".join(render_pages().values())


def read_pages(page: Path = PAGE) -> str:
    """The reference as written, its pages one after the other (``page``: the first page; the
    trainer page sits beside it)."""
    return "\n".join(p.read_text() if p.is_file() else "" for p in _beside(page))


def _beside(page: Path) -> list[Path]:
    """The reference's pages when the first is ``page``."""
    return [page, page.with_name(TRAINER_PAGE.name)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND, description="write docs/config-reference.md and its trainer page"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument(
        "--output",
        type=Path,
        default=PAGE,
        help="the first page; the trainer page is written beside it (default: %(default)s)",
    )
    ns = parser.parse_args(argv)
    missing = undescribed(load_schema(SCHEMA))
    if missing:
        print(f"{SCHEMA}: key(s) without a description: {missing}", file=sys.stderr)
        return 1
    pages = dict(zip(_beside(ns.output), render_pages().values(), strict=True))
    if ns.check:
        stale = [p for p, text in pages.items() if not p.is_file() or p.read_text() != text]
        for path in stale:
            print(f"{path} is stale: run {COMMAND}", file=sys.stderr)
        return int(bool(stale))
    for path, text in pages.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
