"""Error messages a user meets first: a misspelt trainer key gets the closest field, a near-miss
of the project's own method prefers it over a baseline one edit away, and ``gc2po --help`` is
plain text, and a workflow output written after ``--configfile`` is named as a target
(issue 51)."""

from __future__ import annotations

import copy
import re
import subprocess

import pytest

from gc2po.cli import build_parser
from gc2po.errors import did_you_mean, edits
from gc2po.methods import METHODS
from gc2po.training.run_config import checked_trainer
from gc2po.workflow.config_files import load_config
from gc2po.workflow.config_schema import check_config_files, check_schema
from tests.workflow.slurm_workflow import new_workdir, snakemake_command

RUN = {"model": "m", "train_data": "d.jsonl", "output_dir": "out"}


@pytest.mark.parametrize(
    "key, suggestion",
    [("learning_rat", "learning_rate"), ("lambda_fc", "lambda_cf"), ("num_generation", None)],
)
def test_a_misspelt_trainer_key_names_the_closest_field(key, suggestion):
    suggestion = suggestion or key + "s"
    with pytest.raises(ValueError) as err:
        checked_trainer({**RUN, "trainer": {key: 1}})
    message = str(err.value)
    assert "\n" not in message
    assert f"unknown trainer key(s) [{key!r}] (did you mean {suggestion!r}?)" in message
    assert "not fields of GC2POConfig" in message


def test_a_trainer_key_far_from_every_field_gets_no_suggestion():
    with pytest.raises(ValueError, match=r"\['zzqqxx'\]: not fields of GC2POConfig"):
        checked_trainer({**RUN, "trainer": {"zzqqxx": 1}})


@pytest.mark.parametrize(
    "word, expected",
    [
        ("gcp2o", "gc2po"),  # one edit from gc2po and from gcpo: the project's own name wins
        ("gc2op", "gc2po"),
        ("gcpo_", "gcpo"),  # clearly closer to the baseline: it keeps it
        ("gvpoo", "gvpo"),
        ("gc2po_ad", "gc2po_add"),
    ],
)
def test_suggestions_prefer_the_projects_names_only_on_a_near_tie(word, expected):
    assert did_you_mean(word, METHODS) == f" (did you mean {expected!r}?)"


def test_an_exact_baseline_name_is_never_replaced():
    assert did_you_mean("gcpo", METHODS) == " (did you mean 'gcpo'?)"


@pytest.mark.parametrize(
    "a, b, n", [("gcp2o", "gc2po", 1), ("gcp2o", "gcpo", 1), ("gcpo_", "gc2po", 2), ("", "ab", 2)]
)
def test_edits_counts_a_swap_as_one(a, b, n):
    assert edits(a, b) == n


def test_a_misspelt_method_in_a_workflow_config_suggests_gc2po():
    config = copy.deepcopy(load_config([]))
    config["methods"] = ["grpo", "gcp2o"]
    with pytest.raises(ValueError) as err:
        check_schema(config, ["config/config.yaml", "my.yaml"])
    assert "methods[1]" in str(err.value)
    assert "(did you mean 'gc2po'?)" in str(err.value)


def test_top_level_help_is_plain_text_and_does_not_point_to_itself():
    text = " ".join(build_parser().format_help().split())  # argparse wraps at the width
    assert not re.search(r"``|:(func|class|mod|meth):`", text), text
    assert "gc2po --help" not in text
    assert "gc2po COMMAND --help" in text
    for command in ("train", "plan", "methods", "eval", "audit", "tables"):
        assert command in text


def test_a_workflow_output_given_as_a_config_file_says_where_targets_go():
    with pytest.raises(ValueError) as err:
        check_config_files(
            ["config/config.yaml", "results/testbed/runs/testbed/grpo/seed0/run.yaml"]
        )
    message = str(err.value)
    assert message.startswith("results/testbed/runs/testbed/grpo/seed0/run.yaml is not a config")
    assert "put targets before --configfile" in message
    check_config_files(["config/config.yaml", "config/ci.yaml"])  # configs pass


@pytest.mark.timeout(600)
def test_a_target_after_configfile_ends_in_one_line(tmp_path):
    """A target that exists (here a run config the workflow writes) is read by Snakemake as a
    config file when written after --configfile: the workflow's config check names it."""
    work = new_workdir(tmp_path / "wf")
    target = "results/ci/runs/testbed/grpo/seed0/run.yaml"
    (work / target).parent.mkdir(parents=True)
    (work / target).write_text("model: m\ntrain_data: d.jsonl\n")
    out = subprocess.run(
        snakemake_command("-n", "--cores", "2", "--configfile", "config/config.yaml", target),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"config error: {target} is not a config file: put targets before"), (
        out.stderr[-2000:]
    )
