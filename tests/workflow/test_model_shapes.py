"""Any Hub model is planned (gc2po.workflow.model_shapes): its shape from its config.json in the
Hugging Face cache (read from disk, never downloaded), a local folder, or a ``shape:`` key;
without one, ``gc2po plan`` and the workflow's config check say so in one line, and no NaN is
printed."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import yaml

from gc2po import cli
from gc2po.workflow import config_check, model_shapes
from gc2po.workflow.config_files import load_config
from gc2po.workflow.job_shape import QWEN25_MATH_1_5B, ModelShape
from gc2po.workflow.plan_summary import memory_plan
from tests.workflow.slurm_workflow import dry_run

ROOT = Path(__file__).resolve().parents[2]
PAPER = str(ROOT / "config" / "paper.yaml")
HUB_MODEL = str(ROOT / "config" / "examples" / "hub_model.yaml")
REPO = "Qwen/Qwen2.5-1.5B-Instruct"  # the example overlay's model
# Qwen2.5-1.5B-Instruct's config.json, the fields the plan reads
QWEN_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 1536,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "intermediate_size": 8960,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}
# its shape: Qwen2.5-Math-1.5B's (the paper's 1.5B policies) with tied embeddings
QWEN_SHAPE = dataclasses.replace(QWEN25_MATH_1_5B, tied_embeddings=True)
NOT_PLANNED = (
    "memory plan: base model Qwen2.5-1.5B-Instruct not planned: no shape known (no config.json of "
    f"{REPO} in the Hugging Face cache); state base_models.Qwen2.5-1.5B-Instruct.shape; or put "
    f"its config.json in the cache: hf download {REPO} config.json"
)


def hub_cache(root: Path, repo: str, config: dict) -> Path:
    """A Hugging Face hub cache holding ``config`` as ``repo``'s config.json, laid out as
    ``hf download`` leaves it (refs/main -> snapshots/<commit>/config.json)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    return root


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache (none of the machine's models)."""
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_a_config_json_in_the_cache_gives_the_shape(empty_cache):
    hub_cache(empty_cache, REPO, QWEN_CONFIG)
    found = model_shapes.lookup("M", {"source": "hub", "path": REPO, "train_data": "x"})
    assert found.shape == QWEN_SHAPE
    assert found.source.endswith("/config.json") and str(empty_cache) in found.source


def test_a_local_folders_config_json_gives_the_shape(tmp_path):
    llama = {**QWEN_CONFIG, "model_type": "llama", "tie_word_embeddings": False}
    (tmp_path / "config.json").write_text(json.dumps(llama))
    found = model_shapes.lookup("M", {"source": "hub", "path": str(tmp_path), "train_data": "x"})
    # Llama's q/k/v have no biases unless config.json says attention_bias
    assert found.shape == ModelShape(
        **{**QWEN_SHAPE.__dict__, "tied_embeddings": False, "qkv_bias": False}
    )


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2' is not one the memory plan models"),
        ({"intermediate_size": None}, "no intermediate_size"),
        ({"head_dim": 256}, "head_dim 256 is not hidden_size / num_attention_heads (128)"),
    ],
)
def test_a_config_json_the_plan_cannot_model_says_why(change, reason, tmp_path):
    data = {k: v for k, v in {**QWEN_CONFIG, **change}.items() if v is not None}
    (tmp_path / "config.json").write_text(json.dumps(data))
    found = model_shapes.lookup("M", {"source": "hub", "path": str(tmp_path), "train_data": "x"})
    assert found.shape is None and reason in found.source


def test_the_shape_key_wins_and_the_papers_models_need_no_cache(empty_cache):
    shape = {**QWEN_SHAPE.__dict__}
    found = model_shapes.lookup(
        "M", {"source": "hub", "path": REPO, "train_data": "x", "shape": shape}
    )
    assert found == model_shapes.ShapeLookup(QWEN_SHAPE, "base_models.M.shape")
    paper = model_shapes.lookup(
        "D", {"source": "hub", "path": "agentica-org/DeepScaleR-1.5B-Preview", "train_data": "x"}
    )
    assert paper.shape is not None and paper.source == "gc2po.workflow.job_shape.MODEL_SHAPES"


def _plan_output(files: list[str], capsys) -> tuple[int, str]:
    status = cli.main(["plan", "--configfile", *files])
    out, err = capsys.readouterr()
    return status, out + err


def _rows(text: str, base: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.split()[:1] == [base]]


def test_gc2po_plan_plans_the_hub_overlays_model_from_its_config_json(empty_cache, capsys):
    hub_cache(empty_cache, REPO, QWEN_CONFIG)
    status, text = _plan_output([PAPER, HUB_MODEL], capsys)
    assert status == 0, text[-2000:]
    rows = _rows(text, "Qwen2.5-1.5B-Instruct")
    assert len(rows) == 8 and all(row[-1] == "True" for row in rows)  # every memory column
    assert all("-" not in row[9:] for row in rows)
    assert "not planned" not in text and "NaN" not in text
    plan = memory_plan(load_config([PAPER, HUB_MODEL]))
    own = plan[plan["base"] == "Qwen2.5-1.5B-Instruct"]
    assert own["peak_gib"].notna().all() and own["fits"].all()
    assert "Qwen2.5-1.5B-Instruct: 24 runs" in text  # its disk is estimated too


def test_gc2po_plan_names_a_model_without_a_shape_in_one_line(empty_cache, capsys):
    status, text = _plan_output([PAPER, HUB_MODEL], capsys)
    assert status == 0, text[-2000:]
    assert NOT_PLANNED in text.splitlines()
    assert NOT_PLANNED in (ROOT / "docs" / "howto" / "hub-model.md").read_text()  # as quoted
    assert "NaN" not in text
    rows = _rows(text, "Qwen2.5-1.5B-Instruct")
    assert len(rows) == 8 and all(row[9:] == ["-"] * 9 for row in rows), rows[:1]


def test_the_config_check_names_it_and_rechecks_once_the_cache_holds_it(empty_cache, tmp_path):
    files = [PAPER, HUB_MODEL]
    cache = tmp_path / "check.json"
    result = config_check.checked(load_config(files), files, cache=cache)
    assert result["memory_notes"] == [NOT_PLANNED]
    before = config_check.check_key(load_config(files), config_check.SCHEMA)
    hub_cache(empty_cache, REPO, QWEN_CONFIG)  # `hf download ... config.json`
    assert config_check.check_key(load_config(files), config_check.SCHEMA) != before
    assert config_check.checked(load_config(files), files, cache=cache)["memory_notes"] == []


def test_snakemake_prints_the_line_and_plans_the_jobs(tmp_path):
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub")}
    out = dry_run("--cores", "1", "--configfile", PAPER, HUB_MODEL, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"note: {NOT_PLANNED}" in out.stderr.splitlines()
    assert "results/paper/runs/Qwen2.5-1.5B-Instruct/gc2po/seed0/run.yaml" in out.stdout


def test_a_shape_key_plans_a_model_offline(empty_cache, tmp_path, capsys):
    overlay = tmp_path / "shape.yaml"
    shape = {**QWEN_SHAPE.__dict__}
    overlay.write_text(yaml.safe_dump({"base_models": {"Qwen2.5-1.5B-Instruct": {"shape": shape}}}))
    status, text = _plan_output([PAPER, HUB_MODEL, str(overlay)], capsys)
    assert status == 0 and "not planned" not in text
    assert all(row[-1] == "True" for row in _rows(text, "Qwen2.5-1.5B-Instruct"))
