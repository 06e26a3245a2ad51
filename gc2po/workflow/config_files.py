"""The workflow config as the Snakefile builds it from its files: ``config/config.yaml`` when none
is given, else the given files merged in order, each mapping key by key (Snakemake's merge of
``--configfile`` files). Reading only: the keys are checked by ``gc2po.workflow.config_schema``
and ``gc2po.workflow.config_check``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from gc2po.errors import one_line
from gc2po.workflow.config_schema import DEFAULT_PATH


def deep_update(base: dict, overlay: dict) -> dict:
    """Snakemake's merge of config files: mappings merged key by key, other values replaced."""
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def load_config(paths: list[str | Path] | None = None) -> dict:
    """The workflow config as the Snakefile builds it: ``config/config.yaml`` when no file is
    given, else the given files merged in order (a file given alone inherits nothing)."""
    config: dict = {}
    for path in paths or [DEFAULT_PATH]:
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ValueError(f"{path}: cannot read workflow config: {one_line(err)}") from err
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: a workflow config must be a mapping")
        deep_update(config, loaded)
    return config
