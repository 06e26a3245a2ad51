"""Writing normalised records (see :mod:`gc2po.data.benchmarks`) as JSONL with a manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def write_normalised(
    records: list[dict],
    out_path: str | Path,
    *,
    source: str,
    seed: int | None = None,
    extra: dict | None = None,
) -> dict:
    """Write records as JSONL and ``<out>.manifest.json`` (source, count, sha256, seed, ids, and
    ``extra`` fields such as the rows dropped as overlapping an evaluation set).

    Written to temporary files first, so a failure leaves no partial output.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    manifest = {
        "source": source,
        "count": len(records),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "seed": seed,
        "ids": [r["id"] for r in records],
        **(extra or {}),
    }
    manifest_path = Path(str(out_path) + ".manifest.json")
    tmp, tmp_manifest = out_path.with_suffix(".tmp"), manifest_path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp_manifest.write_text(json.dumps(manifest, indent=1))
    tmp.replace(out_path)
    tmp_manifest.replace(manifest_path)
    return manifest
