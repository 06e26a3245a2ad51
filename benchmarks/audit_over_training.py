"""The reward audit over training, as a table: for every audited model of a workflow run, at
the start (the base model, step 0), at each audited checkpoint and at the end (the final model),
cor(R_cf, p | f) at every ``cf_state`` with its 95% CI over problems, the shares of the four
groups and the mean R_cf and paper-form GC2PO advantage of each group (audit summaries written
by the workflow's ``audit`` and ``audit_checkpoint`` rules).

    python benchmarks/audit_over_training.py --results results/testbed_study

The groups' R_cf is the audit's main one, read at the ``cf_state`` of its reward run
(``audit.reward_run``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gc2po.layout import AuditDir, audit_of_summary
from gc2po.reporting.names import method_name
from gc2po.testbed.oracle import GROUPS
from gc2po.training.episode_states import STATE_CHOICES


def signed(value: float, digits: int = 3) -> str:
    """``+0.123``, or ``n/a`` where the audit has no value (a group or correlation left empty)."""
    return "n/a" if value != value else f"{value:+.{digits}f}"


def audits(results: Path) -> list[tuple[str, int | None, dict]]:
    """(model, step or None for its final model / the base model, summary), in a stable order."""
    found = []
    for path in sorted(results.glob(f"audit/*/*/seed*/**/{AuditDir.SUMMARY}")):
        where = audit_of_summary(path)
        found.append((where.model, getattr(where, "step", None), json.loads(path.read_text())))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, type=Path, help="results/<name> of a run")
    ns = parser.parse_args()
    rows = audits(ns.results)
    if not rows:
        raise SystemExit(f"{ns.results}: no audit summaries (audit/<base>/<model>/seed<k>/...)")
    final_step = "end"
    print(
        "| model | step | "
        + " | ".join(f"cor(R_cf, p given f) at {c}" for c in STATE_CHOICES)
        + " |"
    )
    print("|---|---|" + "---|" * len(STATE_CHOICES))
    for model, step, summary in rows:
        where = "0" if model == "base" else str(step) if step is not None else final_step
        cells = []
        for choice in STATE_CHOICES:
            r = summary["state_choices"][choice]
            cells.append(
                f"{signed(r['partial_p_given_f'])} [{signed(r['ci_low'])}, {signed(r['ci_high'])}]"
            )
        print(f"| {method_name(model)} | {where} | " + " | ".join(cells) + " |")
    print()
    print("| model | step | " + " | ".join(f"{g}: share, R_cf, A (paper)" for g in GROUPS) + " |")
    print("|---|---|" + "---|" * len(GROUPS))
    for model, step, summary in rows:
        where = "0" if model == "base" else str(step) if step is not None else final_step
        cells = []
        for group in GROUPS:
            g = summary["groups"][group]
            share, r_cf, advantage = g["share"], g["r_cf"][0], g["gc2po_advantage"][0]
            cells.append(f"{100 * share:.1f}%, {signed(r_cf)}, {signed(advantage, 2)}")
        print(f"| {method_name(model)} | {where} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
