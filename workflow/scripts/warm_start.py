"""SFT warm start of the testbed's tiny model: a fixed step budget, a fixed thread count
(warm_start.num_threads, not the job's cores), so the model files are the same on any machine
load and any --cores."""

import time

from gc2po.testbed.data import read_split
from gc2po.testbed.warmstart import WarmStartConfig, warm_start
from gc2po.workflow.script_log import logged

with logged(snakemake) as log:  # noqa: F821
    problems = read_split(snakemake.input.train)  # noqa: F821
    start = time.perf_counter()  # logged only: nothing depends on it
    stats = warm_start(
        problems,
        snakemake.output[0],  # noqa: F821
        WarmStartConfig.from_mapping(snakemake.params.warm_start, "testbed.warm_start"),  # noqa: F821
        log=log,
    )
    log({k: v for k, v in stats.items() if k != "loss_history"})
    log(f"wall time {time.perf_counter() - start:.1f} s")
