r"""``GC2POConfig``: TRL's ``GRPOConfig`` plus the fields of GC2PO and of the baselines (the
checks of their values are in ``gc2po.training.config_checks``).

Defaults are the paper's; the project chose what the paper leaves open. Each field has a one-line
``help`` in its metadata; the longer account, by group:

> Method and precision

method (`str`, defaults to `"gc2po"`): training method, a name of `gc2po.methods.METHODS`. A
    method fixes the fields that define it (its loss aggregation, Dr.GRPO's beta 0, an
    ablation's lambda); a config that gives them another value is refused when it is built
    (`Method.check_fixed`, on `given_keys`).
given_keys (`list` or `None`): the trainer keys a run config gave, set by `build_args`, so
    that a value the method fixes is refused exactly when given (even one equal to TRL's
    default); `None` (a config built directly): the fields that differ from their default.
precision (`str`, defaults to `"fp32"`): `"bf16-mixed"` (fp32 master weights, bf16 autocast;
    the default on GPU), `"bf16"` (pure bf16 weights: half the memory, but an AdamW step of
    ~1e-6 rounds away on most weights) or `"fp32"`. Sets TRL's `bf16`; the model is loaded in
    bf16 only for `"bf16"`.

> GC2PO (paper section 4)

lambda_cf (`float`, defaults to `0.8`): weight of R_cf in the episodic score S.
lambda_exp (`float`, defaults to `0.9`): weight of S_exp in R_cf.
lambda_sta (`float`, defaults to `1.0`): weight of S_sta in R_cf (0 in the w/o S_sta ablation).
cf_tau (`float`, defaults to `0.1`): temperature tau of the stability term.
cf_eps_u (`float`, defaults to `1e-6`): eps_u of the expressiveness term (> 0).
num_perturbations (`int`, defaults to `8`): Monte Carlo samples M of perturbed states.
perturbation (`str`, defaults to `"dropout,gaussian"`): comma-separated operators applied in
    order (`gc2po.core.perturbations.PERTURBATIONS`); each takes its scale from
    `perturbation_<param>`: `perturbation_p` (dropout), `perturbation_sigma` (gaussian),
    `perturbation_alpha` (group_mix).
answer_space (`str`, defaults to `"topk"`): support of q(.|u): `"topk"` or `"vocab"`.
answer_topk (`int`, defaults to `64`): k of the top-k answer space.
max_episodes (`int`, defaults to `32`): episodes past this merge into the last one.
trunc_frac (`float`, defaults to `0.05`): fraction of token rewards dropped at each tail.
adv_clip (`float`, defaults to `10.0`): token advantages are clamped to [-adv_clip, adv_clip].
episode_weight_norm (`str`, defaults to `"sum"`): surprise weights sum to 1 per episode
    (`"sum"`, the paper) or average 1 (`"mean"`, no incentive to emit many short episodes).
cf_state (`str` or `None`): the token whose hidden state is u for R_cf, one of
    `gc2po.training.episode_states.STATE_CHOICES`; `None` takes the method's (`"episode_end"` for
    `gc2po`, which reads EOS for the last episode; `"result"` for the corrected
    `gc2po_add`).
cf_std_floor (`float`, defaults to `0.1`): corrected GC2PO: floor on the group std of
    its per-episode signal. 0.1, measured on the testbed's train split (docs/measurements.md,
    `benchmarks/method/std_floor.py`): about 2% of R_cf's within-group variance tracks episode
    validity; a floor of 0.001 gives the bonus 42% of the advantage variance, 0.1 gives it 16%.
cf_z_clip (`float`, defaults to `3.0`): corrected GC2PO: R_cf z-scores are clamped to
    +-cf_z_clip.
cf_signal (`str`, defaults to `"r_cf"`): the per-episode signal of a form that takes it from
    the config (`gc2po_add`, the additive corrected GC2PO; `grpo_gated`, GRPO on f x g), one of
    `gc2po.training.signals.SIGNALS`: `"r_cf"` (the paper's counterfactual reward), `"oracle"`
    (the testbed oracle's episode validity: a control), `"answer_dependence"` (the fall in the
    final answer's log-probability without the episode; beyond the paper),
    `"sibling_agreement"` (the share of the group's other completions whose same step writes
    the same equation; beyond the paper) or `"operand_sensitivity"` (the fall of the written
    result's log-probability when the episode's operand is changed; beyond the paper). A preset
    fixes it (`gc2po_add_oracle`, `gc2po_add_answer`, `gc2po_add_agree`, `gc2po_add_operand`,
    `grpo_gated_agree`, `grpo_fxp`); every other method reads R_cf or none, and refuses another.
cf_signal_rho (`float` or `None`): with `cf_signal: oracle`, add noise to the oracle's validity
    to this within-group correlation given f, in [1e-6, 1] (`None` or 1: the validity itself).
    The gated form's reward becomes f x p_rho, p computed from that noisy validity. The oracle
    only: another signal's correlation with validity is measured, not set.
cf_signal_noise (`str`, defaults to `"exact"`): how the noised oracle spreads its noise:
    `"exact"` (every group at exactly rho; a group whose validity is constant given f gets the
    validity itself) or `"every_group"` (one noise scale for the batch, set from rho and the
    typical within-group spread of validity, in every group: the per-group correlation spreads
    around rho and no group is the exact oracle; `gc2po.core.signals.noise_in_every_group`).
cf_gate (`str`, defaults to `"auto"`): the gated form's gate (`grpo_gated`; `gc2po.core.gated`):
    `"rank"` (each episode's share of its siblings' steps its signal reaches, averaged over the
    episodes written), `"value"` (the oracle's p: the signal in [0, 1] (or that share, for a
    signal with no fixed scale) summed and divided by max(the problem's step count, episodes);
    testbed only) or `"auto"` (the oracle's value gate, sibling agreement's mean, the rank gate
    for the rest).
cf_readout_weight (`float`, defaults to `0.0`): `cf_signal: readout`: the weight of the oracle's
    validity added to the z-scored readout (sets the control's correlation with validity).

> Training machinery

sampling_ratio_pass (`bool`, defaults to `False`): run one extra no-grad pass after generation
    for old log-probs, so the sampling-ratio metric pi/pi_old is measured even on-policy
    (where it is exactly 1). Off: GC2PO costs no forward pass over TRL's GRPO.
fast_generation (`bool`, defaults to `True`): on the transformers generation path on CPU,
    prefill each prompt once for its K completions and run the model on unfinished rows only
    (`gc2po.models.sampling`): the same tokens as `generate`, less work. Off: TRL's `generate` call.
max_consecutive_skipped_steps (`int`, defaults to `3`): a step whose loss or gradient norm is
    not finite is skipped (weights, optimizer and scheduler untouched); this many in a row
    stop the run with an error naming the step, the first non-finite parameter and the prompts.
metrics_path (`str` or `None`): JSONL file that receives every logged step (rank 0 writes).

> A method's own settings

method_args (`dict` or `None`): the settings of the method's own `settings` dataclass
    (`gc2po.methods.base.Method.settings`), e.g. `{num_stops: 2}` for `mrt`; the method checks
    them (`Method.parse_settings`) and reads them as `config.method_settings`. `None`: its
    defaults. The baselines' settings live there: `mrt` (`MRTSettings`), `rest_mcts`
    (`ReSTSettings`), `gcpo` (`GCPOSettings`), `gvpo` (`GVPOSettings`), `length_penalty`
    (`LengthPenaltySettings`).

> Sampler/trainer mismatch (`gc2po.training.ratio_guard`; vLLM with importance-sampling correction)

ratio_guard_low, ratio_guard_high (`float`, defaults to `0.95`, `1.05`): band of the mean
    per-token importance ratio trainer/vLLM of a step; outside it the step warns.
ratio_guard_patience (`int`, defaults to `3`): steps in a row outside the band that stop
    the run naming the step and the likely cause (0 turns the guard off).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from gc2po.core.advantages import EPISODE_WEIGHT_NORMS
from gc2po.core.counterfactual import ANSWER_SPACES, CounterfactualParams
from gc2po.core.gated import GATES
from gc2po.core.perturbations import PERTURBATIONS, spec_from_fields
from gc2po.methods import METHODS, get_method
from gc2po.training.config_checks import (
    PRECISIONS,
    apply_method,
    check_batch_layout,
    check_gc2po_fields,
    check_vllm_fields,
)
from gc2po.training.episode_states import STATE_CHOICES
from gc2po.training.signals import NOISE, SIGNALS


def _help(text: str, default=None):
    return field(default=default, metadata={"help": text})


@dataclass
class GC2POConfig(GRPOConfig):
    """Configuration of [`GC2POTrainer`]: every field of TRL's `GRPOConfig`, plus the ones below.
    Each field's `help` metadata says what it is; the module docstring gives the longer account,
    by group; ``gc2po.training.config_checks`` checks the values.
    """

    method: str = _help(f"Training method, one of {sorted(METHODS)}.", "gc2po")
    precision: str = _help(f"One of {list(PRECISIONS)}.", "fp32")
    lambda_cf: float = _help("Weight of R_cf in the episodic score S (paper: 0.8).", 0.8)
    lambda_exp: float = _help("Weight of S_exp in R_cf (paper: 0.9).", 0.9)
    lambda_sta: float = _help("Weight of S_sta in R_cf (1; 0 for the w/o S_sta ablation).", 1.0)
    cf_tau: float = _help("Temperature tau of the stability term.", 0.1)
    cf_eps_u: float = _help("eps_u in the expressiveness term's denominator (> 0).", 1e-6)
    num_perturbations: int = _help("Monte Carlo samples M of perturbed states.", 8)
    perturbation: str = _help(
        f"Comma-separated operators applied in order, from {sorted(PERTURBATIONS)}.",
        "dropout,gaussian",
    )
    perturbation_p: float = _help("Dropout probability of the dropout operator.", 0.1)
    perturbation_sigma: float = _help("Relative noise scale of the gaussian operator.", 0.1)
    perturbation_alpha: float = _help("Mixing weight of the group_mix operator.", 0.3)
    answer_space: str = _help(f"Support of q(.|u), one of {list(ANSWER_SPACES)}.", "topk")
    answer_topk: int = _help("k of the top-k answer space.", 64)
    max_episodes: int = _help("Episodes past this merge into the last one.", 32)
    trunc_frac: float = _help("Fraction of token rewards dropped at each tail.", 0.05)
    adv_clip: float = _help("Token advantages are clamped to [-adv_clip, adv_clip].", 10.0)
    episode_weight_norm: str = _help(f"One of {list(EPISODE_WEIGHT_NORMS)}.", "sum")
    cf_state: str | None = _help(
        f"Token whose state is u for R_cf, one of {list(STATE_CHOICES)}; None: the method's."
    )
    cf_std_floor: float = _help("Corrected GC2PO: floor on the group std of R_cf.", 0.1)
    cf_z_clip: float = _help("Corrected GC2PO: R_cf z-scores are clamped to +-cf_z_clip.", 3.0)
    cf_signal: str = _help(
        f"gc2po_add's and grpo_gated's per-episode signal, one of {list(SIGNALS)}.", "r_cf"
    )
    cf_signal_rho: float | None = _help(
        "cf_signal oracle: validity plus noise to this within-group correlation given f, in "
        "[1e-6, 1] (1: the validity itself)."
    )
    cf_signal_noise: str = _help(
        f"Noised oracle: noise to exactly rho per group or in every group, one of {list(NOISE)}.",
        "exact",
    )
    cf_gate: str = _help(f"grpo_gated's gate, one of {list(GATES)}.", "auto")
    cf_readout_weight: float = _help(
        "cf_signal readout: weight of the oracle's validity beside the z-scored readout.", 0.0
    )
    sampling_ratio_pass: bool = _help(
        "Extra no-grad pass for old log-probs (sampling-ratio metric).", False
    )
    fast_generation: bool = _help(
        "Prefill each prompt once, run unfinished rows only (same tokens).", True
    )
    max_consecutive_skipped_steps: int = _help("Non-finite steps in a row that stop the run.", 3)
    metrics_path: str | None = _help("JSONL file that receives every logged step.")
    given_keys: list | None = _help(
        "The trainer keys a run config gave (set by build_args); None: those off their default."
    )
    method_args: dict | None = _help(
        "The method's own settings (its `settings` dataclass); None: the method's defaults."
    )
    ratio_guard_low: float = _help("Low end of the mean vLLM importance ratio's band.", 0.95)
    ratio_guard_high: float = _help("High end of the mean vLLM importance ratio's band.", 1.05)
    ratio_guard_patience: int = _help("Steps in a row outside the band that stop the run.", 3)

    def __post_init__(self):
        method = get_method(self.method)
        apply_method(self, method)
        self.method_settings = method.parse_settings(self.method_args)  # checked by the method
        check_gc2po_fields(self, method)
        self.bf16, self.fp16 = self.precision != "fp32", False
        check_vllm_fields(self)
        super().__post_init__()
        check_batch_layout(self, method)

    @property
    def trl_computes_old_logps(self) -> bool:
        """True when TRL runs its own no-grad pass for old log-probs (off-policy reuse, vLLM
        importance-sampling correction): episode states are then captured in that pass."""
        generate_every = self.steps_per_generation * self.num_iterations
        return self.gradient_accumulation_steps % generate_every != 0 or (
            self.use_vllm and self.vllm_importance_sampling_correction
        )

    @property
    def cf_from_states(self) -> bool:
        """The per-episode signal is R_cf, read from episode states (the other signals come from
        the text or from extra passes, at generation)."""
        return self.cf_signal == "r_cf"

    @property
    def advantages_in_loss_forward(self) -> bool:
        """GC2PO on-policy: surprise weights and episode states come from the loss forward
        itself."""
        return not (self.trl_computes_old_logps or self.sampling_ratio_pass)

    def counterfactual_params(self) -> CounterfactualParams:
        """R_cf's hyper-parameters as ``gc2po.core.counterfactual`` takes them (same names)."""
        return CounterfactualParams(
            perturbation=self.perturbation_spec(),
            num_perturbations=self.num_perturbations,
            cf_tau=self.cf_tau,
            lambda_exp=self.lambda_exp,
            lambda_sta=self.lambda_sta,
            cf_eps_u=self.cf_eps_u,
            answer_space=self.answer_space,
            answer_topk=self.answer_topk,
            temperature=self.temperature,
        )

    def perturbation_spec(self) -> list[dict]:
        return spec_from_fields(
            self.perturbation,
            p=self.perturbation_p,
            sigma=self.perturbation_sigma,
            alpha=self.perturbation_alpha,
        )
