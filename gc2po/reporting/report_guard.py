"""``snakemake --report`` before the workflow has run: one line saying what to run first.

Snakemake's report walks every job its targets need; before a run it warns once for each output
without metadata (dozens of lines) and then fails on the first file marked for the report that
does not exist. The Snakefile calls :func:`install` with the config files it was given, which
puts a check in front of Snakemake's ``auto_report``: when a file the report would show is
missing, it exits with one line naming how many are missing, the first one, and the command that
makes them, before Snakemake's report starts.
"""

from __future__ import annotations

import itertools
import os
import shlex
import sys


def missing_report_files(dag) -> list[str]:
    """The files marked for the report (``report(...)`` outputs of the DAG's jobs) that do not
    exist, in the DAG's order. ``dag``: anything with ``jobs``, each with ``output`` and
    ``input``."""
    from snakemake.io import is_flagged

    missing: list[str] = []
    for job in dag.jobs:
        for path in itertools.chain(job.output, job.input):
            if is_flagged(path, "report") and not os.path.exists(path) and path not in missing:
                missing.append(str(path))
    return missing


def run_first_command(configfiles) -> str:
    """The workflow command with the config files the report was asked with."""
    command = ["snakemake", "--cores", "2"]
    if configfiles:
        shown = [
            os.path.relpath(f) if not os.path.relpath(f).startswith("..") else str(f)
            for f in configfiles
        ]
        command += ["--configfile", *shown]
    return shlex.join(command)


def before_run_message(missing: list[str], configfiles) -> str:
    return (
        f"snakemake --report: {len(missing)} file(s) the report shows do not exist yet "
        f"(the first: {missing[0]}); run the workflow first: {run_first_command(configfiles)}"
    )


def install(configfiles=None) -> None:
    """Check the report's files before Snakemake's report is built (once per process)."""
    import snakemake.report as report

    original = report.auto_report
    if getattr(original, "gc2po_guarded", False):
        return

    async def auto_report(dag, *args, **kwargs):
        missing = missing_report_files(dag)
        if missing:
            print(before_run_message(missing, configfiles), file=sys.stderr)
            raise SystemExit(1)
        return await original(dag, *args, **kwargs)

    auto_report.gc2po_guarded = True
    report.auto_report = auto_report
