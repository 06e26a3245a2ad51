"""Reward audit on the testbed (paper section 3.2, Figure 1c), measured with the oracle.

For sampled completions of a model: final correctness f, process validity p and group
(oracle), the outcome reward R_out, GC2PO's S_sta, S_exp, R_cf (means over the trajectory's
episodes), the GC2PO trajectory score r~ and its group advantage A^. Reported: the mean of each
reward per group with bootstrap CIs, Pearson and Spearman correlations with f and with p, and
the partial correlation with p given f. The perturbation study recomputes R_cf for a grid of
operators and scales on the same completions and ranks them by cor(R_cf, p | f).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from gc2po.core.advantages import grpo_advantage, trajectory_token_rewards
from gc2po.core.counterfactual import counterfactual_reward
from gc2po.episode_states import STATE_CHOICES, flatten, state_table
from gc2po.episodes import segment_completions
from gc2po.testbed.oracle import GROUPS, grade

REWARDS = ("r_out", "s_sta", "s_exp", "r_cf", "gc2po_score", "gc2po_advantage", "grpo_advantage")
DEFAULT_GRID = (
    [[{"name": "dropout", "p": p}] for p in (0.05, 0.1, 0.2, 0.4)]
    + [[{"name": "gaussian", "sigma": s}] for s in (0.05, 0.1, 0.3, 1.0)]
    + [[{"name": "group_mix", "alpha": a}] for a in (0.1, 0.3, 0.6)]
    + [[{"name": "dropout", "p": 0.1}, {"name": "gaussian", "sigma": 0.1}]]
)


@dataclass
class AuditConfig:
    k: int = 8  # completions per problem
    temperature: float = 1.0  # the training rollouts' temperature
    top_p: float = 1.0
    max_new_tokens: int = 96
    seed: int = 0
    p_threshold: float = 0.5
    perturbation: list = field(default_factory=lambda: [{"name": "dropout", "p": 0.1}, {"name": "gaussian", "sigma": 0.1}])
    num_samples: int = 8
    tau: float = 0.1
    lambda_exp: float = 0.9
    lambda_cf: float = 0.8
    trunc_frac: float = 0.05
    answer_topk: int = 64
    study_draws: int = 5  # independent noise draws per perturbation setting of the study
    cf_state: str = "episode_end"  # the states of r_cf and the GC2PO score (gc2po.episode_states)
    lambda_sta: float = 1.0
    eps_u: float = 1e-6
    answer_space: str = "topk"

    @classmethod
    def from_trainer(cls, args, **audit) -> AuditConfig:
        """The audit of a run: R_cf and the GC2PO score computed with the run's own settings
        (``args``: its resolved ``GC2POConfig``); ``audit``: the sampling keys (k, seed, ...)."""
        return cls(temperature=args.temperature, perturbation=args.perturbation_spec(),
                   num_samples=args.num_perturbations, tau=args.cf_tau, lambda_exp=args.lambda_exp,
                   lambda_sta=args.lambda_sta, eps_u=args.cf_eps_u, answer_space=args.answer_space,
                   lambda_cf=args.lambda_cf, trunc_frac=args.trunc_frac, answer_topk=args.answer_topk,
                   cf_state=args.cf_state, **audit)

    def __post_init__(self):
        if not (isinstance(self.study_draws, int) and self.study_draws >= 1):
            raise ValueError(f"audit study_draws must be an integer >= 1, got {self.study_draws!r}")
        if self.cf_state not in STATE_CHOICES:
            raise ValueError(f"audit cf_state must be one of {list(STATE_CHOICES)}, "
                             f"got {self.cf_state!r}")


def spec_name(spec: list[dict]) -> str:
    return "+".join(f"{s['name']}({','.join(f'{k}={v}' for k, v in s.items() if k != 'name')})" for s in spec)


@torch.no_grad()
def completion_states(model, tokenizer, prompt_texts: list[str], completion_ids: list[list[int]], batch_size: int = 32):
    """Log-probs [N, T] and final-norm states [N, T, d] of each completion given its prompt."""
    backbone = getattr(model, model.base_model_prefix)
    lm_head = model.get_output_embeddings()
    width = max(1, max(len(c) for c in completion_ids))
    logps = torch.zeros(len(completion_ids), width)
    states = torch.zeros(len(completion_ids), width, model.config.hidden_size)
    for lo in range(0, len(completion_ids), batch_size):
        chunk = range(lo, min(lo + batch_size, len(completion_ids)))
        prompts = [tokenizer(prompt_texts[i], add_special_tokens=False)["input_ids"] for i in chunk]
        p_len = max(len(p) for p in prompts)
        rows = [[tokenizer.pad_token_id] * (p_len - len(p)) + p + completion_ids[i] + [tokenizer.pad_token_id] * (width - len(completion_ids[i]))
                for p, i in zip(prompts, chunk)]
        attention = [[0] * (p_len - len(p)) + [1] * (len(p) + len(completion_ids[i])) + [0] * (width - len(completion_ids[i]))
                     for p, i in zip(prompts, chunk)]
        ids, att = torch.tensor(rows), torch.tensor(attention)
        hidden = backbone(input_ids=ids, attention_mask=att).last_hidden_state
        logits = lm_head(hidden[:, p_len - 1:-1]).float()
        logps[lo:lo + len(chunk)] = torch.log_softmax(logits, -1).gather(-1, ids[:, p_len:].unsqueeze(-1)).squeeze(-1)
        states[lo:lo + len(chunk)] = hidden[:, p_len:].float()
    return logps, states


def score_rows(model, tokenizer, problems, prompt_texts, generations, config: AuditConfig,
               grid: list[list[dict]] | None = None) -> pd.DataFrame:
    """One row per completion with the oracle's f, p, group and every reward (and, for each
    perturbation of ``grid``, that variant's R_cf)."""
    # a finished completion ends with EOS in training (TRL keeps it in the completion mask), so
    # it does here: every cf_state choice then reads the state training reads
    eos = [tokenizer.eos_token_id]
    completion_ids = [g.token_ids + eos * bool(g.finished) for g in generations]
    logps, states = completion_states(model, tokenizer, [prompt_texts[g.prompt_index] for g in generations], completion_ids)
    width = logps.shape[1]
    ids = torch.tensor([c + [tokenizer.pad_token_id] * (width - len(c)) for c in completion_ids])
    mask = torch.tensor([[t < len(c) for t in range(width)] for c in completion_ids])
    episodes = segment_completions(tokenizer, ids, mask)
    weight = model.get_output_embeddings().weight.detach()
    prompt_of = torch.tensor([g.prompt_index for g in generations])
    special = set(tokenizer.all_special_ids)

    def per_completion(values: torch.Tensor, rows_idx, slots, num_slots) -> torch.Tensor:
        table = torch.zeros(len(generations), num_slots)
        table[rows_idx, slots] = values
        counts = torch.zeros(len(generations)).index_add_(0, rows_idx, torch.ones_like(values))
        means = torch.zeros(len(generations)).index_add_(0, rows_idx, values) / counts.clamp(min=1)
        return table, means

    def cf_at(choice: str, spec, seed):
        """R_cf at the states ``choice`` picks, through the trainer's function: (per-episode
        result, [N, Lmax] table, per-completion mean, the states' (rows, slots, Lmax))."""
        rows_idx, slots, positions, num_slots = flatten(state_table(episodes, ids, choice, special))
        result = counterfactual_reward(
            states[rows_idx, positions], weight, perturbation=spec, num_samples=config.num_samples,
            tau=config.tau, lambda_exp=config.lambda_exp, lambda_sta=config.lambda_sta,
            eps_u=config.eps_u, answer_space=config.answer_space, topk=config.answer_topk,
            temperature=config.temperature, generator=torch.Generator().manual_seed(seed),
            group_index=prompt_of[rows_idx])
        where = (rows_idx, slots, num_slots)
        return (result, *per_completion(result.r_cf, *where), where)

    main, r_cf_table, r_cf_mean, where = cf_at(config.cf_state, config.perturbation, config.seed)
    oracle = [grade(problems[g.prompt_index], g.text, p_threshold=config.p_threshold) for g in generations]
    r_out = torch.tensor([float(o.f) for o in oracle])
    _, traj = trajectory_token_rewards(r_out, episodes.episode_ids, r_cf_table, logps, mask,
                                       lambda_cf=config.lambda_cf, trunc_frac=config.trunc_frac)
    order = torch.tensor([g.prompt_index for g in generations])
    frame = pd.DataFrame({
        "problem_id": [problems[g.prompt_index].id for g in generations],
        "prompt_index": order.tolist(),
        "sample_index": [g.sample_index for g in generations],
        "f": [o.f for o in oracle], "p": [o.p for o in oracle], "group": [o.group for o in oracle],
        "episodes": episodes.num_episodes, "fallback": episodes.used_fallback,
        "r_out": r_out.tolist(), "s_sta": per_completion(main.s_sta, *where)[1].tolist(),
        "s_exp": per_completion(main.s_exp, *where)[1].tolist(), "r_cf": r_cf_mean.tolist(),
        "gc2po_score": traj.float().tolist(),
    })
    frame["gc2po_advantage"] = _group_normalise(frame, "gc2po_score")
    frame["grpo_advantage"] = _group_normalise(frame, "r_out")
    for choice in STATE_CHOICES:  # one noise seed for every choice: they differ by the state only
        frame[f"r_cf@{choice}"] = cf_at(choice, config.perturbation, config.seed)[2].tolist()
    for index, spec in enumerate(grid or []):  # every (setting, draw) has its own noise seed
        for draw in range(config.study_draws):
            seed = config.seed + 1 + index * config.study_draws + draw
            column = f"r_cf[{spec_name(spec)}]#{draw}"
            frame[column] = cf_at(config.cf_state, spec, seed)[2].tolist()
    return frame


def _group_normalise(frame: pd.DataFrame, column: str) -> list[float]:
    """GRPO-style (x - mean) / (std + 1e-4) within each prompt's group of completions."""
    out = pd.Series(0.0, index=frame.index)
    for _, index in frame.groupby("prompt_index").groups.items():
        values = torch.tensor(frame.loc[index, column].to_numpy(), dtype=torch.float64)
        out.loc[index] = grpo_advantage(values.unsqueeze(0)).squeeze(0).numpy()
    return out.tolist()


def spearman(x, y) -> float:
    return pearson(pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy())


def pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    # a constant (up to rounding: residuals of an exact fit) has no correlation
    if x.std() <= 1e-12 * (1 + np.abs(x).max()) or y.std() <= 1e-12 * (1 + np.abs(y).max()):
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def partial_correlation(x, y, z) -> float:
    """Pearson correlation of x and y after regressing each linearly on z (and a constant)."""
    z = np.column_stack([np.ones(len(z)), np.asarray(z, dtype=float)])

    def residual(v):
        v = np.asarray(v, dtype=float)
        coef, *_ = np.linalg.lstsq(z, v, rcond=None)
        return v - z @ coef

    return pearson(residual(x), residual(y))


def bootstrap_mean_ci(values, num_resamples: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(num_resamples, values.size))].mean(1)
    return float(values.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def summarise(frame: pd.DataFrame, rewards=REWARDS) -> dict:
    """Group means with CIs, shares of the groups, and correlations of every reward."""
    groups = {}
    for group in GROUPS:
        part = frame[frame.group == group]
        groups[group] = {"share": len(part) / max(1, len(frame)),
                         **{r: bootstrap_mean_ci(part[r].to_numpy()) for r in rewards}}
    correlations = {r: {"pearson_f": pearson(frame[r], frame.f), "pearson_p": pearson(frame[r], frame.p),
                        "spearman_f": spearman(frame[r], frame.f), "spearman_p": spearman(frame[r], frame.p),
                        "partial_p_given_f": partial_correlation(frame[r], frame.p, frame.f)} for r in rewards}
    overall = {r: [float(frame[r].mean()), float(frame[r].std(ddof=0))] for r in rewards}
    return {"completions": len(frame), "overall": overall, "groups": groups,
            "correlations": correlations, "state_choices": state_choice_study(frame)}


def state_choice_study(frame: pd.DataFrame, num_resamples: int = 1000, seed: int = 0) -> dict:
    """For each cf_state choice (columns ``r_cf@<choice>``): cor(R_cf, p | f) with a 95% CI from a
    bootstrap over problems (a problem's completions are resampled together: they share a
    prompt, so they are not independent), and cor(R_cf, p)."""
    columns = [c for c in frame.columns if c.startswith("r_cf@")]
    if not columns:
        return {}
    problems = frame.problem_id.to_numpy()
    members = [np.flatnonzero(problems == value) for value in pd.unique(problems)]
    rng = np.random.default_rng(seed)
    resamples = [np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
                 for _ in range(num_resamples)]
    out = {}
    for column in columns:
        x, p, f = (frame[c].to_numpy(dtype=float) for c in (column, "p", "f"))
        boot = np.array([partial_correlation(x[i], p[i], f[i]) for i in resamples])
        boot = boot[np.isfinite(boot)]
        low, high = np.quantile(boot, [0.025, 0.975]).tolist() if boot.size else [float("nan")] * 2
        out[column.removeprefix("r_cf@")] = {
            "partial_p_given_f": partial_correlation(x, p, f), "ci_low": low, "ci_high": high,
            "pearson_p": pearson(x, p)}
    return out


def perturbation_study(frame: pd.DataFrame) -> pd.DataFrame:
    """Each perturbation setting's cor(R_cf, p | f) over its independent noise draws (columns
    ``r_cf[<setting>]#<draw>``): mean, standard deviation, min and max over the draws and a 95%
    t-interval of the mean; cor(R_cf, p), cor(R_cf, f) and R_cf's mean and std averaged over
    the draws. Sorted by the mean partial correlation (best first)."""
    from scipy import stats

    draws: dict[str, list[str]] = {}
    for column in frame.columns:
        if column.startswith("r_cf[") and "]#" in column:
            draws.setdefault(column[5:column.rindex("]#")], []).append(column)
    rows = []
    for setting, columns in draws.items():
        partial = np.array([partial_correlation(frame[c], frame.p, frame.f) for c in columns])
        n, mean = len(partial), float(np.mean(partial))
        sd = float(np.std(partial, ddof=1)) if n > 1 else float("nan")
        half = float(stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
        rows.append({"perturbation": setting, "draws": n, "partial_p_given_f": mean, "partial_sd": sd,
                     "partial_ci_low": mean - half, "partial_ci_high": mean + half,
                     "partial_min": float(partial.min()), "partial_max": float(partial.max()),
                     "pearson_p": float(np.mean([pearson(frame[c], frame.p) for c in columns])),
                     "pearson_f": float(np.mean([pearson(frame[c], frame.f) for c in columns])),
                     "mean": float(np.mean([frame[c].mean() for c in columns])),
                     "std": float(np.mean([frame[c].std() for c in columns]))})
    return pd.DataFrame(rows).sort_values("partial_p_given_f", ascending=False, na_position="last")


def run_audit(model_path: str, records: list[dict], config: AuditConfig, *, grid: list[list[dict]] | None = None,
              max_problems: int | None = None, batch_size: int = 64) -> tuple[pd.DataFrame, dict]:
    """Sample ``config.k`` completions per testbed problem, score and summarise them."""
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend, render_prompts
    from gc2po.testbed.generator import Problem
    from gc2po.testbed.warmstart import prompt_messages

    problems = [Problem.from_record(r) for r in records[:max_problems]]
    backend = TransformersBackend.from_pretrained(model_path, batch_size=batch_size)
    messages = [prompt_messages(p) for p in problems]
    sampling = SamplingConfig(n=config.k, temperature=config.temperature, top_p=config.top_p,
                              max_new_tokens=config.max_new_tokens, seed=config.seed)
    generations = backend.generate(messages, sampling)
    prompt_texts = render_prompts(backend.tokenizer, messages)
    frame = score_rows(backend.model, backend.tokenizer, problems, prompt_texts, generations, config, grid)
    return frame, summarise(frame)


def plot_audit(summaries: dict[str, dict], out_png, rewards=("r_out", "r_cf", "gc2po_score", "gc2po_advantage")):
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
            ax.bar(np.arange(len(rewards)) + i * width, values, width, label=f"{group} ({summary['groups'][group]['share']:.0%})")
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
    from pathlib import Path

    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=150)
    fig.savefig(Path(out_png).with_suffix(".pdf"))
    plt.close(fig)
