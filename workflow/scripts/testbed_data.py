"""Write the testbed splits as normalised JSONL plus a manifest."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.testbed.data import write_splits  # noqa: E402

with logged(snakemake) as log:  # noqa: F821
    manifest = write_splits(
        snakemake.params.sizes,  # noqa: F821
        snakemake.params.seed,  # noqa: F821
        snakemake.params.out_dir,  # noqa: F821
        snakemake.params.cue,  # noqa: F821
    )
    log(f"wrote {sum(m['count'] for m in manifest['splits'].values())} problems")
