"""Shipped base models (``gc2po.testbed.base_models``): every artifact in data/base_models/ is
what its checksums say, the default's and the studies' recipes are among them (so a fresh clone on
any CPU starts from the same bytes), a tampered or missing file is refused naming it, and the
workflow's warm_start rule installs the artifact instead of training."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gc2po.testbed import base_models
from gc2po.testbed.data import write_splits
from gc2po.testbed.warmstart import WarmStartConfig
from tests.workflow.package_copy import run_in_copy, snakemake_command

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "data" / "base_models"
# the configs whose base model is shipped: the default and the studies' testbeds
SHIPPED_CONFIGS = [
    ["config.yaml"],
    ["config.yaml", "form_matched.yaml"],
    ["config.yaml", "form_matched_seed1.yaml"],
    ["config.yaml", "testbed_warm32.yaml"],
    ["config.yaml", "testbed_warm32_seed1.yaml"],
]
# overlays whose warm start is trained where they run (docs/testbed.md says so)
TRAINED_HERE = [
    ["config.yaml", "form_matched_equation.yaml"],
    ["config.yaml", "form_matched_equation_seed1.yaml"],
]


def layered(names: list[str]) -> dict:
    """The config of ``names`` layered as Snakemake layers --configfile (a nested merge)."""

    def merge(base: dict, over: dict) -> dict:
        out = dict(base)
        for key, value in over.items():
            out[key] = (
                merge(out[key], value)
                if isinstance(value, dict) and isinstance(out.get(key), dict)
                else value
            )
        return out

    config: dict = {}
    for name in names:
        config = merge(config, yaml.safe_load((ROOT / "config" / name).read_text()))
    return config


def recipe_of(config: dict, tmp_path: Path) -> dict:
    testbed = config["testbed"]
    write_splits(
        {"train": testbed["sizes"]["train"]}, testbed["seed"], tmp_path, testbed.get("cue")
    )
    warm = WarmStartConfig.from_mapping(testbed.get("warm_start", {}))
    return base_models.recipe(warm, tmp_path / "train.jsonl")


def artifacts() -> list[Path]:
    return sorted(p.parent for p in SHIPPED.glob(f"*/{base_models.ARTIFACT_FILE}"))


@pytest.mark.parametrize("folder", artifacts(), ids=lambda p: p.name)
def test_every_shipped_artifact_is_what_its_checksums_say(folder):
    record = base_models.verify(folder)
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(record["files"])
    assert record["recipe"]["recipe_version"] == base_models.RECIPE_VERSION


@pytest.mark.parametrize("names", SHIPPED_CONFIGS, ids=lambda n: "+".join(n))
def test_the_default_and_the_studies_start_from_a_shipped_base_model(names, tmp_path):
    found = base_models.find(SHIPPED, base_models.recipe_hash(recipe_of(layered(names), tmp_path)))
    assert found is not None, f"{names}: no shipped base model for its recipe"


@pytest.mark.parametrize("names", TRAINED_HERE, ids=lambda n: "+".join(n))
def test_the_overlays_without_an_artifact_are_named_in_the_docs(names, tmp_path):
    """No shipped base model has their recipe, and docs/testbed.md names each as trained where
    it runs (a later artifact moves it to SHIPPED_CONFIGS)."""
    found = base_models.find(SHIPPED, base_models.recipe_hash(recipe_of(layered(names), tmp_path)))
    assert found is None, f"{names}: {found} is shipped; move it to SHIPPED_CONFIGS"
    page = (Path(__file__).resolve().parents[2] / "docs" / "testbed.md").read_text()
    assert f"`{names[-1]}`" in page.split("The copy-as-equation overlays", 1)[1].split("\n\n")[0]


def test_a_tampered_or_missing_file_is_refused_naming_it(tmp_path):
    folder = shutil.copytree(artifacts()[0], tmp_path / "copy")
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    with pytest.raises(ValueError, match=r"config.json: sha256 .* where artifact.json lists"):
        base_models.verify(folder)
    (folder / "config.json").unlink()
    with pytest.raises(ValueError, match="config.json: listed in artifact.json but missing"):
        base_models.install(folder, tmp_path / "out")
    assert not (tmp_path / "out" / "model.safetensors").exists()  # nothing copied before the check


def test_a_recipe_hash_follows_every_setting_and_the_train_bytes(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text('{"id": 1}\n')
    base = base_models.recipe_hash(base_models.recipe(WarmStartConfig(), train))
    assert base == base_models.recipe_hash(base_models.recipe(WarmStartConfig(), train))
    for change in ({"epochs": 9.0}, {"num_threads": 1}, {"copy_form": "equation"}, {"seed": 1}):
        other = base_models.recipe(WarmStartConfig(**change), train)
        assert base_models.recipe_hash(other) != base, change
    train.write_text('{"id": 2}\n')
    assert base_models.recipe_hash(base_models.recipe(WarmStartConfig(), train)) != base


def test_pack_install_and_compare_round_trip(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "config.json").write_text("{}")
    train = tmp_path / "train.jsonl"
    train.write_text("{}\n")
    provenance = base_models.trained_provenance(WarmStartConfig(), train, model)
    assert provenance["source"] == "trained"
    packed = base_models.pack(model, tmp_path / "shipped", "mine")
    assert base_models.find(tmp_path / "shipped", provenance["recipe_hash"]) == packed
    installed = base_models.install_or_none(tmp_path / "shipped", WarmStartConfig(), train,
                                            tmp_path / "installed")  # fmt: skip
    assert installed["source"] == "shipped" and installed["artifact"] == "mine"
    assert base_models.compare(model, tmp_path / "installed") == []
    (tmp_path / "installed" / "config.json").write_text('{"x": 1}')
    assert base_models.compare(model, tmp_path / "installed") == ["config.json"]
    with pytest.raises(ValueError, match="already exists"):
        base_models.pack(model, tmp_path / "shipped", "mine")
    assert base_models.install_or_none(tmp_path / "none", WarmStartConfig(), train, model) is None


def test_the_command_line_verifies_and_compares(tmp_path, capsys):
    assert base_models.main(["verify", str(SHIPPED)]) == 0
    assert "files ok" in capsys.readouterr().out
    assert base_models.main(["verify", str(tmp_path)]) == 2
    assert "no artifact" in capsys.readouterr().err
    first = artifacts()[0]
    assert base_models.main(["compare", str(first), str(first)]) == 0
    assert "the same bytes" in capsys.readouterr().out


@pytest.mark.slow
def test_the_workflow_installs_the_default_base_model_instead_of_training(tmp_path):
    """The default's warm_start job from a copy of the checkout: the shipped artifact, checked,
    in seconds (no warm start is trained)."""
    copy = tmp_path / "tree"
    for top in ("gc2po", "workflow", "config", "Snakefile", "data"):
        source = ROOT / top
        if source.is_dir():
            shutil.copytree(source, copy / top, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / top)
    work = tmp_path / "work"
    command = snakemake_command(
        copy, work, "resources/testbed/models/testbed", configfiles=[copy / "config/config.yaml"]
    )
    done = run_in_copy(copy, command, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    model = work / "resources/testbed/models/testbed"
    provenance = json.loads((model / base_models.PROVENANCE_FILE).read_text())
    assert provenance["source"] == "shipped"
    shipped = base_models.find(SHIPPED, provenance["recipe_hash"])
    assert shipped is not None and base_models.compare(model, shipped) == []
    assert "installed the shipped base model" in (work / "logs/testbed/warm_start.log").read_text()


def test_an_integer_and_a_float_epoch_count_are_one_recipe(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text("{}\n")
    whole = base_models.recipe(WarmStartConfig.from_mapping({"epochs": 32}), train)
    decimal = base_models.recipe(WarmStartConfig.from_mapping({"epochs": 32.0}), train)
    assert base_models.recipe_hash(whole) == base_models.recipe_hash(decimal)
