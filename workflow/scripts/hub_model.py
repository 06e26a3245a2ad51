"""Fetch a Hub base model into the Hugging Face cache (a localrule: on a cluster it runs on the
submit host), so that training and evaluation jobs load the same Hub id offline; record which
snapshot was cached. A local folder is recorded as it is."""

import json
import os
from pathlib import Path

from gc2po.workflow.script_log import logged

# what transformers, tokenizers and vLLM read; skips duplicate .bin/.pt/.gguf/.onnx weights
MODEL_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja"]

sm = snakemake  # noqa: F821
with logged(sm) as log:
    repo = sm.params.repo
    if os.path.isdir(repo):
        record = {"path": repo, "local_folder": True}
    else:
        from huggingface_hub import snapshot_download

        snapshot = Path(snapshot_download(repo_id=repo, allow_patterns=MODEL_FILES))
        files = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file())
        if not any(name.endswith(".safetensors") for name in files):
            raise ValueError(
                f"base model {repo}: the Hub snapshot {snapshot.name} has no *.safetensors weights "
                f"(files: {files}); point base_models.<label>.path at a converted local folder"
            )
        record = {
            "path": repo,
            "revision": snapshot.name,
            "snapshot": str(snapshot),
            "files": files,
        }
    Path(sm.output[0]).write_text(json.dumps(record, indent=1) + "\n")
    log(f"{repo}: {record}")
