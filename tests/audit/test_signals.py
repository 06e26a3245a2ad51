"""The signal audit (``gc2po.audit.signals``): the within-problem correlation given f on a
hand-computed frame, the noisy oracle read at its nominal rho, and the episode frame of real
completions scored through the trainer's functions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from gc2po.audit import AuditSampling
from gc2po.audit.signals import (
    SIGNAL_CAPTION,
    TRAINED_SIGNAL_CAPTION,
    episode_frame,
    signal_audit,
    signal_markdown,
    signal_table,
    trained_signal_markdown,
    trained_signal_table,
)
from gc2po.testbed.oracle import grade
from gc2po.training.signals import noisy_oracle
from tests.audit.test_audit import handwritten_generations, run_args


def test_within_problem_correlation_given_f_by_hand():
    # problem a: f = 1 episodes valid 1, 0, 0 with signal 3, 1, 2; f = 0 episodes valid 1, 0 with
    #   signal 5, 5 (constant within its cell: contributes validity variance only)
    #   residuals: valid [2/3, -1/3, -1/3, 1/2, -1/2], signal [1, -1, 0, 0, 0]
    #   cov = (2/3 + 1/3) / 5 = 0.2; var_v = (4/9 + 1/9 + 1/9 + 1/4 + 1/4) / 5 = 0.23333;
    #   var_s = 2/5 = 0.4 -> corr = 0.2 / sqrt(0.09333) = 0.654654
    # problem b: validity constant within f (undefined, left out); problem c: 2 episodes, f = 1,
    #   valid 1, 0, signal 0, 1 -> corr -1. Weighted by episodes: (5 * 0.654654 - 2) / 7
    frame = pd.DataFrame(
        {
            "problem_id": ["a"] * 5 + ["b"] * 3 + ["c"] * 2,
            "f": [1, 1, 1, 0, 0, 1, 1, 0, 1, 1],
            "valid": [1, 0, 0, 1, 0, 1, 1, 0, 1, 0],
            "r_cf@last_content": [3, 1, 2, 5, 5, 1, 2, 3, 0, 1],
        }
    )
    (row,) = signal_audit(frame, num_resamples=200)
    a = 0.2 / math.sqrt(0.4 * (4 / 9 + 1 / 9 + 1 / 9 + 1 / 4 + 1 / 4) / 5)
    assert a == pytest.approx(0.654654, rel=1e-5)
    assert row["rho"] == pytest.approx((5 * a - 2) / 7)
    assert (row["problems"], row["episodes"], row["signal"]) == (2, 10, "r_cf@last_content")
    assert row["ci_low"] == pytest.approx(-1.0) and row["ci_high"] == pytest.approx(a)


def test_the_noisy_oracle_is_audited_at_its_nominal_rho_and_noise_near_zero():
    rng = np.random.default_rng(0)
    problems, k, width = 200, 8, 3
    count = problems * k
    validity = torch.tensor(rng.random((count, width)) < 0.35, dtype=torch.float64)
    f = torch.tensor((rng.random(count) < 0.5).astype(int))
    present = torch.tensor(rng.random((count, width)) < 0.8)
    present[:, 0] = True
    rows, slots = present.nonzero(as_tuple=True)
    columns = {
        "problem_id": (rows // k).tolist(),
        "f": f[rows].tolist(),
        "valid": validity[rows, slots].tolist(),
        "r_cf@noise": rng.normal(size=len(rows)).tolist(),
    }
    for rho in (0.07, 0.3, 1.0):
        table = noisy_oracle(
            validity, present, f, torch.arange(count), k, rho, seed=1, max_episodes=4
        )
        columns[f"oracle(rho={rho})"] = table[rows, slots].tolist()
    audited = {row["signal"]: row for row in signal_audit(pd.DataFrame(columns))}
    for rho in (0.07, 0.3, 1.0):
        row = audited[f"oracle(rho={rho})"]
        assert row["rho"] == pytest.approx(rho, abs=1e-6)
        assert row["ci_low"] <= rho + 1e-9 and rho - 1e-9 <= row["ci_high"]
    noise = audited["r_cf@noise"]
    assert noise["ci_low"] < 0 < noise["ci_high"] and abs(noise["rho"]) < 0.1


def test_the_table_names_each_signal_and_prints_the_ci():
    rows = [
        {"signal": "r_cf@last_content", "rho": 0.05, "ci_low": -0.01, "ci_high": 0.1,
         "rho_unconditional": 0.2, "problems": 40, "episodes": 300},
        {"signal": "oracle(rho=0.3)", "rho": 0.3, "ci_low": 0.3, "ci_high": 0.3,
         "rho_unconditional": 0.25, "problems": 41, "episodes": 300},
        {"signal": "answer_dependence", "rho": -0.2, "ci_low": -0.3, "ci_high": -0.1,
         "rho_unconditional": -0.1, "problems": 40, "episodes": 300},
    ]  # fmt: skip
    table = signal_table([("Base model", "0", rows)])
    assert table.signal.tolist() == [
        "R_cf at last_content",
        "noisy oracle, rho = 0.3 (check)",
        "answer dependence (beyond the paper)",
    ]
    text = signal_markdown(table, SIGNAL_CAPTION)
    assert (
        "| Base model | 0 | R_cf at last_content | +0.050 [-0.010, +0.100] | +0.200 | 40 |" in text
    )


@pytest.mark.slow
def test_the_episode_frame_of_real_completions(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gc2po.audit.batch import cf_at, prepare

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    problem, texts, generations = handwritten_generations(tokenizer)
    args, sampling = run_args(), AuditSampling(k=4, signal_rhos=(0.3, 1.0))
    batch = prepare(model, tokenizer, ["<|user|>q\n<|assistant|>"], generations, args, sampling)
    frame = episode_frame(batch, [problem], generations, args, sampling, model, tokenizer, cf_at)
    # 2 + 2 + 2 episodes and one fallback piece; validity by the oracle, episode by episode
    assert frame.sample_index.tolist() == [0, 0, 1, 1, 2, 2, 3]
    assert frame.episode.tolist() == [0, 1, 0, 1, 0, 1, 0]
    slip = list(grade(problem, texts[1]).episode_valid)
    assert frame.valid.tolist() == [1, 1, *slip, 0, 0, 0] and sum(slip) == 1
    assert frame.f.tolist() == [1, 1, 0, 0, 1, 1, 0]
    for column in ("r_cf@last_content", "r_cf@episode_end", "answer_dependence", "oracle(rho=0.3)"):
        assert np.isfinite(frame[column]).all(), column
    assert frame.answer_dependence.abs().sum() > 0
    # the form-matched controls' columns and what the cue view reads
    for column in ("format", "readout", "oracle_every(rho=0.3)"):
        assert np.isfinite(frame[column]).all(), column
    assert frame.format.isin([0.0, 1.0]).all() and frame.readout.abs().max() <= 1 + 1e-9
    assert frame.equation.tolist() == (frame.format == 1).tolist()
    assert not frame.cued.any() and not frame["copy"].any()  # the handwritten problem has no bet
    # R_cf per episode averages to the completion audit's R_cf per completion
    per_completion = frame.groupby("sample_index")["r_cf@episode_end"].mean()
    perturbation = args.counterfactual_params().perturbation
    expected = cf_at(batch, args, "episode_end", perturbation, 0)[2]
    assert per_completion.tolist() == pytest.approx(expected.tolist(), abs=1e-6)


def _audit_row(signal: str, rho: float, floor: float) -> dict:
    return {"signal": signal, "rho": rho, "ci_low": rho - 0.1, "ci_high": rho + 0.1,
            "rho_unconditional": rho, "problems": 40, "episodes": 300, "tq": rho / 2,
            "tq_ci_low": 0.0, "tq_ci_high": rho, "rms_z": 0.9, "aligned": 0.9 * rho / 2,
            "step_matched": rho / 3, "step_matched_ci_low": 0.0, "step_matched_ci_high": rho,
            "floor_binds": floor, "groups": 100}  # fmt: skip


def test_the_trained_signal_table_follows_each_run_over_its_checkpoints():
    audits = [
        ("Base model", "0", [_audit_row("operand_sensitivity", 0.45, 0.05),
                             _audit_row("r_cf@result", 0.08, 0.94)]),
        ("Gated operand", "end", [_audit_row("operand_sensitivity", 0.30, 0.01),
                                  _audit_row("r_cf@result", 0.09, 0.9)]),
        ("Gated operand", "30", [_audit_row("operand_sensitivity", 0.25, 0.02)]),
        ("Gated R_cf", "30", [_audit_row("r_cf@result", 0.07, 0.95)]),
    ]  # fmt: skip
    table = signal_table(audits)
    trained = trained_signal_table(
        table,
        {"Gated operand": "operand_sensitivity", "Gated R_cf": "r_cf@result", "Absent": "x"},
    )
    # each run: the base model's row of its signal, then its checkpoints in step order, end last
    assert list(zip(trained.run, trained.model, trained.step, trained.rho)) == [
        ("Gated operand", "Base model", "0", 0.45),
        ("Gated operand", "Gated operand", "30", 0.25),
        ("Gated operand", "Gated operand", "end", 0.30),
        ("Gated R_cf", "Base model", "0", 0.08),
        ("Gated R_cf", "Gated R_cf", "30", 0.07),
    ]
    text = trained_signal_markdown(trained, TRAINED_SIGNAL_CAPTION)
    assert (
        "| Gated operand | operand sensitivity (beyond the paper) | step 30 | "
        "+0.250 [+0.150, +0.350] | +0.125 [+0.000, +0.250] |" in text
    )
    assert "| Gated R_cf | R_cf at result | base | +0.080 [-0.020, +0.180] |" in text
    assert "| Gated operand | operand sensitivity (beyond the paper) | end |" in text
    # no audited run trains on a signal: an empty table with the same columns, no error
    empty = trained_signal_table(table, {})
    assert empty.empty and "run" in empty.columns
