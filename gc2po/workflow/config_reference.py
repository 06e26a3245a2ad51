"""The config reference page (``docs/config-reference.md``), written from the schema and the
trainer's config class, so that a key added later is documented where users look.

    python -m gc2po.workflow.config_reference          # rewrite docs/config-reference.md
    python -m gc2po.workflow.config_reference --check  # exit 1 when the page is stale

Workflow keys come from ``config.schema.yaml`` (each key's ``description`` and, where the code has
one, ``default``); trainer keys from ``GC2POConfig`` (the fields it adds to TRL's ``GRPOConfig``,
with their ``help``) and ``gc2po.training.run_config`` (the TRL defaults every run changes, and
the keys set from the run config). ``tests/workflow/test_config_reference.py`` fails when a key
has no description or the committed page differs from what this writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from gc2po.workflow.config_schema import SCHEMA, load_schema

PAGE = Path(__file__).resolve().parents[2] / "docs" / "config-reference.md"
COMMAND = "python -m gc2po.workflow.config_reference"
TRL_REFERENCE = "https://huggingface.co/docs/trl/main/en/grpo_trainer#trl.GRPOConfig"


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
            lines += ["", f"### `{top}`", "", *header, *map(row, nested)]
    return lines


def _type_words(types: list[str]) -> str:
    return " or ".join("None" if t == "null" else t for t in types)


def trainer_tables() -> list[str]:
    """The fields GC2POConfig adds (type, default, help), the TRL defaults every run changes and
    the keys set from the run config."""
    from trl import GRPOConfig

    from gc2po.training.config import GC2POConfig
    from gc2po.training.run_config import DERIVED_KEYS, FIELDS_FILE, TRAINER_DEFAULTS

    types = json.loads(FIELDS_FILE.read_text())
    trl_fields = {f.name: f for f in dataclasses.fields(GRPOConfig)}
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
        "### TRL fields every gc2po run sets",
        "",
        "`gc2po.training.run_config.TRAINER_DEFAULTS`: TRL's defaults changed across releases and",
        "some are traps (gradient checkpointing on, beta 0), so every run sets these, whether or",
        "not the value differs from TRL's; a method may fix some of them (`gc2po methods` lists",
        "what each fixes).",
        "",
        "| key | type | gc2po default | TRL's default |",
        "|---|---|---|---|",
    ]
    for name, value in TRAINER_DEFAULTS.items():
        trl_default = trl_fields[name].default
        lines.append(
            f"| `{name}` | {_type_words(types[name])} | {_value(value)} | {_value(trl_default)} |"
        )
    lines += [
        "",
        "### Keys set from the run config, never in the trainer section",
        "",
        "| key | set from |",
        "|---|---|",
        *(f"| `{name}` | {_cell(source)} |" for name, source in DERIVED_KEYS.items()),
    ]
    return lines


def render() -> str:
    """The whole page (a pure function of the schema, GC2POConfig and the pinned TRL)."""
    schema = load_schema(SCHEMA)
    lines = [
        "# Config reference",
        "",
        f"Generated by `{COMMAND}` from `gc2po/workflow/config.schema.yaml` and",
        "`gc2po/training/config.py`; do not edit by hand (a test compares this page with the",
        "generator's output). How configs are layered and what each file in `config/` is:",
        "[config/README.md](../config/README.md).",
        "",
        "A *default* is what the workflow uses when the key is absent; *required* keys have none.",
        "`<label>` stands for a name you choose (a base model, a dataset key, a run label).",
        "",
        "## Workflow keys",
        "",
        *workflow_tables(schema),
        "",
        "## Trainer keys",
        "",
        "`train.trainer`, `train.per_method.<method>` and `variants.<label>.trainer` take them.",
        "",
        "Every field of `GC2POConfig`: TRL's `GRPOConfig` (see TRL's",
        f"[GRPOConfig reference]({TRL_REFERENCE}) for the fields not listed here) plus the ones",
        "below. A misspelt key fails naming the closest field.",
        "",
        *trainer_tables(),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="write docs/config-reference.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument("--output", type=Path, default=PAGE, help="the page (default: %(default)s)")
    ns = parser.parse_args(argv)
    missing = undescribed(load_schema(SCHEMA))
    if missing:
        print(f"{SCHEMA}: key(s) without a description: {missing}", file=sys.stderr)
        return 1
    text = render()
    if ns.check:
        stale = not ns.output.is_file() or ns.output.read_text() != text
        if stale:
            print(f"{ns.output} is stale: run {COMMAND}", file=sys.stderr)
        return int(stale)
    ns.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
