"""Row sources behind one interface, so a seeded subset of a large dataset is chosen before its
rows are materialised: ``len(source)``, ``source.batches(columns)`` (the named columns of every
row, a batch at a time) and ``source.take(indices, columns)`` (only those rows).

Parquet files are read with pyarrow a record batch (or a row group) at a time; Hub and
``save_to_disk`` datasets are Arrow tables on disk (memory-mapped) read through ``datasets``;
JSON / JSONL files are small and read whole.
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]
BATCH_ROWS = 4096


def _only(row: Row, columns: Sequence[str] | None) -> Row:
    return row if columns is None else {k: row[k] for k in columns if k in row}


class ListSource:
    """Rows already in memory (a JSON list or JSONL file)."""

    def __init__(self, rows: list):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def batches(self, columns=None) -> Iterator[list]:
        for lo in range(0, len(self.rows), BATCH_ROWS):
            yield [
                _only(r, columns) if isinstance(r, dict) else r
                for r in self.rows[lo : lo + BATCH_ROWS]
            ]

    def take(self, indices: Sequence[int], columns=None) -> list:
        return [_only(self.rows[i], columns) for i in indices]


class ParquetSource:
    """A parquet file: batches of the needed columns; ``take`` streams only the row groups that
    hold a wanted row, a batch at a time (a file written as one huge row group stays cheap)."""

    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        self.path = path
        self.file = pq.ParquetFile(path)
        self.group_starts = [0]
        for g in range(self.file.num_row_groups):
            self.group_starts.append(
                self.group_starts[-1] + self.file.metadata.row_group(g).num_rows
            )

    def __len__(self) -> int:
        return self.group_starts[-1]

    def _columns(self, columns):
        names = self.file.schema_arrow.names
        return None if columns is None else [c for c in columns if c in names]

    def batches(self, columns=None) -> Iterator[list]:
        for batch in self.file.iter_batches(batch_size=BATCH_ROWS, columns=self._columns(columns)):
            yield batch.to_pylist()

    def take(self, indices: Sequence[int], columns=None) -> list:
        wanted = sorted(set(indices))
        groups = sorted({bisect.bisect_right(self.group_starts, i) - 1 for i in wanted})
        rows, cursor = {}, 0
        for group in groups:  # stream the row groups that hold a wanted row, a batch at a time
            position = self.group_starts[group]
            for batch in self.file.iter_batches(
                batch_size=BATCH_ROWS, row_groups=[group], columns=self._columns(columns)
            ):
                end = position + batch.num_rows
                local = []
                while cursor < len(wanted) and wanted[cursor] < end:
                    local.append(wanted[cursor] - position)
                    cursor += 1
                if local:
                    rows.update(zip((position + i for i in local), batch.take(local).to_pylist()))
                position = end
        return [rows[i] for i in indices]


class DatasetSource:
    """A ``datasets.Dataset`` (Hub download or ``save_to_disk``): Arrow on disk, memory-mapped."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def _view(self, columns):
        if columns is None:
            return self.dataset
        return self.dataset.select_columns([c for c in columns if c in self.dataset.column_names])

    def batches(self, columns=None) -> Iterator[list]:
        for batch in self._view(columns).iter(batch_size=BATCH_ROWS):
            names = list(batch)
            yield [dict(zip(names, values)) for values in zip(*(batch[n] for n in names))]

    def take(self, indices: Sequence[int], columns=None) -> list:
        return [dict(row) for row in self._view(columns).select(indices)]


class ConcatSource:
    """Several sources read as one (a folder of files), in order."""

    def __init__(self, parts: list):
        self.parts = parts
        self.starts = [0]
        for part in parts:
            self.starts.append(self.starts[-1] + len(part))

    def __len__(self) -> int:
        return self.starts[-1]

    def batches(self, columns=None) -> Iterator[list]:
        for part in self.parts:
            yield from part.batches(columns)

    def take(self, indices: Sequence[int], columns=None) -> list:
        rows = {}
        for p, part in enumerate(self.parts):
            wanted = [i for i in indices if self.starts[p] <= i < self.starts[p + 1]]
            if wanted:
                rows.update(zip(wanted, part.take([i - self.starts[p] for i in wanted], columns)))
        return [rows[i] for i in indices]


def read_json_rows(path: Path) -> list:
    """Rows of a .json list, .jsonl or .jsonl.gz file; errors name the file (and row)."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read: {err}") from err
    if path.suffix == ".json" and text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: invalid JSON: {err}") from err
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: row {number}: invalid JSON: {err}") from err
    return rows


def open_local(path: Path):
    """A local file or folder in any supported layout as a row source."""
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "state.json").exists():
            from datasets import load_from_disk

            return DatasetSource(load_from_disk(str(path)))
        files = sorted(
            p for p in path.iterdir() if p.suffix in (".json", ".jsonl", ".parquet", ".gz")
        )
        if not files:
            raise ValueError(f"{path}: no .json, .jsonl, .jsonl.gz or .parquet file in this folder")
        return ConcatSource([open_local(f) for f in files])
    if path.suffix == ".parquet":
        try:
            return ParquetSource(path)
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: cannot read: {err}") from err
    return ListSource(read_json_rows(path))


def open_hub(hub_id: str, config: str | None, split: str):
    from datasets import load_dataset

    return DatasetSource(load_dataset(hub_id, config, split=split))
