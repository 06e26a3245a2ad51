"""Write the testbed splits as normalised JSONL plus a manifest."""

from gc2po.testbed.data import write_splits
from gc2po.workflow.script_log import logged

with logged(snakemake) as log:  # noqa: F821
    manifest = write_splits(
        snakemake.params.sizes,  # noqa: F821
        snakemake.params.seed,  # noqa: F821
        snakemake.params.out_dir,  # noqa: F821
        snakemake.params.cue,  # noqa: F821
        snakemake.params.rl_cued_share,  # noqa: F821
    )
    log("wrote " + ", ".join(f"{k} {m['count']}" for k, m in manifest["splits"].items()))
