"""SFT warm start of the testbed's tiny model."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import torch  # noqa: E402
from _common import logged  # noqa: E402

from gc2po.testbed.data import read_split  # noqa: E402
from gc2po.testbed.warmstart import WarmStartConfig, warm_start  # noqa: E402

with logged(snakemake) as log:  # noqa: F821
    torch.set_num_threads(snakemake.threads)  # noqa: F821
    problems = read_split(snakemake.input.train)  # noqa: F821
    stats = warm_start(problems, snakemake.output[0], WarmStartConfig(**snakemake.params.warm_start), log=log)  # noqa: F821
    log(stats)
