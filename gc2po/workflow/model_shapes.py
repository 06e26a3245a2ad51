"""Where the memory plan finds a base model's shape (:class:`~gc2po.workflow.job_shape.ModelShape`),
first found first:

1. the entry's own ``shape:`` key (``base_models.<label>.shape``), for a machine without the model;
2. the package's table of the paper's policies (:data:`~gc2po.workflow.job_shape.MODEL_SHAPES`,
   by Hub id);
3. the model's ``config.json``: in ``path`` when it is a local folder, else in the Hugging Face
   cache (``HF_HUB_CACHE``, or ``HF_HOME``/hub), read from disk only, never downloaded.

A shape that none of them gives leaves the model's jobs out of the memory plan; :func:`not_planned`
says so in one line (``gc2po plan`` and the workflow's config check print it). Pure reads of
small files: no model, torch or network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gc2po.workflow.job_shape import MODEL_SHAPES, ModelShape

# the shape: key's fields, with the config.json field each one is read from
SHAPE_FIELDS = {
    "hidden": "hidden_size",
    "layers": "num_hidden_layers",
    "heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "intermediate": "intermediate_size",
    "vocab": "vocab_size",
    "tied_embeddings": "tie_word_embeddings",
    "qkv_bias": "attention_bias",
}
# config.json model types of the decoders the plan models (RMSNorm, GQA attention, SwiGLU MLP,
# head size = hidden / heads) -> whether q/k/v have biases when config.json does not say
DECODER_TYPES = {"llama": False, "mistral": False, "qwen2": True}
REQUIRED_CONFIG_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
)


@dataclass(frozen=True)
class ShapeLookup:
    """A base model's shape and where it came from (``source``), or None and why not."""

    shape: ModelShape | None
    source: str


def _checked(shape: ModelShape, where: str) -> ModelShape:
    """``shape`` when its numbers make a decoder; ValueError naming the field otherwise."""
    for name in ("hidden", "layers", "heads", "kv_heads", "intermediate", "vocab"):
        value = getattr(shape, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}.{name}: must be an int >= 1, got {value!r}")
    if shape.hidden % shape.heads:
        raise ValueError(
            f"{where}.heads: {shape.heads} does not divide hidden {shape.hidden} (head size)"
        )
    if shape.heads % shape.kv_heads:
        raise ValueError(
            f"{where}.kv_heads: {shape.kv_heads} does not divide heads {shape.heads} (GQA groups)"
        )
    return shape


def shape_from_key(entry: dict, where: str) -> ModelShape:
    """The ``shape:`` mapping of a base-model entry (every field of :data:`SHAPE_FIELDS`; the
    schema checks names and types) as a ModelShape; ValueError naming a field that makes none."""
    return _checked(ModelShape(**entry), where)


def shape_from_config_json(data: dict, where: str) -> ModelShape:
    """A ``config.json`` (transformers) as a ModelShape; ValueError saying why the plan cannot
    model it: another architecture, a missing field, or a head size other than hidden / heads."""
    model_type = data.get("model_type")
    if model_type not in DECODER_TYPES:
        raise ValueError(
            f"{where}: model_type {model_type!r} is not one the memory plan models "
            f"({', '.join(sorted(DECODER_TYPES))})"
        )
    missing = [key for key in REQUIRED_CONFIG_KEYS if key not in data]
    if missing:
        raise ValueError(f"{where}: no {missing[0]}")
    hidden, heads = data["hidden_size"], data["num_attention_heads"]
    if data.get("head_dim") not in (None, hidden // heads):
        raise ValueError(
            f"{where}: head_dim {data['head_dim']} is not hidden_size / num_attention_heads "
            f"({hidden // heads}), which the plan assumes"
        )
    shape = ModelShape(
        hidden=hidden,
        layers=data["num_hidden_layers"],
        heads=heads,
        kv_heads=data.get("num_key_value_heads") or heads,
        intermediate=data["intermediate_size"],
        vocab=data["vocab_size"],
        # the default of LlamaConfig, MistralConfig and Qwen2Config (not PretrainedConfig's)
        tied_embeddings=bool(data.get("tie_word_embeddings", False)),
        qkv_bias=bool(data.get("attention_bias", DECODER_TYPES[model_type])),
    )
    return _checked(shape, where)


def cached_config_json(repo_id: str) -> Path | None:
    """``config.json`` of ``repo_id`` in the Hugging Face cache, None when it is not there
    (``try_to_load_from_cache`` reads the cache folder only; it never asks the Hub)."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a repo id (a path that does not exist, say)
        return None
    return Path(found) if isinstance(found, str) else None


def config_json_of(path: str) -> tuple[Path | None, str]:
    """(the config.json to read or None, where it was looked for)."""
    folder = Path(path)
    if folder.is_dir():
        file = folder / "config.json"
        return (file if file.is_file() else None), f"{folder}/config.json"
    return cached_config_json(path), f"config.json of {path} in the Hugging Face cache"


def lookup(label: str, entry: dict) -> ShapeLookup:
    """The shape of base model ``label`` (its config entry), or why there is none."""
    where = f"base_models.{label}.shape"
    if entry.get("shape") is not None:
        return ShapeLookup(shape_from_key(entry["shape"], where), where)
    if entry.get("source") != "hub":
        return ShapeLookup(None, f"source {entry.get('source')} has no Hub config.json")
    path = entry.get("path", "")
    if path in MODEL_SHAPES:
        return ShapeLookup(MODEL_SHAPES[path], "gc2po.workflow.job_shape.MODEL_SHAPES")
    file, looked = config_json_of(path)
    if file is None:
        return ShapeLookup(None, f"no {looked}")
    try:
        data = json.loads(file.read_text())
        return ShapeLookup(shape_from_config_json(data, str(file)), str(file))
    except (OSError, ValueError, TypeError) as err:
        return ShapeLookup(None, str(err))


def not_planned(label: str, entry: dict, found: ShapeLookup) -> str:
    """One line: the model's jobs are left out of the memory plan, why, and the two ways in."""
    path = entry.get("path")
    fetch = f"; or put its config.json in the cache: hf download {path} config.json" if path else ""
    return (
        f"memory plan: base model {label} not planned: no shape known ({found.source}); "
        f"state base_models.{label}.shape{fetch}"
    )
