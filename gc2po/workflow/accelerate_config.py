"""An accelerate config file (``train.launcher.config_file``) as gc2po reads it: its distributed
type, process and machine counts, whether it runs on CPU, and for DeepSpeed the JSON it names
(ZeRO stage, bf16). Read by the launcher's checks and command (``gc2po.workflow.launch``), the
memory plan (the ZeRO stage) and the jobs' resources (CPU or GPU); a missing or malformed file is
refused naming ``<where>.config_file``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gc2po.errors import one_line


@dataclass(frozen=True)
class AccelerateSettings:
    """What gc2po needs to know about an accelerate config file."""

    path: Path
    distributed_type: str
    num_processes: int | None  # as written in the file (None: not set, the launcher decides)
    use_cpu: bool
    deepspeed_config_file: Path | None  # resolved against the accelerate config's folder
    zero_stage: int | None  # DeepSpeed ZeRO stage; None without DeepSpeed
    bf16: bool | str | None  # DeepSpeed bf16.enabled as written (True, False or "auto")
    num_machines: int | None = None  # as written in the file (None: not set)
    # deepspeed_config.deepspeed_multinode_launcher (None: not set, accelerate's pdsh)
    deepspeed_multinode_launcher: str | None = None

    @property
    def uses_deepspeed(self) -> bool:
        return self.distributed_type == "DEEPSPEED"


def key_error(where: str, key: str, message: str) -> ValueError:
    """``<where>.<key>: <message>``: the one-line refusal of a launcher key."""
    return ValueError(f"{where}.{key}: {message}")


def _read_mapping(path: Path, where: str, key: str, loader) -> dict:
    try:
        data = loader(path.read_text())
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise key_error(where, key, f"cannot read {path}: {one_line(err)}") from err
    if not isinstance(data, dict):
        raise key_error(where, key, f"{path} must hold a mapping, got {type(data).__name__}")
    return data


def _deepspeed_settings(config: dict, path: Path, where: str) -> tuple[Path | None, int, Any]:
    """(resolved deepspeed_config_file, ZeRO stage, bf16.enabled) of a DEEPSPEED config."""
    plugin = config.get("deepspeed_config") or {}
    file_name = plugin.get("deepspeed_config_file")
    if file_name is None:  # everything in the accelerate file (accelerate's default stage: 2)
        return None, int(plugin.get("zero_stage", 2)), None
    ds_path = (path.parent / file_name).resolve()
    if not ds_path.is_file():
        raise key_error(
            where,
            "config_file",
            f"{path}: deepspeed_config.deepspeed_config_file "
            f"{file_name!r} not found (looked for {ds_path})",
        )
    ds_config = _read_mapping(ds_path, where, "config_file", json.loads)
    stage = (ds_config.get("zero_optimization") or {}).get("stage")
    if stage not in (0, 1, 2, 3):
        raise key_error(
            where, "config_file", f"{ds_path}: zero_optimization.stage must be 0-3, got {stage!r}"
        )
    return ds_path, stage, (ds_config.get("bf16") or {}).get("enabled", False)


def _check_with_accelerate(path: Path, where: str) -> None:
    """Load the file the way ``accelerate launch`` does (unknown keys, bad values)."""
    from accelerate.commands.config.config_args import ClusterConfig

    try:
        ClusterConfig.from_yaml_file(str(path))
    except (TypeError, ValueError) as err:
        raise key_error(where, "config_file", f"accelerate rejects {path}: {err}") from err


def read_accelerate_config(
    config_file: str | Path, where: str = "launcher", *, check: bool = True
) -> AccelerateSettings:
    """Parse an accelerate config (YAML) and, for DeepSpeed, the JSON it points to.

    Raises ValueError naming ``<where>.config_file`` when a file is missing or malformed.
    ``check``: also load it the way ``accelerate launch`` does (imports accelerate and torch; the
    workflow's config check does it once, so building each job's command need not).
    """
    path = Path(config_file)
    if not path.is_file():
        raise key_error(
            where,
            "config_file",
            f"accelerate config {str(config_file)!r} not found (resolved against {Path.cwd()})",
        )
    config = _read_mapping(path, where, "config_file", yaml.safe_load)
    if check:
        _check_with_accelerate(path, where)
    distributed_type = config.get("distributed_type")
    if not isinstance(distributed_type, str):
        raise key_error(where, "config_file", f"{path}: distributed_type is missing")
    num_processes = config.get("num_processes")
    if num_processes is not None and not isinstance(num_processes, int):
        raise key_error(
            where, "config_file", f"{path}: num_processes must be an int, got {num_processes!r}"
        )
    machines = config.get("num_machines")
    if machines is not None and not isinstance(machines, int):
        raise key_error(
            where, "config_file", f"{path}: num_machines must be an int, got {machines!r}"
        )
    ds_file, stage, bf16 = (None, None, None)
    if distributed_type == "DEEPSPEED":
        ds_file, stage, bf16 = _deepspeed_settings(config, path, where)
    return AccelerateSettings(
        path=path,
        distributed_type=distributed_type,
        num_processes=None if num_processes in (None, -1) else num_processes,
        use_cpu=bool(config.get("use_cpu", False)),
        deepspeed_config_file=ds_file,
        zero_stage=stage,
        bf16=bf16,
        num_machines=machines,
        deepspeed_multinode_launcher=(config.get("deepspeed_config") or {}).get(
            "deepspeed_multinode_launcher"
        ),
    )
