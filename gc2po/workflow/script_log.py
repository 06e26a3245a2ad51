"""Shared by the workflow scripts (``workflow/scripts/``, imported as a package module, no
``sys.path`` edit): send stdout/stderr and logging to the rule's log file."""

from __future__ import annotations

import contextlib
import logging
import sys


@contextlib.contextmanager
def logged(snakemake):
    path = snakemake.log[0] if snakemake.log else None
    if path is None:
        yield print
        return
    with (
        open(path, "w") as handle,
        contextlib.redirect_stdout(handle),
        contextlib.redirect_stderr(handle),
    ):
        logging.basicConfig(stream=handle, level=logging.INFO, force=True)

        def log(*args):
            print(*args, flush=True)

        try:
            yield log
        except Exception:
            import traceback

            traceback.print_exc()
            raise
    sys.stdout.flush()
