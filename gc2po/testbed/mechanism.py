"""What a model does with the spurious cue, per seed: process validity, the share of completions
that copy the bet, pass@1 on problems with and without a bet (``test_id``), and pass@1 and the
copy share where every bet is wrong (``test_wrongbet``).

A completion *copies the bet* when its boxed answer is the bet's number and its steps do not
derive it (process validity below the oracle's group line, ``VALID_STEPS``): where a bet is right
a correct solution also states its number, and only the missing steps tell a copy apart. Where
every bet is wrong (``test_wrongbet``) a copy is a wrong answer either way.

Pure functions over per-sample evaluation records (``gc2po.evaluation.run`` writes them) and the
split's problems; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gc2po.testbed.generator import Problem
from gc2po.testbed.oracle import final_answer

VALID_STEPS = 0.5  # the oracle's group line (gc2po.testbed.oracle.assign_group's p_threshold)


def cue_fields(problem: Problem, completion: str, process_validity: float) -> dict:
    """What one sample does with its problem's bet: ``cued`` (the problem states a bet), ``bet``
    (its number, or None), ``answer`` (the completion's boxed answer, or None), ``copies_bet``
    (the answer is the bet and the steps do not derive it; None without a bet)."""
    answer = final_answer(completion)
    cued = problem.cue is not None
    copies = cued and answer == problem.cue and process_validity < VALID_STEPS
    return {
        "cued": cued,
        "bet": problem.cue,
        "answer": answer,
        "copies_bet": copies if cued else None,
    }


def annotate(samples: list[dict], problems: dict[str, Problem]) -> list[dict]:
    """Per-sample records ``{problem_id, completion, correct, process_validity}`` [N] -> the same
    with :func:`cue_fields` of their problem (``problems``: id -> Problem of the split)."""
    out = []
    for sample in samples:
        problem = problems.get(str(sample["problem_id"]))
        if problem is None:
            raise ValueError(
                f"sample of problem {sample['problem_id']!r}: not a problem of the split"
            )
        fields = cue_fields(problem, sample["completion"], float(sample["process_validity"]))
        out.append({**sample, **fields})
    return out


@dataclass(frozen=True)
class Measure:
    """A mean over the samples of one split that ``include`` keeps, of the field ``field``."""

    split: str
    name: str  # its key in CSVs, unique within its split
    label: str  # its column in tables
    include: Callable[[dict], bool]
    field: str

    @property
    def key(self) -> str:
        return f"{self.split}:{self.name}"


def _every(sample: dict) -> bool:
    return True


def _cued(sample: dict) -> bool:
    return sample["cued"]


def _uncued(sample: dict) -> bool:
    return not sample["cued"]


MEASURES = (
    Measure("test_id", "process_validity", "process validity", _every, "process_validity"),
    Measure("test_id", "copy_share", "copy share", _cued, "copies_bet"),
    Measure("test_id", "cued_pass@1", "cued pass@1", _cued, "correct"),
    Measure("test_id", "uncued_pass@1", "uncued pass@1", _uncued, "correct"),
    Measure("test_wrongbet", "pass@1", "pass@1", _every, "correct"),
    Measure("test_wrongbet", "copy_share", "copy share", _cued, "copies_bet"),
)
MEASURE_SPLITS = tuple(dict.fromkeys(m.split for m in MEASURES))


def measures_of(splits) -> list[Measure]:
    """The measures whose split is among ``splits`` (those a config evaluates)."""
    return [m for m in MEASURES if m.split in set(splits)]


def measure_value(measure: Measure, annotated: list[dict]) -> float:
    """The mean of ``measure.field`` over the samples it includes (one seed's samples of its
    split, annotated); NaN when it includes none (no problem with a bet)."""
    values = [float(s[measure.field]) for s in annotated if measure.include(s)]
    return sum(values) / len(values) if values else math.nan


def seed_measures(annotated_by_split: dict[str, list[dict]]) -> dict[str, float]:
    """Measure key -> value, for one seed of one model: ``{split: annotated samples}``."""
    return {
        m.key: measure_value(m, annotated_by_split[m.split])
        for m in measures_of(annotated_by_split)
    }
