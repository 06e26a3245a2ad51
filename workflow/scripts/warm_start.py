"""The testbed's base model: the shipped artifact of this recipe (data/base_models/, each file's
sha256 checked), or, for a recipe no artifact has (or the rebuild target), the SFT warm start
trained here: a fixed step budget and a fixed thread count (warm_start.num_threads, not the
job's cores), so the model files are the same on any machine load and any --cores, though not
on every CPU (gc2po.testbed.base_models)."""

import time
from pathlib import Path

from gc2po.testbed import base_models
from gc2po.testbed.data import read_split
from gc2po.testbed.warmstart import WarmStartConfig, warm_start
from gc2po.workflow.script_log import logged

with logged(snakemake) as log:  # noqa: F821
    config = WarmStartConfig.from_mapping(snakemake.params.warm_start, "testbed.warm_start")  # noqa: F821
    out_dir, train = snakemake.output[0], snakemake.input.train  # noqa: F821
    # data/base_models/ of the repository this script belongs to (workflow/scripts/)
    artifacts = Path(snakemake.scriptdir).resolve().parents[1] / "data" / "base_models"  # noqa: F821
    look = snakemake.params.shipped  # noqa: F821  (False: the rebuild target trains here)
    shipped = base_models.install_or_none(artifacts, config, train, out_dir) if look else None
    if shipped is not None:
        log(
            f"installed the shipped base model {shipped['artifact']} (recipe "
            f"{shipped['recipe_hash']}; {len(shipped['files'])} files, sha256 checked)"
        )
    else:
        wanted = base_models.recipe_hash(base_models.recipe(config, train))
        log(
            f"training recipe {wanted} here"
            + (" (no shipped base model has it)" if look else "")
            + ": its bytes depend on this CPU's kernels"
        )
        start = time.perf_counter()  # logged only: nothing depends on it
        stats = warm_start(read_split(train), out_dir, config, log=log)
        base_models.trained_provenance(config, train, out_dir)
        log({k: v for k, v in stats.items() if k != "loss_history"})
        log(f"wall time {time.perf_counter() - start:.1f} s")
