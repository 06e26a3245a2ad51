"""The audit figure (paper Figure 1c style)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gc2po.testbed.oracle import GROUPS


def plot_audit(
    summaries: dict[str, dict], out_png, rewards=("r_out", "r_cf", "gc2po_score", "gc2po_advantage")
):
    """Figure 1c style: per-group mean of each reward as a standardised effect (group mean minus
    the overall mean, in standard deviations of that reward over all completions, so rewards on
    different scales compare and tiny differences stay tiny) and each reward's correlation with f
    and with p; one column of panels per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(summaries), figsize=(4.2 * len(summaries), 6), squeeze=False)
    for col, (label, summary) in enumerate(summaries.items()):
        ax = axes[0, col]
        width = 0.8 / len(GROUPS)
        for i, group in enumerate(GROUPS):
            values = []
            for reward in rewards:
                mean, std = summary["overall"][reward]
                value = summary["groups"][group][reward][0]
                values.append(0.0 if value != value or std == 0 else (value - mean) / std)
            ax.bar(
                np.arange(len(rewards)) + i * width,
                values,
                width,
                label=f"{group} ({summary['groups'][group]['share']:.0%})",
            )
        ax.set_xticks(np.arange(len(rewards)) + 0.4 - width / 2, rewards, rotation=20, fontsize=7)
        ax.axhline(0, color="gray", linewidth=0.8)
        ax.set_ylabel("group mean - overall (SD)", fontsize=7)
        ax.set_title(f"{label}: group means", fontsize=9)
        ax.legend(fontsize=6)
        ax = axes[1, col]
        corr = summary["correlations"]
        x = np.arange(len(rewards))
        ax.bar(x - 0.2, [corr[r]["pearson_f"] for r in rewards], 0.4, label="cor(R, f)")
        ax.bar(x + 0.2, [corr[r]["pearson_p"] for r in rewards], 0.4, label="cor(R, p)")
        ax.set_xticks(x, rewards, rotation=20, fontsize=7)
        ax.axhline(0, color="gray", linewidth=0.8)
        ax.set_title(f"{label}: Pearson correlation", fontsize=9)
        ax.legend(fontsize=6)
    fig.tight_layout()

    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=150)
    fig.savefig(Path(out_png).with_suffix(".pdf"))
    plt.close(fig)
