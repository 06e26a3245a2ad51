"""The results layout (gc2po.layout) builds and parses every path the same way."""

from __future__ import annotations

import pytest

from gc2po import layout
from gc2po.layout import AuditDir, CheckpointAuditDir, CurveFile, EvalFile, RunDir

OUT = "results/ci"


@pytest.mark.parametrize(
    "key, path",
    [
        (RunDir("testbed", "gc2po", 2), "results/ci/runs/testbed/gc2po/seed2"),
        (EvalFile("testbed", "base", 0, "test_id"), "results/ci/testbed/base/seed0/test_id.jsonl"),
        (CurveFile("testbed", "grpo", 1), "results/ci/curves/testbed/grpo/seed1.csv"),
        (AuditDir("testbed", "gc2po", 0), "results/ci/audit/testbed/gc2po/seed0"),
        (
            CheckpointAuditDir("testbed", "gc2po", 0, 30),
            "results/ci/audit/testbed/gc2po/seed0/step30",
        ),
    ],
)
def test_every_kind_of_path_is_built_and_parsed_back(key, path):
    assert key.path(OUT) == path
    assert type(key).parse(path) == key
    assert type(key).parse("/abs/" + path) == key  # any prefix before the template


def test_the_on_disk_layout_is_the_one_the_workflow_always_wrote():
    run = RunDir("DeepScaleR-1.5B", "gc2po_lambda_exp_0.5", 0)
    assert run.final(OUT) == "results/ci/runs/DeepScaleR-1.5B/gc2po_lambda_exp_0.5/seed0/final"
    assert run.metrics(OUT).endswith("/seed0/metrics.jsonl")
    assert run.run_config(OUT).endswith("/seed0/run.yaml")
    assert run.checkpoint(OUT, 30).endswith("/seed0/checkpoint-30")
    sample = EvalFile("b", "m", 3, "aime2024")
    assert sample.path(layout.eval_root(OUT)) == "results/ci/eval/b/m/seed3/aime2024.jsonl"
    greedy = layout.eval_root(OUT, greedy=True)
    assert sample.path(greedy) == "results/ci/eval_greedy/b/m/seed3/aime2024.jsonl"
    assert sample.summary(layout.eval_root(OUT)).endswith("aime2024.jsonl.summary.json")
    assert layout.table_file(OUT, "table1", "md") == "results/ci/tables/table1.md"
    assert layout.figure_file(OUT, "grad_norm") == "results/ci/figures/grad_norm.png"
    assert layout.report_page(OUT, "setup") == "results/ci/report/setup.html"
    assert (layout.resources_dir("ci"), layout.results_dir("ci")) == ("resources/ci", "results/ci")


def test_snakemake_wildcards_build_the_rules_patterns():
    run = RunDir("{base}", "{run}", "{seed}")
    assert run.final("OUT") == "OUT/runs/{base}/{run}/seed{seed}/final"
    sample = EvalFile("{base}", "{model}", "{seed}", "test_id")
    assert sample.path("OUT/eval") == "OUT/eval/{base}/{model}/seed{seed}/test_id.jsonl"
    audit = CheckpointAuditDir("{base}", "{run}", "{seed}", "{step}").file("OUT", AuditDir.SUMMARY)
    assert audit == "OUT/audit/{base}/{run}/seed{seed}/step{step}/summary.json"


def test_members_summaries_and_checkpoints_are_parsed():
    assert RunDir.of_member("x/runs/b/r/seed4/final/", RunDir.FINAL) == RunDir("b", "r", 4)
    assert RunDir.of_member("x/runs/b/r/seed4/checkpoint-5", RunDir.FINAL) is None
    assert RunDir.of_member("models/my-model", RunDir.FINAL) is None
    assert RunDir.checkpoint_step("checkpoint-45") == 45
    assert RunDir.checkpoint_step("checkpoint-x") is None
    assert RunDir.checkpoint_step("final") is None
    summary = "e/b/m/seed1/gsm8k.jsonl.summary.json"
    assert EvalFile.of_summary(summary) == EvalFile("b", "m", 1, "gsm8k")
    assert layout.audit_of_summary("r/audit/b/m/seed0/summary.json") == AuditDir("b", "m", 0)
    checkpoint = layout.audit_of_summary("r/audit/b/m/seed0/step30/summary.json")
    assert checkpoint == CheckpointAuditDir("b", "m", 0, 30)


@pytest.mark.parametrize(
    "parse, path, message",
    [
        (
            EvalFile.parse,
            "eval/b/m/gsm8k.jsonl",
            "not an evaluation file of the layout .../<base>/<model>/seed<seed>/<benchmark>.jsonl",
        ),
        (RunDir.parse, "runs/b/r/seedX", "not a training run's folder"),
        (EvalFile.of_summary, "e/b/m/seed1/gsm8k.jsonl", "not an evaluation summary"),
        (layout.audit_of_summary, "r/audit/b/m/seed0/completions.csv", "not an audit summary"),
    ],
)
def test_a_path_outside_the_layout_fails_naming_it_and_the_layout(parse, path, message):
    with pytest.raises(ValueError) as err:
        parse(path)
    assert str(err.value).startswith(f"{path}: {message}")
