"""No non-finite step reaches the weights.

At each optimizer step the trainer asks :class:`NonFiniteStepGuard` for the gradient norm (it
clips as ``torch.nn.utils.clip_grad_norm_`` does, but looks first, so the parameter whose
gradient went non-finite is known before clipping spreads NaN to every gradient). A step whose
loss or gradient norm is not finite is skipped: gradients are dropped (``p.grad = None``, so
AdamW leaves weights and state untouched) and the optimizer reports the step as skipped, so the
LR scheduler does not advance either. ``max_consecutive`` skips in a row stop the run with an
error naming the step, the first non-finite parameter and the batch's prompt ids.

Under DeepSpeed the engine steps inside ``backward``; its own overflow check skips the step
(``optimizer_step_was_skipped``) and the guard only counts and stops.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class NonFiniteStepsError(RuntimeError):
    pass


class NonFiniteStepGuard:
    def __init__(self, max_consecutive: int):
        if max_consecutive < 1:
            raise ValueError(f"max_consecutive must be >= 1, got {max_consecutive!r}")
        self.max_consecutive = max_consecutive
        self.skipped_total = 0
        self.consecutive = 0
        self._prompt_ids: list[str] = []
        self._loss_finite = True
        self._first_bad: str | None = None

    # -- what the step saw -----------------------------------------------------------------------
    def note_prompts(self, prompt_ids: Iterable) -> None:
        for pid in prompt_ids:
            if not self._prompt_ids or self._prompt_ids[-1] != str(pid):
                self._prompt_ids.append(str(pid))

    def note_loss(self, loss: torch.Tensor) -> None:
        if not torch.isfinite(loss.detach()).all():
            self._loss_finite = False

    # -- gradient norm ---------------------------------------------------------------------------
    def clip(
        self, named_parameters: Iterable[tuple[str, torch.nn.Parameter]], max_norm: float | None
    ) -> torch.Tensor:
        """Total gradient norm (2-norm over all gradients); clips to ``max_norm`` when it is finite.
        When it is not, records the first parameter (in model order) whose gradient is
        not finite."""
        params = [(name, p) for name, p in named_parameters if p.grad is not None]
        grads = [p.grad for _, p in params]
        if not grads:
            return torch.tensor(0.0)
        total = torch.nn.utils.get_total_norm(grads, norm_type=2.0, foreach=True)
        if torch.isfinite(total):
            if max_norm is not None and max_norm > 0:
                torch.nn.utils.clip_grads_with_norm_(
                    [p for _, p in params], max_norm, total, foreach=True
                )
        else:
            self._first_bad = next(
                (name for name, p in params if not torch.isfinite(p.grad).all()), None
            )
        return total

    # -- the decision ----------------------------------------------------------------------------
    def end_step(
        self,
        grad_norm: float | torch.Tensor | None,
        step: int,
        parameters: Iterable[torch.nn.Parameter],
        skipped_by_engine: bool = False,
    ) -> bool:
        """Decide whether the step that just accumulated its gradients is skipped; drop the
        gradients if so. Returns True when skipped. Raises NonFiniteStepsError after
        ``max_consecutive`` skips in a row."""
        norm = float(grad_norm) if grad_norm is not None else 0.0
        skip = skipped_by_engine or not self._loss_finite or not math.isfinite(norm)
        if skip and not skipped_by_engine:
            for p in parameters:
                p.grad = None
        if skip:
            self.skipped_total += 1
            self.consecutive += 1
            if self.consecutive >= self.max_consecutive:
                raise NonFiniteStepsError(
                    f"{self.consecutive} consecutive optimizer steps had a non-finite loss or "
                    "gradient norm and were "
                    f"skipped (last at step {step}; loss finite: {self._loss_finite}, grad norm: "
                    f"{norm}); first "
                    "non-finite parameter: "
                    f"{self._first_bad or 'unknown (gradients partitioned by the engine)'}; "
                    f"prompt ids of the batch: {self._prompt_ids}"
                )
        else:
            self.consecutive = 0
        self._prompt_ids, self._loss_finite, self._first_bad = [], True, None
        return skip


class NonFiniteStepMixin:
    """The trainer overrides that send every optimizer step through ``self.step_guard`` (a
    :class:`NonFiniteStepGuard`); mixed into the trainer before TRL's class."""

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.step_guard.note_loss(loss)
        return loss

    def _clip_grad_norm(self, model):
        if self.is_deepspeed_enabled:
            return super()._clip_grad_norm(model)
        return self.step_guard.clip(model.named_parameters(), self.args.max_grad_norm)

    def _get_grad_norm(self, model, grad_norm=None):
        if grad_norm is None and not self.is_deepspeed_enabled:
            grad_norm = self.step_guard.clip(model.named_parameters(), None)
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        engine_skipped = self.is_deepspeed_enabled and self.accelerator.optimizer_step_was_skipped
        skipped = self.step_guard.end_step(
            grad_norm, self.state.global_step + 1, model.parameters(), engine_skipped
        )
        if not self.is_deepspeed_enabled:
            # accelerate's optimizer reports a skipped step (its GradScaler overflow flag) through
            # `step_was_skipped`; the Trainer and the LR scheduler then leave the schedule untouched
            self.optimizer._is_overflow = skipped
        self._metrics["train"]["nonfinite/skipped_steps"].append(
            float(self.step_guard.skipped_total)
        )
        return grad_norm
