"""The testbed recipe search: does RL raise *uncued* test_id pass@1 (problems a bet cannot
answer) over the base model? One run per seed: ``gc2po train`` of a method from a model with
trainer overrides, on the train split or on a copy of it with a chosen share of cued problems,
then the run and the base model sampled on test_id with the same sampling seed (paired), reported
as uncued / cued pass@1 and the copy share (completions that start by copying the bet).

    python benchmarks/testbed/testbed_recipe.py --model resources/testbed/models/testbed \\
        --data resources/testbed/data/train.jsonl --test resources/testbed/data/test_id.jsonl \\
        --out /tmp/recipe --method grpo --seeds 0 1 2 [--cued-share 0.2] \\
        [--set learning_rate=5e-5 --set max_steps=40]

A warm start other than the workflow's (``--warm-start '{"epochs": 16}'``, WarmStartConfig
fields over the default config's) is trained first into ``OUT/warm_start`` from ``--data``.
Each line printed is one seed: ``seed s: base uncued X, run uncued Y (Y - X), cued, copy``.
With ``--every K`` the run keeps a checkpoint every K steps and each is evaluated too (a learning
curve), one line each before the seed's line: ``seed s step k: uncued Y (Y - X), cued, copy``.
With ``--greedy`` the base and the run are also decoded greedily (n = 1, temperature 0), a
second line per seed: ``seed s greedy: base uncued X, run uncued Y (Y - X); cued``: the gain
that is not a sharper sampling distribution. With ``--reuse`` a seed whose ``OUT/seed<s>/final``
exists is evaluated without training again, and an existing ``OUT/warm_start`` is kept (the
command that made them, plus ``--reuse``, re-evaluates a finished search).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def default_recipe(config_file: Path) -> tuple[dict, dict]:
    """The trainer settings (``train.trainer``) and warm start (``testbed.warm_start``) of a
    config file, the embedded default's unless ``--config`` names another."""
    config = yaml.safe_load(config_file.read_text())
    try:
        return dict(config["train"]["trainer"]), dict(config["testbed"]["warm_start"])
    except (KeyError, TypeError) as missing:
        raise SystemExit(
            f"{config_file}: no train.trainer or testbed.warm_start ({missing})"
        ) from None


def parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return yaml.safe_load(text)  # YAML reads 3e-4 as a string: numbers are cast above


def with_cued_share(records: list[dict], share: float, seed: int = 0) -> list[dict]:
    """The workflow's cut (``gc2po.testbed.data.with_cued_share``, ``testbed.rl_cued_share``)."""
    from gc2po.testbed.data import with_cued_share as cut

    if not 0 <= share < 1:
        raise SystemExit(f"--cued-share must be in [0, 1), got {share}")
    return cut(records, share, seed)


def checkpoint_settings(max_steps: int, every: int) -> dict:
    """Trainer settings that keep every checkpoint of a curve (the run config's default
    rotation keeps the last two)."""
    return {"save_steps": every, "save_total_limit": max(1, max_steps // every)}


def checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """(step, folder) of a run's ``checkpoint-<step>`` folders, in step order."""
    found = [(int(p.name.split("-")[1]), p) for p in run_dir.glob("checkpoint-*")]
    return sorted(found)


def evaluate(model: str, test: list[dict], seed: int, n: int, greedy: bool = False) -> dict:
    from gc2po.evaluation.backends import SamplingConfig, TransformersBackend
    from gc2po.evaluation.run import generate_and_grade

    backend = TransformersBackend.from_pretrained(model, batch_size=128)
    sampling = SamplingConfig(  # greedy: one decode per problem at temperature 0
        n=1 if greedy else n,
        temperature=0.0 if greedy else 1.0,
        top_p=1.0,
        max_new_tokens=96,
        seed=seed,
    )
    _, samples = generate_and_grade(backend, test, "testbed", sampling)
    cued = {r["id"]: r["meta"].get("cue") is not None for r in test}
    right = {True: [], False: []}
    for s in samples:
        right[cued[s["problem_id"]]].append(int(s["correct"]))
    copies = sum(s["completion"].startswith("<episode_1>bet=") for s in samples)
    return {
        "uncued": 100 * sum(right[False]) / max(1, len(right[False])),
        "cued": 100 * sum(right[True]) / max(1, len(right[True])),
        "copy": 100 * copies / len(samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--config",
        type=Path,
        default=ROOT / "config" / "config.yaml",
        help="the config whose train.trainer and testbed.warm_start are the starting recipe",
    )
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True, help="the train split (JSONL)")
    parser.add_argument("--test", required=True, help="test_id (JSONL)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--method", default="grpo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cued-share", type=float)
    parser.add_argument("--warm-start", help="WarmStartConfig fields (JSON) over the default's")
    parser.add_argument("--n", type=int, default=4, help="samples per test problem")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--every", type=int, help="also evaluate a checkpoint every this many steps (a curve)"
    )
    parser.add_argument(
        "--greedy", action="store_true", help="also evaluate base and run greedily (a 2nd line)"
    )
    parser.add_argument(
        "--reuse", action="store_true", help="keep an existing OUT/warm_start and OUT/seed*/final"
    )
    args = parser.parse_args()
    if args.every is not None and args.every < 1:
        raise SystemExit(f"--every must be a positive number of steps, got {args.every}")

    import torch

    from gc2po.data.jsonl import read_jsonl

    torch.set_num_threads(1)
    default_trainer, default_warm_start = default_recipe(args.config)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = read_jsonl(args.data)
    model = args.model
    if args.warm_start and args.reuse and (out / "warm_start" / "model.safetensors").exists():
        model = str(out / "warm_start")
        print(f"warm start {json.loads(args.warm_start)}: reused {model}")
    elif args.warm_start:
        from gc2po.testbed.generator import Problem
        from gc2po.testbed.warmstart import WarmStartConfig, warm_start

        config = WarmStartConfig.from_mapping({**default_warm_start, **json.loads(args.warm_start)})
        model = str(out / "warm_start")
        stats = warm_start(
            [Problem.from_record(r) for r in records], model, config, log=lambda m: None
        )
        print(f"warm start {json.loads(args.warm_start)}: final loss {stats['final_loss']}")
    train = out / "train.jsonl"
    chosen = records if args.cued_share is None else with_cued_share(records, args.cued_share)
    train.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    trainer = {**default_trainer, "save_steps": 1000}  # no checkpoints: only the final model
    for item in args.set:
        key, _, value = item.partition("=")
        trainer[key] = parse_value(value)
    if args.every:
        trainer.update(checkpoint_settings(int(trainer["max_steps"]), args.every))
    test = read_jsonl(args.test)
    for seed in args.seeds:
        run_dir = out / f"seed{seed}"
        run = {
            "model": model,
            "train_data": str(train),
            "task": "testbed",
            "seed": seed,
            "output_dir": str(run_dir),
            "method": args.method,
            "resume": False,
            "overwrite": True,
            "trainer": trainer,
        }
        trained_before = args.reuse and (run_dir / "final" / "model.safetensors").exists()
        if not trained_before:
            (out / f"run{seed}.yaml").write_text(yaml.safe_dump(run))
            command = ["-m", "gc2po.cli", "train", "--config", str(out / f"run{seed}.yaml")]
            done = subprocess.run([sys.executable, *command], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"seed {seed}: gc2po train failed:\n{done.stderr[-2000:]}")
        base = evaluate(model, test, seed, args.n)
        if args.every:
            for step, folder in checkpoints(run_dir):
                point = evaluate(str(folder), test, seed, args.n)
                print(
                    f"seed {seed} step {step}: uncued {point['uncued']:.1f} "
                    f"({point['uncued'] - base['uncued']:+.1f}); cued {point['cued']:.1f}; "
                    f"copy {point['copy']:.1f}",
                    flush=True,
                )
        trained = evaluate(str(run_dir / "final"), test, seed, args.n)
        print(
            f"seed {seed}: base uncued {base['uncued']:.1f}, run uncued {trained['uncued']:.1f} "
            f"({trained['uncued'] - base['uncued']:+.1f}); cued {base['cued']:.1f} -> "
            f"{trained['cued']:.1f}; copy {base['copy']:.1f} -> {trained['copy']:.1f}",
            flush=True,
        )
        if args.greedy:
            base = evaluate(model, test, seed, 1, greedy=True)
            trained = evaluate(str(run_dir / "final"), test, seed, 1, greedy=True)
            print(
                f"seed {seed} greedy: base uncued {base['uncued']:.1f}, run uncued "
                f"{trained['uncued']:.1f} ({trained['uncued'] - base['uncued']:+.1f}); cued "
                f"{base['cued']:.1f} -> {trained['cued']:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
