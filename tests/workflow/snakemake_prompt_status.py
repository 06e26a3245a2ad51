"""``python snakemake_prompt_status.py ARGS`` is ``python -m snakemake ARGS`` with the SLURM
executor plugin checking job status at least every ``MAX_SECONDS_BETWEEN_STATUS_CHECKS`` seconds.

The plugin (2.8) waits 10 s longer after every status check in which no job finished, up to
180 s, a pace meant for a shared cluster's controller. No setting changes that step: its first
delay is ``slurm-init-seconds-before-status-checks`` and Snakemake's
``--seconds-between-status-checks`` is used only while the plugin has set no delay of its own. On
the tests' one-node cluster, whose jobs last seconds, the growing delay left the node idle between
a job's end and the submission of the jobs waiting on it (up to 22 s after the warm start of the
ci tables, a serial step) and made the tests wait for the last jobs' ends. Only when the submit
host looks changes: what it submits, how it reads a job's state and what it does with it are the
plugin's, unchanged.
"""

from __future__ import annotations

import sys

MAX_SECONDS_BETWEEN_STATUS_CHECKS = 2  # squeue on the local cluster answers in a few ms


def _cap_status_check_delay() -> None:
    from snakemake_executor_plugin_slurm import Executor

    delay = Executor.next_seconds_between_status_checks  # RemoteExecutor's property
    Executor.next_seconds_between_status_checks = property(
        delay.fget,
        lambda executor, seconds: delay.fset(
            executor, min(seconds, MAX_SECONDS_BETWEEN_STATUS_CHECKS)
        ),
    )


if __name__ == "__main__":
    _cap_status_check_delay()
    from snakemake.cli import main

    sys.exit(main())
