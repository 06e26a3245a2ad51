"""Testbed splits on disk: normalised JSONL per split plus a manifest."""

from __future__ import annotations

import hashlib
import json
import random
from fractions import Fraction
from pathlib import Path

from gc2po.testbed.generator import COMPOSE, CueConfig, Problem, generate_splits

RL_TRAIN = "train_rl"  # the RL runs' training set when ``testbed.rl_cued_share`` is set


def with_cued_share(records: list[dict], share: float, seed: int = 0) -> list[dict]:
    """Every uncued record plus as many cued ones (in file order) as make ``share`` of the
    result cued, shuffled with ``seed``: the train split with fewer problems a bet answers."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
        raise ValueError(f"testbed.rl_cued_share: must be a number in [0, 1), got {share!r}")
    uncued = [r for r in records if r["meta"].get("cue") is None]
    cued = [r for r in records if r["meta"].get("cue") is not None]
    exact = Fraction(str(share))  # 0.2 is 1/5: a float product can land just below an integer
    keep = min(len(cued), int(exact * len(uncued) / (1 - exact)))
    out = uncued + cued[:keep]
    random.Random(seed).shuffle(out)
    return out


def write_splits(
    sizes: dict[str, int],
    seed: int,
    out_dir: str | Path,
    cue: dict | None = None,
    rl_cued_share: float | None = None,
) -> dict:
    """Write every split of ``sizes``; ``cue`` is the config's ``testbed.cue`` mapping (frac,
    accuracy; None: no cue). With ``rl_cued_share`` also ``train_rl.jsonl``: the train split cut
    to that share of cued problems (``with_cued_share``), what the RL runs train on while the warm
    start trains on the whole train split."""
    if rl_cued_share is not None:
        with_cued_share([], rl_cued_share)  # a bad share fails before anything is written
    cue_config = cue_from_mapping(cue)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"source": "gc2po.testbed", "seed": seed, "splits": {}}
    if cue_config.frac:
        manifest["cue"] = {"frac": cue_config.frac, "accuracy": cue_config.accuracy}
    splits = {
        split: [p.record() for p in problems]
        for split, problems in generate_splits(sizes, seed, cue_config).items()
    }
    if rl_cued_share is not None:
        splits[RL_TRAIN] = with_cued_share(splits["train"], rl_cued_share, seed)
        manifest["rl_cued_share"] = rl_cued_share
    for split, records in splits.items():
        text = "".join(json.dumps(r) + "\n" for r in records)
        path = out_dir / f"{split}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
        manifest["splits"][split] = {
            "count": len(records),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "ids": [r["id"] for r in records],
        }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def write_compose(
    sizes: dict[str, int], seed: int, size: int, out_path: str | Path, cue: dict | None = None
) -> dict:
    """Write the ``test_compose`` split of ``size`` problems, drawn after the splits of ``sizes``
    (what ``write_splits`` writes, left as they are) to ``out_path``; returns its count and
    sha256. A file apart from the manifest: the workflow adds it without rewriting the others."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(
            f"evaluate.reasoning.compose_size: must be a positive integer, got {size!r}"
        )
    if COMPOSE in sizes:
        raise ValueError(f"testbed.sizes: {COMPOSE} is written on its own (evaluate.reasoning)")
    problems = generate_splits({**sizes, COMPOSE: size}, seed, cue_from_mapping(cue))[COMPOSE]
    text = "".join(json.dumps(p.record()) + "\n" for p in problems)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(out_path)
    return {"count": len(problems), "sha256": hashlib.sha256(text.encode()).hexdigest()}


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
