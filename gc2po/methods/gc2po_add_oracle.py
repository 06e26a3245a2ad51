"""Control (oracle): the corrected GC2PO with R_cf replaced by the testbed oracle's validity of
each episode (a positive control; not in the paper). Everything else is the corrected form's
(lambda_cf, std floor, clip, the group z-score): the only change is the signal, so it shows what
the corrected form can do with a perfect process signal. With ``cf_signal_rho`` noise is added to
the validity to a within-group correlation rho given f (``gc2po.core.signals.mix_to_correlation``;
rho 1 is the plain validity): how good must a process signal be? ``lambda_cf`` is swept too: the
weight at which the plain oracle's bonus outweighs a correct copy's outcome advantage is
calibrated on recorded groups (``gc2po.core.corrected.flip_lambda``,
``benchmarks/method/lambda_calibration.py``). Testbed only.

A preset of the additive form, the same as
``{method: gc2po_add, trainer: {cf_signal: oracle}}``, under the name
earlier configs and results use."""

from __future__ import annotations

import gc2po.methods.gc2po_corrected  # noqa: F401  (registers the form first)
from gc2po.methods.base import register_preset

register_preset(
    "gc2po_add",
    "gc2po_add_oracle",
    "Control (oracle): the corrected GC2PO on the oracle's episode validity instead of R_cf",
    fixed={"cf_signal": "oracle"},
    display_name="Control (oracle): GC2PO (corrected, oracle validity)",
    colour="#e7969c",
    order=94,
    fidelity="not in any paper: a positive control with the testbed oracle's episode "
    "validity; the corrected GC2PO otherwise",
    role="control",
    sweeps=("cf_signal_rho", "lambda_cf"),
    # the signal is mixed within each group: a group's completions must sit on one process
    local_groups=True,
)
