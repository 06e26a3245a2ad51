"""Write the resolved run config a training job trains from (what ran is on disk)."""

from pathlib import Path

import yaml

sm = snakemake  # noqa: F821
Path(sm.output[0]).write_text(yaml.safe_dump(sm.params.run, sort_keys=False))
Path(sm.log[0]).write_text(f"wrote {sm.output[0]}\n")
