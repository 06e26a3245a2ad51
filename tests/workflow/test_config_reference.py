"""docs/config-reference.md: every workflow key and every trainer key GC2POConfig adds or whose
default a run changes, with type and default, and the page equal to what its generator writes
(a key added later fails here until it is described and the page regenerated)."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest

from gc2po.workflow import config_reference as ref
from gc2po.workflow.config_schema import load_schema

STALE = f"{ref.PAGE.name} is stale: run `{ref.COMMAND}` and commit the page"


@pytest.fixture(scope="module")
def page() -> str:
    return ref.PAGE.read_text()


def _rows(page: str) -> dict[str, list[str]]:
    """key -> the cells after the key, for every table row whose first cell is a `key`."""
    rows = {}
    for line in page.splitlines():
        match = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [c.strip() for c in match.group(2).split(" | ")]
    return rows


def test_every_schema_key_has_a_description():
    missing = ref.undescribed(load_schema())
    assert not missing, (
        f"gc2po/workflow/config.schema.yaml: key(s) without a description: {missing}; add a "
        f"`description:` (and a `default:` where the code has one), then run `{ref.COMMAND}`"
    )


def test_a_key_without_description_is_found():
    schema = copy.deepcopy(load_schema())
    schema["properties"]["evaluate"]["properties"]["new_key"] = {"type": "integer"}
    schema["properties"]["variants"]["additionalProperties"]["properties"]["new_field"] = {
        "type": "string"
    }
    schema["properties"]["report"]["properties"]["families"]["items"]["properties"]["other"] = {
        "type": "string"
    }
    assert ref.undescribed(schema) == [
        "variants.<label>.new_field",
        "evaluate.new_key",
        "report.families[].other",
    ]


def test_page_is_what_the_generator_writes(page):
    assert page == ref.render(), STALE


def test_every_schema_key_has_a_row_with_type_and_meaning(page):
    rows = _rows(page)
    for key in ref.schema_keys(load_schema()):
        assert key.path in rows, f"{key.path} has no row: {STALE}"
        kind, default, meaning = rows[key.path]
        assert kind and meaning, key.path
        if "default" in key.node:
            assert default == f"`{ref.json.dumps(key.node['default'])}`", key.path


def test_defaults_the_code_reads_are_stated(page):
    rows = _rows(page)
    assert rows["evaluate.max_grader_errors"][1] == "`0`"
    assert rows["evaluate.batch_size"][1] == "`32`"
    assert rows["audit.k"][1] == "`8`"
    for key in ("testbed.rl_cued_share", "testbed.sizes.test_newstart"):
        assert rows[key][2], key


def test_every_trainer_key_gc2po_adds_or_changes_is_listed(page):
    from trl import GRPOConfig

    from gc2po.training.config import GC2POConfig
    from gc2po.training.run_config import DERIVED_KEYS, TRAINER_DEFAULTS

    rows = _rows(page)
    trl = {f.name for f in dataclasses.fields(GRPOConfig)}
    added = [f for f in dataclasses.fields(GC2POConfig) if f.name not in trl]
    assert {"lambda_cf", "cf_std_floor", "method_args"} <= {f.name for f in added}
    for field in added:
        if field.name in DERIVED_KEYS:
            assert field.name in rows, f"{field.name}: {STALE}"
            continue
        assert field.name in rows, f"trainer key {field.name} has no row: {STALE}"
        kind, default, meaning = rows[field.name]
        assert kind and meaning, field.name
        assert default == f"`{ref.json.dumps(field.default)}`", field.name
    for name, value in TRAINER_DEFAULTS.items():
        assert name in rows, f"trainer default {name} has no row: {STALE}"
        kind, ours, _trl = rows[name]
        assert kind and ours == f"`{ref.json.dumps(value)}`", name
    assert f"]({ref.TRL_REFERENCE})" in page


def test_check_flag_reports_a_stale_page(tmp_path, capsys):
    out = tmp_path / "config-reference.md"
    out.write_text("old\n")
    assert ref.main(["--check", "--output", str(out)]) == 1
    assert ref.COMMAND in capsys.readouterr().err
    assert ref.main(["--output", str(out)]) == 0
    assert ref.main(["--check", "--output", str(out)]) == 0
