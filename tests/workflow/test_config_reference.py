"""docs/config-reference.md: every workflow key and every trainer key GC2POConfig adds or whose
default a run changes, with type and default, every key a shipped config sets (trainer keys and
the warm start's fields included), and the page equal to what its generator writes (a key added
later fails here until it is described and the page regenerated)."""

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
    return ref.read_pages()


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

    rows = sections(page)["Trainer keys"]
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
        kind, ours, _trl, meaning = rows[name]
        assert kind and ours == f"`{ref.json.dumps(value)}`" and meaning, name


def test_the_trl_link_is_the_pinned_release_not_main(page):
    pin = re.search(r'"trl==([\d.]+)"', (ref.ROOT / "pyproject.toml").read_text())[1]
    assert ref.trl_version() == pin
    link = ref.trl_reference()
    assert f"/docs/trl/v{pin}/" in link and "/main/" not in link
    assert f"]({link})" in page and "/docs/trl/main/" not in page


def sections(page: str) -> dict[str, dict[str, list[str]]]:
    """``## `` section title -> its rows (key -> the cells after it)."""
    parts = re.split(r"^## ", page, flags=re.MULTILINE)[1:]
    return {part.split("\n", 1)[0]: _rows(part) for part in parts}


def unlisted(config: dict, page: str) -> list[str]:
    """The keys a config sets that the page has no row for."""
    found = sections(page)
    rows = {
        "workflow": found["Workflow keys"],
        "trainer": found["Trainer keys"],
        "run": found["Run configs (`gc2po train --config`)"],
        "eval": found["Eval configs (`gc2po eval --config`)"],
    }
    missing = []
    for shown, row in ref.file_keys(config, load_schema()):
        kind, _, key = row.partition(":") if row and ":" in row else ("workflow", "", row)
        if row is None or key not in rows[kind]:
            missing.append(shown)
    return missing


def test_every_key_a_shipped_config_sets_has_a_row(page):
    """config/*.yaml and config/examples/*.yaml: workflow keys, trainer keys (TRL's included),
    the warm start's fields, and the keys of run and eval configs."""
    configs = ref.shipped_configs()
    files = {file for file, _ in configs}
    assert {"config/paper.yaml", "config/examples/run_math.yaml"} <= files
    assert {"config/examples/eval_gsm8k.yaml", "config/ci.yaml"} <= files
    problems = [
        f"{file} sets {key}: no row in docs/config-reference.md ({STALE})"
        for file, config in configs
        for key in unlisted(config, page)
    ]
    assert not problems, "\n".join(problems)
    paper = dict(ref.file_keys(dict(configs)["config/paper.yaml"], load_schema()))
    assert paper["train.trainer.vllm_gpu_memory_utilization"] == (
        "trainer:vllm_gpu_memory_utilization"
    )
    assert paper["train.per_method.gc2po.lambda_cf"] == "trainer:lambda_cf"
    ci = dict(ref.file_keys(dict(configs)["config/ci.yaml"], load_schema()))
    assert ci["testbed.warm_start.hidden_size"] == "testbed.warm_start.hidden_size"
    assert ci["report.families[0].margin"] == "report.families[].margin"


@pytest.mark.parametrize(
    "config, key",
    [
        ({"train": {"trainer": {"torch_compile": True}}}, "train.trainer.torch_compile"),
        ({"train": {"per_method": {"grpo": {"optim": "sgd"}}}}, "train.per_method.grpo.optim"),
        ({"testbed": {"warm_start": {"dropout": 0.1}}}, "testbed.warm_start.dropout"),
        ({"evaluate": {"sampling": {"top_k": 5}}}, "evaluate.sampling.top_k"),
        (
            {"model": "m", "train_data": "d", "trainer": {"torch_compile": True}},
            "trainer.torch_compile",
        ),
        ({"benchmarks": {"gsm8k": {"split": "test"}}}, "benchmarks.gsm8k.split"),
    ],
)
def test_a_key_the_page_lacks_is_found(page, config, key):
    """A TRL field no shipped config sets, an unknown warm-start field, an unknown sampling key,
    a run config's and an eval config's: each is reported."""
    assert unlisted(config, page) == [key]


def test_the_warm_start_rows_are_its_fields(page):
    from gc2po.testbed.warmstart import WarmStartConfig

    rows = _rows(page)
    for field in dataclasses.fields(WarmStartConfig):
        kind, default, meaning = rows[f"testbed.warm_start.{field.name}"]
        assert default == f"`{ref.json.dumps(field.default)}`" and meaning, field.name


def test_the_eval_keys_are_the_keys_an_eval_config_is_checked_against():
    from gc2po.evaluation import cli_eval

    checked = {
        *cli_eval.TOP_LEVEL_CHECKS,
        *(f"sampling.{k}" for k in cli_eval.SAMPLING_CHECKS),
        *(f"benchmarks.<label>.{k}" for k in cli_eval.BENCHMARK_CHECKS),
    }
    assert set(cli_eval.EVAL_KEYS) == checked


def test_check_flag_reports_a_stale_page(tmp_path, capsys):
    out = tmp_path / "config-reference.md"
    out.write_text("old\n")
    assert ref.main(["--check", "--output", str(out)]) == 1
    assert ref.COMMAND in capsys.readouterr().err
    assert ref.main(["--output", str(out)]) == 0
    assert ref.main(["--check", "--output", str(out)]) == 0
