"""The TRL adapter on a tiny random model: every method trains and its advantages are its core
entry point's; GC2PO on-policy costs no forward pass over TRL's GRPO; resume; unscored
completions; bad configs fail early."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import TrainerCallback

from gc2po.core.advantages import gc2po_token_advantages
from gc2po.core.baselines import gcpo_advantages, length_penalty_advantages
from gc2po.core.corrected import additive_token_advantages
from gc2po.core.gated import gated_reward
from gc2po.core.groups import dr_grpo_advantage, grpo_advantage
from gc2po.core.signals_policy import episode_presence, gated_signal
from gc2po.core.step_baselines import mrt_token_advantages, rest_selection
from gc2po.methods import METHODS, gcpo, mrt, rest_mcts
from gc2po.methods.mrt import boundaries
from gc2po.training import signals_policy
from gc2po.training.run_config import build_args
from gc2po.training.signals import table_width
from tests.training.conftest import SMALL, record_advantages


def expected_advantages(method: str, batch, services_log: dict, config) -> torch.Tensor:
    """Each method's core entry point on the batch training saw (one process, rows in order)."""
    K, rewards = batch.group_size, batch.rewards
    if method.startswith("gc2po_add"):
        return additive_token_advantages(
            rewards,
            batch.episode_ids,
            batch.r_cf,
            batch.completion_mask,
            group_size=K,
            lambda_cf=config.lambda_cf,
            cf_std_floor=config.cf_std_floor,
            cf_z_clip=config.cf_z_clip,
            row_index=batch.row_index,
        ).token_advantages
    if method == "grpo_gated":  # GRPO on f x the mean share of its siblings' steps R_cf reaches
        ids = torch.where(batch.completion_mask.bool(), batch.episode_ids, -1)
        present = episode_presence(ids, batch.r_cf.shape[1])
        group = batch.row_index // K
        gated = gated_reward(rewards, batch.r_cf, present, group, rank=True).to(rewards)
        return grpo_advantage(gated.view(-1, K)).reshape(-1)
    if method == "grpo_gated_agree":  # GRPO on f x the mean sibling agreement of its episodes
        gated = gated_signal(batch.r_cf, batch.episode_ids, rewards).to(rewards)
        return grpo_advantage(gated.view(-1, K)).reshape(-1)
    if method == "grpo_fxp":  # GRPO on its own reward (f x p; f x p_rho with cf_signal_rho)
        reward = rewards if config.cf_signal_rho is None else batch.r_cf[:, 0].to(rewards)
        return grpo_advantage(reward.view(-1, K)).reshape(-1)
    if METHODS[method].needs_cf:
        return gc2po_token_advantages(
            rewards,
            batch.episode_ids,
            batch.r_cf,
            batch.old_logps,
            batch.completion_mask,
            group_size=K,
            lambda_cf=config.lambda_cf,
            trunc_frac=config.trunc_frac,
            adv_clip=config.adv_clip,
            episode_weight_norm=config.episode_weight_norm,
            row_index=batch.row_index,
        ).token_advantages
    grouped = rewards.view(-1, K)
    if method == "grpo":
        return grpo_advantage(grouped).reshape(-1)
    if method in ("dr_grpo", "gvpo"):
        return dr_grpo_advantage(grouped).reshape(-1)
    if method == "length_penalty":
        return length_penalty_advantages(
            grouped, batch.lengths.view(-1, K).float(), config.method_settings.alpha
        ).reshape(-1)
    if method == "mrt":
        rows, slots, _, num_episodes, step_ends = boundaries(batch.episode_ids)
        success = torch.zeros(step_ends.shape)
        success[torch.tensor(rows), torch.tensor(slots)] = services_log["forced_answer_success"]
        return mrt_token_advantages(
            success,
            num_episodes,
            step_ends,
            rewards,
            batch.completion_mask,
            group_size=K,
            alpha=config.method_settings.alpha,
        )[0]
    if method == "rest_mcts":
        states = batch.states
        min_value = torch.full((rewards.shape[0],), float("inf")).scatter_reduce(
            0, states.rows, services_log["fit_value_head"], "amin"
        )
        return rest_selection(rewards, min_value, K, config.method_settings.min_value)
    if method == "gcpo":
        samples = iter(services_log["sample_final_states"])
        parts = []
        for start in range(0, rewards.shape[0], K):
            z = batch.states.final_states(list(range(start, start + K)))
            parts.append(
                gcpo_advantages(
                    rewards[start : start + K].double(),
                    z,
                    next(samples),
                    next(samples),
                    config.method_settings.alpha,
                )[0]
            )
        return torch.cat(parts).float()
    raise AssertionError(f"no expectation for {method}")


def record_services(monkeypatch) -> dict:
    """Keep what the methods' extra generation returned (their outputs are random samples):
    MRT's forced-answer success, ReST-MCTS*'s value-head predictions, GCPO's sampled states."""
    log: dict = {}

    def recorded(owner, name, keep):
        function = getattr(owner, name)

        def wrapped(*args, **kwargs):
            value = function(*args, **kwargs)
            keep(value)
            return value

        monkeypatch.setattr(owner, name, wrapped)

    recorded(mrt, "forced_answer_success", lambda v: log.update(forced_answer_success=v))
    recorded(rest_mcts.ValueHead, "fit", lambda v: log.update(fit_value_head=v[0].cpu()))
    recorded(
        gcpo, "sample_final_states", lambda v: log.setdefault("sample_final_states", []).append(v)
    )
    return log


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_trains_and_its_advantages_are_its_core_entry_points(
    method, small_run, tmp_path, monkeypatch
):
    trainer = small_run(method, out=method)
    calls, services_log = record_advantages(trainer), record_services(monkeypatch)
    if method == "grpo_gated_agree":
        # the tiny random model's episodes never agree (agreement 0, so its gated reward is 0 and
        # nothing trains): a table of ones gates nothing, so the gated reward is the outcome
        monkeypatch.setattr(
            signals_policy,
            "agreement_signal",
            lambda episodes, *_: (
                torch.ones(len(episodes.texts), table_width(episodes), dtype=torch.float64),
                {"signal/sibling_agreement": 1.0},
            ),
        )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [
        n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())
    ]
    assert changed, f"{method}: no parameter changed after 2 steps"
    batch, adv = calls[-1]
    torch.testing.assert_close(
        adv.float().cpu(),
        expected_advantages(method, batch, services_log, trainer.args).float(),
        atol=1e-6,
        rtol=1e-6,
    )
    records = [
        json.loads(line) for line in (tmp_path / method / "metrics.jsonl").read_text().splitlines()
    ]
    steps = [r for r in records if "loss" in r]
    assert len(steps) == 2
    expected = [
        "rewards/outcome/mean",
        "advantages/mean",
        "grad_norm",
        "step_time",
        "completions/mean_length",
        "nonfinite/skipped_steps",
    ]
    if METHODS[method].needs_episodes:
        expected += ["segmentation/fallback_rate", "episodes/mean_count", "episodes/mean_tokens"]
    if METHODS[method].needs_cf:  # the metrics of its per-episode signal (cf_signal)
        expected += {
            "r_cf": ["gc2po/s_sta", "gc2po/s_exp", "gc2po/r_cf"],
            "oracle": ["signal/oracle_validity"],
            "answer_dependence": ["signal/answer_dependence", "signal/answer_found"],
            "sibling_agreement": ["signal/sibling_agreement"],
            "operand_sensitivity": ["signal/operand_sensitivity"],
        }[trainer.args.cf_signal]
    if METHODS[method].rewards:  # the reward it trains on, beside the outcome
        expected += [f"rewards/{f.__name__}/mean" for f in METHODS[method].rewards.values()]
    if METHODS[method].needs_old_logps or METHODS[method].needs_rollout_states:
        expected += [
            "sampling_ratio/mean"
        ]  # these methods pay the extra pass anyway: the metric is free
    if method.startswith("gc2po_add"):  # how often the std floor binds, per step
        expected += ["advantages/floor_binds"]
    expected += {
        "mrt": ["mrt/progress_mean"],
        "gcpo": ["gcpo/upsilon_mean"],
        "rest_mcts": ["rest/selected_frac"],
    }.get(method, [])
    for key in expected:
        assert key in steps[0], f"{method}: metric {key} not logged"


@pytest.mark.slow
def test_a_method_that_owns_its_reward_trains_on_it_and_logs_the_outcome(small_run, tmp_path):
    """grpo_fxp: the trainer gets [outcome, its reward] weighted [0, 1]: the advantages come from
    its reward alone, and rewards/outcome/mean is still the plain outcome's mean."""
    trainer = small_run("grpo_fxp", out="fxp", max_steps=1, save_strategy="no")
    calls = record_advantages(trainer)
    assert [f.__name__ for f in trainer.reward_funcs] == ["outcome", "outcome_x_validity"]
    assert trainer.reward_weights.tolist() == [0.0, 1.0]
    trainer.train()
    (batch, adv), per_function = calls[-1], trainer._rewards_per_func.cpu()  # [B], [B, 2]
    assert not torch.equal(per_function[:, 0], per_function[:, 1])  # the two rewards differ
    torch.testing.assert_close(batch.rewards, per_function[:, 1])  # trained on its own reward
    torch.testing.assert_close(adv, grpo_advantage(per_function[:, 1].view(-1, 2)).reshape(-1))
    lines = (tmp_path / "fxp" / "metrics.jsonl").read_text().splitlines()
    (logged,) = [record for record in map(json.loads, lines) if "loss" in record]  # the step
    assert logged["rewards/outcome/mean"] == pytest.approx(per_function[:, 0].mean().item())
    assert logged["rewards/outcome_x_validity/mean"] == pytest.approx(
        per_function[:, 1].mean().item()
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, trainer, width, logged",
    [
        # the gated form on the noised oracle: f x p_rho per completion, as grpo_fxp trains it
        (
            "grpo_gated",
            {"cf_signal": "oracle", "cf_signal_rho": 0.3},
            1,
            ["signal/rho_within", "signal/gated_reward", "signal/oracle_validity"],
        ),
        ("grpo_gated", {"cf_signal": "operand_sensitivity"}, None, ["signal/gated_reward"]),
        # the form-matched controls: the noised oracle through the rank gate, with noise in
        # every group, the format mark, the persistent readout, R_cf through the value gate
        (
            "grpo_gated",
            {"cf_signal": "oracle", "cf_signal_rho": 0.3, "cf_gate": "rank"},
            None,
            ["signal/rho_within", "signal/gated_reward"],
        ),
        (
            "grpo_gated",
            {"cf_signal": "oracle", "cf_signal_rho": 0.3, "cf_signal_noise": "every_group"},
            1,
            ["signal/rho_within", "signal/gated_reward"],
        ),
        ("grpo_gated", {"cf_signal": "format"}, None, ["signal/format", "signal/gated_reward"]),
        (
            "grpo_gated",
            {"cf_signal": "readout", "cf_readout_weight": 0.5},
            None,
            ["signal/readout", "signal/rho_within", "signal/gated_reward"],
        ),
        ("grpo_gated", {"cf_signal": "r_cf", "cf_gate": "value"}, None, ["signal/gated_reward"]),
        (
            "gc2po_add",
            {"cf_signal": "sibling_agreement", "lambda_cf": 0.29},
            None,
            ["signal/sibling_agreement", "advantages/floor_binds"],
        ),
    ],
)
def test_a_form_trains_on_the_signal_its_config_names(
    method, trainer, width, logged, small_run, tmp_path
):
    """A pairing given as trainer settings (a workflow variant's line) reaches the trainer: it
    computes that signal at generation, the form trains on it, and its metrics are logged."""
    run = small_run(method, out="form", max_steps=1, save_strategy="no", **trainer)
    calls = record_advantages(run)
    run.train()
    (batch, adv), *_ = calls
    assert batch.r_cf is not None and torch.isfinite(adv).all()
    if width is not None:
        assert batch.r_cf.shape[1] == width
    if trainer.get("cf_gate") == "value":  # each row's problem step count reached the gate
        assert batch.steps is not None and bool((batch.steps >= 2).all())
    expected, _ = METHODS[method].advantages(batch, run.args)
    torch.testing.assert_close(adv, expected, rtol=0, atol=0)
    lines = (tmp_path / "form" / "metrics.jsonl").read_text().splitlines()
    (step,) = [record for record in map(json.loads, lines) if "loss" in record]
    for key in logged:
        assert key in step, key


@pytest.mark.slow
def test_corrected_gc2po_without_r_cf_is_grpo_through_the_trainer(small_run):
    """The corrected GC2PO at lambda_cf = 0, trained: on the batch it saw (its R_cf nonzero), its
    token advantages are what the GRPO method gives that batch, on every completion token."""
    trainer = small_run("gc2po_add_no_rcf", out="corrected", max_steps=2, save_strategy="no")
    calls = record_advantages(trainer)
    trainer.train()
    assert calls and all(batch.r_cf.abs().sum() > 0 for batch, _ in calls)
    for batch, corrected in calls:
        grpo, _ = METHODS["grpo"].advantages(batch, trainer.args)  # [B], one value per completion
        mask = batch.completion_mask.bool()
        torch.testing.assert_close(
            corrected[mask], grpo.unsqueeze(-1).expand_as(mask)[mask].float(), atol=1e-6, rtol=0
        )
    assert any(
        grpo_advantage(b.rewards.view(-1, b.group_size)).abs().sum() > 0 for b, _ in calls
    ), "the test batches need groups with different rewards"


def count_forwards(trainer) -> dict:
    counts = {"policy": 0, "reference": 0}
    trainer.model.register_forward_hook(
        lambda *a: counts.__setitem__("policy", counts["policy"] + 1)
    )
    if trainer.ref_model is not None:
        trainer.ref_model.register_forward_hook(
            lambda *a: counts.__setitem__("reference", counts["reference"] + 1)
        )
    return counts


def loss_advantages(trainer) -> dict:
    """The advantages the loss used, keyed by the row's place in the generation batch."""
    seen = {}
    original = trainer._compute_loss

    def compute_loss(model, inputs):
        loss = original(model, inputs)
        order = inputs["gc2po_row_index"].argsort()
        seen["advantages"] = inputs["advantages"][order].detach().clone()
        seen["completion_ids"] = inputs["completion_ids"][order].clone()
        return loss

    trainer._compute_loss = compute_loss
    return seen


@pytest.mark.slow
def test_on_policy_gc2po_runs_as_many_forwards_as_trl_grpo_and_equals_the_two_pass_path(small_run):
    from trl import GRPOTrainer

    runs = {
        "trl": dict(method="grpo", trainer_class=GRPOTrainer),
        "one": dict(method="gc2po"),
        "two": dict(method="gc2po", sampling_ratio_pass=True),
    }
    counts, seen = {}, {}
    for (
        name,
        kwargs,
    ) in runs.items():  # built and trained one after the other: the same seeded sampling
        trainer = small_run(out=name, max_steps=1, save_strategy="no", **kwargs)
        counts[name] = count_forwards(trainer)
        if name != "trl":
            seen[name] = loss_advantages(trainer)
        trainer.train()
    assert counts["one"] == counts["trl"], (counts["one"], counts["trl"])
    assert (
        counts["two"]["policy"] == counts["trl"]["policy"] + 1
    )  # the extra pass, only when asked for
    assert torch.equal(
        seen["one"]["completion_ids"], seen["two"]["completion_ids"]
    )  # the same batch
    torch.testing.assert_close(
        seen["one"]["advantages"], seen["two"]["advantages"], atol=1e-6, rtol=0
    )
    assert seen["one"]["advantages"].abs().sum() > 0


class StopAfter(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        control.should_training_stop = state.global_step >= self.step


@pytest.mark.slow
def test_resume_matches_uninterrupted_run(small_run):
    full = small_run("gc2po", out="full", max_steps=4)
    full.train()
    first = small_run("gc2po", out="split", max_steps=4)
    first.add_callback(StopAfter(2))
    first.train()  # writes checkpoint-2, then the process "dies"
    resumed = small_run("gc2po", out="split", max_steps=4, resume=True)
    resumed.train(resume_from_checkpoint=True)
    # tolerance: identical up to float32 reduction order (we see exact equality on CPU)
    for (name, a), (_, b) in zip(full.model.named_parameters(), resumed.model.named_parameters()):
        torch.testing.assert_close(
            a, b, atol=1e-6, rtol=1e-5, msg=f"parameter {name} differs after resume"
        )


def half_unscored_reward(prompts, completions, **kwargs):
    """Scores only every other completion (None = this function does not apply,
    TRL's convention)."""
    return [
        float(len(c[-1]["content"]) % 2) if i % 2 == 0 else None for i, c in enumerate(completions)
    ]


half_unscored_reward.__name__ = "outcome"
half_unscored_reward.reward_range = (0.0, 1.0)  # GC2PO checks that R_out cannot go below 0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["grpo", "gc2po"])
def test_completions_no_reward_function_scored_are_left_out(method, small_run):
    trainer = small_run(
        method,
        out=method,
        reward=half_unscored_reward,
        num_generations=4,
        max_steps=1,
        save_strategy="no",
    )
    calls = record_advantages(trainer)
    trainer.train()
    batch, adv = calls[-1]
    unscored = torch.isnan(batch.rewards)
    assert unscored.sum() == batch.rewards.numel() // 2  # kept as NaN, not turned into reward 0
    assert (adv[unscored] == 0).all()
    if method == "grpo":  # the scored ones are normalised among themselves only
        scored = batch.rewards.view(-1, 4)[:, ::2]
        torch.testing.assert_close(adv.view(-1, 4)[:, ::2], grpo_advantage(scored))


@pytest.mark.parametrize(
    "method, override, match",
    [
        ("ppo", {}, r"method: unknown name 'ppo'; valid choices: \["),
        ("gc2po", {"lambda_cf": 100.5}, r"lambda_cf must be in \[0, 100\]"),
        ("gc2po", {"lambda_exp": -0.1}, r"lambda_exp must be in \[0, 1\]"),
        ("gc2po", {"num_generations": 1, "per_device_train_batch_size": 4}, "num_generations"),
        (
            "gc2po",
            {"num_generations": 3, "per_device_train_batch_size": 4},
            r"divisible by num_generations",
        ),
        ("gc2po", {"no_such_field": 1}, r"unknown trainer key\(s\) \['no_such_field'\]"),
        ("gc2po", {"learning_rate": "abc"}, r"trainer.learning_rate must be float, got 'abc'"),
        ("gc2po", {"max_steps": 2.5}, r"trainer.max_steps must be int"),
        (
            "dr_grpo",
            {"beta": 0.04},
            r"trainer.beta=0.04 conflicts with method 'dr_grpo', which fixes beta=0.0",
        ),
        (
            "gc2po_no_rcf",
            {"lambda_cf": 0.8},
            r"conflicts with method 'gc2po_no_rcf', which fixes lambda_cf=0.0",
        ),
        ("grpo", {"loss_type": "dapo"}, r"trainer.loss_type='dapo' conflicts with method 'grpo'"),
        ("gc2po", {"bf16": True}, r"trainer.bf16 is set from precision"),
        (
            "gc2po",
            {"steps_per_generation": 2, "gradient_accumulation_steps": 2},
            r"computes its advantages in the loss forward.*steps_per_generation to 1",
        ),
        (
            "gc2po",
            {"multi_objective_aggregation": "normalize_then_sum"},
            r"multi_objective_aggregation must be",
        ),
        ("gc2po", {"cf_eps_u": 0.0}, r"cf_eps_u must be > 0"),
        ("gc2po", {"cf_state": "eos"}, r"cf_state must be one of \['episode_end', 'closing_tag'"),
        ("grpo", {"cf_state": "result"}, r"cf_state applies to the GC2PO methods only"),
        ("gc2po_add", {"cf_std_floor": 0.0}, r"cf_std_floor must be > 0"),
        ("gc2po_add", {"cf_z_clip": -1.0}, r"cf_z_clip must be > 0"),
        ("gc2po_add_no_rcf", {"lambda_cf": 0.5}, r"fixes lambda_cf=0.0"),
        (
            "gc2po",
            {"cf_signal": "oracle"},
            r"method 'gc2po' uses 'r_cf'; remove cf_signal, or train",
        ),
        ("grpo_gated", {"cf_signal_rho": 0.3}, r"only mixes cf_signal 'oracle'"),
        ("gc2po_add_agree", {"cf_signal": "oracle"}, r"conflicts with method 'gc2po_add_agree'"),
        ("grpo", {"cf_signal": "answer_dependence"}, r"method 'grpo' uses 'r_cf'"),
        ("gc2po_add", {"cf_signal": "sparkle"}, r"cf_signal must be one of \['r_cf', 'oracle'"),
        ("gc2po_add_oracle", {"cf_signal": "r_cf"}, r"conflicts with method 'gc2po_add_oracle'"),
        ("gc2po_add_oracle", {"cf_signal_rho": 0.0}, r"cf_signal_rho must be in \[1e-06, 1\]"),
        ("gc2po_add_oracle", {"cf_signal_rho": 1.5}, r"cf_signal_rho must be in \[1e-06, 1\]"),
        ("gc2po_add", {"cf_signal_rho": 0.3}, r"only mixes cf_signal 'oracle'"),
        ("gc2po_add_answer", {"cf_signal_rho": 0.3}, r"only mixes cf_signal 'oracle'"),
        ("grpo_fxp", {"reward_weights": [1.0, 1.0]}, r"conflicts with method 'grpo_fxp'"),
    ],
)
def test_bad_config_fails_before_model_load(method, override, match, tmp_path):
    # the model path does not exist: reaching model loading would raise a different error
    run = {
        "model": str(tmp_path / "missing"),
        "train_data": "x.jsonl",
        "output_dir": str(tmp_path),
        "method": method,
        "trainer": {**SMALL, **override},
    }
    with pytest.raises(ValueError, match=match):
        build_args(run)


def test_the_oracle_control_needs_the_testbed(tmp_path):
    run = {"model": "m", "train_data": "x.jsonl", "output_dir": str(tmp_path), "trainer": SMALL}
    with pytest.raises(
        ValueError, match=r"task: method 'gc2po_add_oracle' .* needs task 'testbed'"
    ):
        build_args({**run, "method": "gc2po_add_oracle", "task": "benchmark"})
    assert (
        build_args({**run, "method": "gc2po_add_oracle", "task": "testbed"}).cf_signal == "oracle"
    )
    # the answer dependence reads any final \boxed{} answer: not tied to the testbed
    assert build_args({**run, "method": "gc2po_add_answer", "task": "benchmark"}).cf_signal == (
        "answer_dependence"
    )


def test_a_method_that_owns_its_reward_refuses_a_task_it_has_none_for(tmp_path):
    run = {"model": "m", "train_data": "x.jsonl", "output_dir": str(tmp_path), "trainer": SMALL}
    with pytest.raises(
        ValueError,
        match=r"method 'grpo_fxp' trains on a reward of its own, "
        r"defined for task\(s\) \['testbed'\] only, not for task 'benchmark'",
    ):
        build_args({**run, "method": "grpo_fxp", "task": "benchmark"})
    assert build_args({**run, "method": "grpo_fxp", "task": "testbed"}).reward_weights == [0, 1]


@pytest.mark.parametrize(
    "override, match",
    [
        ({"surprise": 1}, r"unknown key\(s\) \['surprise'\]"),
        ({"task": "poetry"}, "task: must be one of"),
        ({"task": "math"}, "'math' is now spelled"),
        ({"precision": "fp8"}, "precision must be one of"),
        ({"seed": "one"}, "seed must be an integer"),
    ],
)
def test_bad_run_keys_fail(override, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        build_args(
            {
                "model": "m",
                "train_data": "x.jsonl",
                "output_dir": str(tmp_path),
                "trainer": SMALL,
                **override,
            }
        )


def test_each_gc2po_form_reads_its_own_state_unless_told(tmp_path):
    def state(method, **trainer):
        run = {
            "model": "m",
            "train_data": "x.jsonl",
            "output_dir": str(tmp_path),
            "method": method,
            "trainer": {**SMALL, **trainer},
        }
        return build_args(run).cf_state

    # the paper's form keeps the state it always read; the corrected one reads the step's result
    assert (state("gc2po"), state("gc2po_add"), state("grpo")) == (
        "episode_end",
        "result",
        "episode_end",
    )
    assert state("gc2po", cf_state="last_content") == "last_content"


def test_method_definitions_are_applied_over_defaults(tmp_path):
    run = {"model": "m", "train_data": "x.jsonl", "output_dir": str(tmp_path), "trainer": SMALL}
    assert build_args({**run, "method": "dr_grpo"}).beta == 0.0
    assert build_args({**run, "method": "dr_grpo"}).loss_type == "dr_grpo"
    assert build_args({**run, "method": "grpo"}).beta == 0.04
    assert build_args({**run, "method": "gc2po_no_ssta"}).lambda_sta == 0.0


@pytest.mark.slow
def test_a_prompt_holding_the_pad_token_warns_once(small_run, testbed_train_file, tmp_path):
    trainer = small_run("grpo", out="pad", max_steps=2, save_strategy="no")
    pad = trainer.processing_class.pad_token
    trainer.train_dataset = trainer.train_dataset.map(
        lambda row: {
            "prompt": [{"role": "user", "content": f"{pad} {row['prompt'][0]['content']}"}]
        }
    )
    with pytest.warns(UserWarning, match="contains the pad token id") as caught:
        trainer.train()
    assert sum("pad token id" in str(w.message) for w in caught) == 1  # once, not every step
