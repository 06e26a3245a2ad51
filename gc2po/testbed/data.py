"""Testbed splits on disk: normalised JSONL per split plus a manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gc2po.testbed.generator import Problem, generate_splits


def write_splits(sizes: dict[str, int], seed: int, out_dir: str | Path) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"source": "gc2po.testbed", "seed": seed, "splits": {}}
    for split, problems in generate_splits(sizes, seed).items():
        text = "".join(json.dumps(p.record()) + "\n" for p in problems)
        path = out_dir / f"{split}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        manifest["splits"][split] = {"count": len(problems), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                                     "ids": [p.id for p in problems]}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def read_split(path: str | Path) -> list[Problem]:
    from gc2po.train import read_jsonl

    return [Problem.from_record(r) for r in read_jsonl(path)]
