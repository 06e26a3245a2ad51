"""Forms and signals as settings: the additive form (``gc2po_add``) and the gated form
(``grpo_gated``) take their per-episode signal from the run's ``cf_signal``; each earlier
per-signal method name is a preset of one of them with the same advantages, bit for bit; the
gated form on the oracle is the f x p control on real testbed text; a pairing is one line of a
workflow config's ``variants``; the additive form logs how often its std floor binds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gc2po.cli import main
from gc2po.methods import METHODS
from gc2po.methods.base import RolloutBatch
from gc2po.training.run_config import build_args
from gc2po.training.signals import SIGNALS
from gc2po.workflow.config_files import load_config
from gc2po.workflow.plan import runs, training_jobs

ROOT = Path(__file__).resolve().parents[2]
NAN = float("nan")
SMALL = {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 12}


def config_of(method: str, tmp_path, **trainer):
    """The resolved GC2POConfig of a run of ``method`` (no model is loaded)."""
    run = {"model": "m", "train_data": "x.jsonl", "output_dir": str(tmp_path), "task": "testbed"}
    return build_args({**run, "method": method, "trainer": {**SMALL, **trainer}})


def fixed_batch(r_cf: torch.Tensor, rewards: torch.Tensor | None = None) -> RolloutBatch:
    """Two groups of 4: outcomes right, wrong and unscored; episodes of 1 to 3 steps (one row
    with none), right-padded, rows in shuffled order."""
    episode_ids = torch.tensor(
        [
            [0, 0, 1, 1, 2, -1],
            [0, 0, 0, -1, -1, -1],
            [0, 1, 1, 1, -1, -1],
            [-1, -1, -1, -1, -1, -1],
            [0, 0, 1, 2, 2, 2],
            [0, 1, -1, -1, -1, -1],
            [0, 0, 0, 0, 0, -1],
            [0, 0, 1, 1, 1, 1],
        ]
    )
    if rewards is None:
        rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, NAN, 0.0, 1.0])
    order = torch.tensor([2, 0, 1, 3, 7, 4, 6, 5])  # whole groups, shuffled within them
    return RolloutBatch(
        rewards=rewards[order],
        row_index=order,
        group_size=4,
        completion_mask=(episode_ids >= 0)[order],
        gather=lambda t: t,
        episode_ids=episode_ids[order],
        r_cf=r_cf[order],
    )


def signal_table(name: str) -> torch.Tensor:
    """A per-episode table [8, 3] of the signal's kind: shares in [0, 1] for the oracle and
    sibling agreement, unbounded values of either sign for the others."""
    values = torch.tensor(
        [
            [0.3, -1.2, 2.5],
            [0.7, 0.0, 0.0],
            [-0.4, 0.1, 0.0],
            [0.0, 0.0, 0.0],
            [1.5, 1.5, -3.0],
            [0.2, 0.9, 0.0],
            [0.05, 0.0, 0.0],
            [-2.0, 0.6, 0.0],
        ],
        dtype=torch.float64,
    )
    return torch.sigmoid(values) if name in ("oracle", "sibling_agreement") else values


PRESETS = sorted(name for name, method in METHODS.items() if method.preset_of)


def test_the_presets_are_the_earlier_per_signal_methods():
    assert PRESETS == [
        "gc2po_add_agree",
        "gc2po_add_answer",
        "gc2po_add_operand",
        "gc2po_add_oracle",
        "grpo_fxp",
        "grpo_gated_agree",
    ]
    forms = sorted(name for name, method in METHODS.items() if method.signal_from_config)
    assert forms == ["gc2po_add", "grpo_gated"]


# cf_signal_rho mixes the oracle only (refused for the other signals: below)
ORACLE_PRESETS = [name for name in PRESETS if METHODS[name].fixed["cf_signal"] == "oracle"]


@pytest.mark.parametrize(
    "preset, rho", [(name, None) for name in PRESETS] + [(name, 0.3) for name in ORACLE_PRESETS]
)
def test_each_preset_trains_the_generic_forms_advantages_exactly(preset, rho, tmp_path):
    method = METHODS[preset]
    signal = method.fixed["cf_signal"]
    given = {} if rho is None else {"cf_signal_rho": rho}
    old = config_of(preset, tmp_path, **given)
    new = config_of(method.preset_of, tmp_path, cf_signal=signal, **given)
    assert (old.cf_signal, new.cf_signal, new.cf_signal_rho) == (signal, signal, rho)
    outcome = torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0, NAN, 0.0, 1.0])
    if preset == "grpo_fxp":
        # the trainer's oracle signal for the gated form: f x p_rho per completion [B, 1]; the
        # control trains on its own reward f x p (equal to that signal at rho None: below)
        gated = torch.tensor([[0.5], [0.0], [1.0], [0.0], [0.75], [0.2], [0.0], [1 / 3]])
        fxp = torch.where(outcome.isnan(), outcome, gated[:, 0].float())
        old_batch, new_batch = fixed_batch(gated, fxp), fixed_batch(gated, outcome)
    else:
        old_batch = new_batch = fixed_batch(signal_table(signal))
    old_adv, old_metrics = method.advantages(old_batch, old)
    new_adv, new_metrics = METHODS[method.preset_of].advantages(new_batch, new)
    assert torch.equal(old_adv, new_adv)
    assert old_adv.abs().sum() > 0 and torch.isfinite(old_adv).all()
    assert old_metrics == new_metrics


def test_the_gated_form_on_the_oracle_is_the_f_x_p_control_on_real_text(testbed_tokenizer):
    """Testbed completions of every kind, through the trainer's functions: the control trains on
    its reward function's f x p (rho None) or on the oracle signal f x p_rho; the gated form on
    the outcome and the oracle signal. Their advantages are equal, exactly."""
    from types import SimpleNamespace

    from gc2po.methods.grpo_fxp import outcome_x_validity
    from gc2po.training import signals
    from gc2po.training.episodes import segment_completions
    from gc2po.training.rewards import REWARDS
    from tests.training.test_signals import completions

    tok = testbed_tokenizer
    problems, ids, padded, mask = completions(tok, count=24)
    episodes = segment_completions(tok, padded, mask, 32)
    rows = [{"question": p.question, "meta_json": json.dumps(p.record()["meta"])} for p in problems]
    texts = [tok.decode(r, skip_special_tokens=True) for r in ids]
    metas = [r["meta_json"] for r in rows]
    questions = [r["question"] for r in rows]
    fxp = torch.tensor(outcome_x_validity(None, texts, metas, question=questions))
    outcome = torch.tensor(REWARDS["testbed"](None, texts, metas))
    assert 0 < fxp.sum() < outcome.sum()  # right copies: f = 1, p < 1
    control, gated = METHODS["grpo_fxp"].advantages, METHODS["grpo_gated"].advantages
    for rho in (None, 0.07, 0.3):
        table, _ = signals.oracle_signal(
            rows, episodes, torch.arange(24), 4, max_episodes=32, rho=rho, seed=3, trajectory=True
        )

        def batch(rewards, table=table):
            return RolloutBatch(rewards, torch.arange(24), 4, mask.bool(), lambda t: t,
                                episode_ids=episodes.episode_ids, r_cf=table)  # fmt: skip

        config = SimpleNamespace(cf_signal="oracle", cf_signal_rho=rho)
        expected, _ = control(batch(fxp), config)
        found, _ = gated(batch(outcome), config)
        assert torch.equal(found, expected), rho
        assert found.abs().sum() > 0


@pytest.fixture(scope="module")
def testbed_tokenizer():
    from tests.training.test_signals import testbed_tokenizer as make

    return make.__wrapped__()


# --- the settings, their checks and the config line ----------------------------------------------
@pytest.mark.parametrize("form", ["gc2po_add", "grpo_gated"])
@pytest.mark.parametrize("signal", SIGNALS)
def test_each_form_takes_any_signal_from_the_config(form, signal, tmp_path):
    args = config_of(form, tmp_path, cf_signal=signal)
    assert args.cf_signal == signal and args.method == form
    batch = fixed_batch(
        signal_table(signal)
        if not (form == "grpo_gated" and signal == "oracle")
        else signal_table(signal)[:, :1]  # the oracle's f x p_rho, one value per completion
    )
    advantages, _ = METHODS[form].advantages(batch, args)
    assert torch.isfinite(advantages).all() and advantages.abs().sum() > 0


@pytest.mark.parametrize(
    "method, trainer, match",
    [
        (
            "grpo_gated",
            {"cf_signal": "r_cf", "cf_signal_rho": 0.07},
            "only mixes cf_signal 'oracle'",
        ),
        ("gc2po_add", {"cf_signal": "operand_sensitivity", "cf_signal_rho": 0.5}, "only mixes"),
        ("grpo_gated", {"cf_signal": "probe"}, r"cf_signal must be one of \['r_cf'"),
        ("grpo_gated_agree", {"cf_signal": "r_cf"}, "conflicts with method 'grpo_gated_agree'"),
        (
            "grpo",
            {"cf_signal": "oracle"},
            r"train a form that takes it from the config "
            r"\(gc2po_add, grpo_gated\)",
        ),  # fmt: skip
    ],
)
def test_a_signal_a_method_cannot_take_is_refused_naming_the_key(method, trainer, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        config_of(method, tmp_path, **trainer)


@pytest.mark.parametrize(
    "method, signal, rho, whole",
    [
        ("gc2po_add", "r_cf", None, False),
        ("gc2po_add", "oracle", None, False),
        ("gc2po_add", "oracle", 0.3, True),  # the noise is mixed within each group
        ("gc2po_add", "sibling_agreement", None, True),  # each step against its siblings'
        ("gc2po_add", "operand_sensitivity", None, False),
        ("grpo_gated", "r_cf", None, True),  # ranks within the group
        ("grpo_gated", "answer_dependence", None, True),
    ],
)
def test_a_signal_that_compares_a_groups_completions_needs_the_group_on_one_process(
    method, signal, rho, whole
):
    """Two processes of 6 rows, groups of 4 (TRL checks the generation batch of both)."""
    from types import SimpleNamespace

    from gc2po.training.config_checks import check_batch_layout

    config = SimpleNamespace(
        method=method,
        cf_signal=signal,
        cf_signal_rho=rho,
        cf_from_states=signal == "r_cf",
        advantages_in_loss_forward=False,
        steps_per_generation=1,
        per_device_train_batch_size=6,
        num_generations=4,
    )
    if not whole:
        check_batch_layout(config, METHODS[method])
        return
    with pytest.raises(ValueError, match=rf"method '{method}' \(cf_signal '{signal}'\) needs "
                       "every group on one process"):  # fmt: skip
        check_batch_layout(config, METHODS[method])


def test_the_gated_form_refuses_a_batch_holding_part_of_a_group(tmp_path):
    batch = fixed_batch(signal_table("r_cf"))
    part = RolloutBatch(
        batch.rewards[:6],
        batch.row_index[:6],
        4,
        batch.completion_mask[:6],
        lambda t: t,
        episode_ids=batch.episode_ids[:6],
        r_cf=batch.r_cf[:6],
    )
    with pytest.raises(RuntimeError, match=r"'grpo_gated': this process holds part of a group"):
        METHODS["grpo_gated"].advantages(part, config_of("grpo_gated", tmp_path))


LINES = {  # label -> (variant, method, cf_signal, its display name)
    "gated_rcf": ({"method": "grpo_gated"}, "r_cf", "GRPO on f x g (gated)"),
    "gated_oracle_rho0.07": (
        {"method": "grpo_gated", "trainer": {"cf_signal": "oracle", "cf_signal_rho": 0.07}},
        "oracle",
        "GRPO on f x g (gated, signal = oracle, rho = 0.07)",
    ),
    "add_rcf_l4.1": (
        {"method": "gc2po_add", "trainer": {"lambda_cf": 4.1, "cf_std_floor": 0.001}},
        "r_cf",
        "GC2PO (corrected, additive, lambda_cf = 4.1, std floor = 0.001)",
    ),
    "add_oracle_rho0.07_l4.1": (
        {
            "method": "gc2po_add",
            "trainer": {"cf_signal": "oracle", "cf_signal_rho": 0.07, "lambda_cf": 4.1},
        },
        "oracle",
        "GC2PO (corrected, additive, signal = oracle, rho = 0.07, lambda_cf = 4.1)",
    ),
    "gated_agree": (
        {"method": "grpo_gated", "trainer": {"cf_signal": "sibling_agreement"}},
        "sibling_agreement",
        "GRPO on f x g (gated, signal = sibling_agreement)",
    ),
    "add_operand_l0.29": (
        {"method": "gc2po_add", "trainer": {"cf_signal": "operand_sensitivity", "lambda_cf": 0.29}},
        "operand_sensitivity",
        "GC2PO (corrected, additive, signal = operand_sensitivity, lambda_cf = 0.29)",
    ),
}


def test_a_pairing_of_form_and_signal_is_one_line_of_a_workflow_config():
    config = load_config([ROOT / "config/config.yaml", ROOT / "config/ci.yaml"])
    config["variants"] = {label: variant for label, (variant, _, _) in LINES.items()}
    planned = runs(config)
    jobs = {job.run: job for job in training_jobs(config)}
    for label, (variant, signal, name) in LINES.items():
        assert planned[label].display_name == name
        args = build_args(jobs[label].run_config(config))
        assert (args.method, args.cf_signal) == (variant["method"], signal), label
        for key, value in variant.get("trainer", {}).items():
            assert getattr(args, key) == value, (label, key)


def test_gc2po_methods_lists_each_forms_signal_setting_and_each_presets_form(capsys):
    assert main(["methods", "grpo_gated", "gc2po_add", "grpo_fxp", "gc2po_add_agree"]) == 0
    blocks = dict(
        (block.split(":", 1)[0], block) for block in capsys.readouterr().out.split("\n\n")
    )
    for form in ("grpo_gated", "gc2po_add"):
        assert "signal (trainer.cf_signal): one of r_cf, oracle," in blocks[form]
    assert "preset of grpo_gated with cf_signal: oracle" in blocks["grpo_fxp"]
    assert "preset of gc2po_add with cf_signal: sibling_agreement" in blocks["gc2po_add_agree"]


# --- the additive form's std floor ------------------------------------------------------------
def test_the_additive_form_logs_the_share_of_groups_where_its_floor_binds(tmp_path):
    # group 0's R_cf varies (sd ~1), group 1's is constant (sd 0)
    table = signal_table("r_cf")
    table[4:] = 0.25
    batch = fixed_batch(table)
    shares = {}
    for floor in (0.1, 1e-6, 10.0):
        args = config_of("gc2po_add", tmp_path, cf_std_floor=floor)
        _, metrics = METHODS["gc2po_add"].advantages(batch, args)
        shares[floor] = metrics["advantages/floor_binds"]
    assert shares == {0.1: 0.5, 1e-6: 0.5, 10.0: 1.0}
