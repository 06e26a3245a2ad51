"""The command line the testbed benchmarks share: a model folder, a split file and numeric
options with their defaults."""

from __future__ import annotations

import argparse


def testbed_parser(doc: str, **defaults: int | float) -> argparse.ArgumentParser:
    """``--model`` and ``--data`` (required), then ``--<name>`` for each default (``max_new_tokens``
    becomes ``--max-new-tokens``), typed like its default."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model folder")
    parser.add_argument("--data", required=True, help="testbed split JSONL")
    for name, default in defaults.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return parser
