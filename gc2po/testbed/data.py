"""Testbed splits on disk: normalised JSONL per split plus a manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gc2po.testbed.generator import CueConfig, Problem, generate_splits


def write_splits(
    sizes: dict[str, int], seed: int, out_dir: str | Path, cue: dict | None = None
) -> dict:
    """Write every split of ``sizes``; ``cue`` is the config's ``testbed.cue`` mapping (frac,
    accuracy; None: no cue)."""
    cue_config = cue_from_mapping(cue)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"source": "gc2po.testbed", "seed": seed, "splits": {}}
    if cue_config.frac:
        manifest["cue"] = {"frac": cue_config.frac, "accuracy": cue_config.accuracy}
    for split, problems in generate_splits(sizes, seed, cue_config).items():
        text = "".join(json.dumps(p.record()) + "\n" for p in problems)
        path = out_dir / f"{split}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        manifest["splits"][split] = {
            "count": len(problems),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "ids": [p.id for p in problems],
        }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def cue_from_mapping(values: dict | None, where: str = "testbed.cue") -> CueConfig:
    """``testbed.cue`` as a CueConfig; an unknown key fails naming it."""
    values = values or {}
    unknown = sorted(set(values) - {"frac", "accuracy"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; valid: ['accuracy', 'frac']")
    return CueConfig(**values)


def read_split(path: str | Path) -> list[Problem]:
    from gc2po.data.jsonl import read_jsonl

    return [Problem.from_record(r) for r in read_jsonl(path)]
