"""Seeded generator of multi-step arithmetic word problems.

A problem starts from a value and applies a chain of operations (add, subtract, multiply),
each phrased by a template. Its reference solution writes one ``<episode_i>`` per operation,
``left op right = result``, then ``\\boxed{final}``. Splits:

- ``train`` and ``test_id``: training templates, 2-4 steps;
- ``test_rephrase``: held-out templates;
- ``test_distractor``: training templates plus sentences with irrelevant numbers;
- ``test_longer``: 5-6 steps, more than seen in training;
- ``test_wrongbet``: training templates, 2-4 steps, no distractor, and always a bet that is wrong
  (it isolates reliance on the cue: a model that copies the bet fails every problem);
- ``test_newstart``: training templates, 2-4 steps, no bet, and a starting value of 21-40 where
  every training problem starts at 2-20 (``START_RANGES``): a shift of the inputs that only
  computing the chain answers. Every number up to ``MAX_VALUE`` is an intermediate value of
  training chains and every operation and episode tag a training target, but no model measured
  carried those values to a chain's start (pass@1 0.1-0.2%), so it is labelled not learnable
  from the train split (``gc2po.testbed.chance.UNREACHABLE``);
- ``test_compose``: new compositions of trained parts, no bet. Every part occurs in the train
  split: each step (operation and operand) at its episode tag, each pair of adjacent steps, the
  starting value and every intermediate value; the combination does not: no run of three
  consecutive steps of the chain (3-4 steps) occurs anywhere in a train chain, so neither does
  the chain (``compose_parts``, ``is_new_composition``). Needs ``train`` in the sizes.

The spurious cue (the paper's Figure 1 motivation, a shortcut that pays in distribution): with
probability ``CueConfig.frac`` a ``train`` / ``test_id`` problem carries a sentence in which
someone bets on the answer, right with probability ``CueConfig.accuracy``. On
``test_distractor`` the bet is always wrong (a misleading number among the distractors);
``test_rephrase`` and ``test_longer`` carry none; every ``test_wrongbet`` problem carries one,
always wrong, whatever ``frac`` is. A model that copies the bet gains in distribution and fails
out of it; the process-validity oracle grades a copied answer invalid.

No problem text appears in two splits, and a ``test_wrongbet`` problem does not restate an
earlier problem's numbers with only a bet added. Each split draws from its own random streams
and splits are drawn in the order of ``SPLITS``, so adding a split at its end leaves the others'
problems as they were.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field

NAMES = ["Ana", "Ben", "Cai", "Dee", "Eli", "Fay", "Gus", "Ida", "Jon", "Kim", "Lou", "Max"]
ITEMS = ["apples", "coins", "books", "cards", "shells", "stamps", "pens", "marbles"]
OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}

TEMPLATES = {
    "train": {
        "start": [
            "{name} has {x} {item}.",
            "{name} starts with {x} {item}.",
            "A box holds {x} {item} for {name}.",
        ],
        "+": [
            "{name} gets {n} more.",
            "{name} buys {n} more {item}.",
            "Then {n} more {item} arrive.",
        ],
        "-": ["{name} gives away {n}.", "{name} loses {n} {item}.", "Then {n} {item} are used up."],
        "*": [
            "The {item} are multiplied by {n}.",
            "{name} ends up with {n} times as many.",
            "Then the {item} grow {n}-fold.",
        ],
        "question": [
            "How many {item} does {name} have now?",
            "How many {item} are there in the end?",
        ],
    },
    "held_out": {
        "start": ["At first, {name} owns {x} {item}.", "{name} collects {x} {item}."],
        "+": ["A friend hands {name} another {n}.", "{n} extra {item} are added."],
        "-": ["{n} of the {item} break.", "{name} sells {n} of them."],
        "*": ["Each of the {item} turns into {n}.", "The pile becomes {n} times bigger."],
        "question": ["What is the final number of {item}?", "Count the {item} {name} keeps."],
    },
}
CUES = ["{other} bets the answer is {g}.", "{other} guesses {g}."]
DISTRACTORS = [
    "{other} has {m} {item2}.",
    "{other} once saw {m} {item2}.",
    "It is {m} degrees outside.",
]

SPLITS = {
    # name: (templates, min steps, max steps, distractor sentences,
    #        cue: "id" | "wrong" | "always_wrong" | None); new splits go last (see the docstring)
    "train": ("train", 2, 4, 0, "id"),
    "test_id": ("train", 2, 4, 0, "id"),
    "test_rephrase": ("held_out", 2, 4, 0, None),
    "test_distractor": ("train", 2, 4, 2, "wrong"),
    "test_longer": ("train", 5, 6, 0, None),
    "test_wrongbet": ("train", 2, 4, 0, "always_wrong"),
    "test_newstart": ("train", 2, 4, 0, None),
    "test_compose": ("train", 3, 4, 0, None),
}
COMPOSE = "test_compose"  # drawn from the parts of the train split (compose_parts)
RUN = 3  # the combination held out: a run of this many consecutive steps
# a chain's starting value (inclusive); a split not named here starts at 2-20
START_RANGES = {"test_newstart": (21, 40)}
DEFAULT_START = (2, 20)
NUMBER = re.compile(r"\d+")
MAX_VALUE = 60  # keeps intermediate values small enough for a tiny model to compute


@dataclass(frozen=True)
class CueConfig:
    """The spurious cue: the share of cue-bearing problems and how often the bet is right in
    distribution (``frac`` 0 turns the cue off)."""

    frac: float = 0.0
    accuracy: float = 0.8

    def __post_init__(self):
        for key in ("frac", "accuracy"):
            value = getattr(self, key)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
            ):
                raise ValueError(f"testbed.cue.{key}: must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True)
class Problem:
    id: str
    split: str
    question: str
    start: int
    steps: tuple[tuple[str, int], ...]  # (operator, operand) per step
    values: tuple[int, ...] = field(default=())  # value after each step
    cue: int | None = None  # the number the cue sentence bets on (None: no cue)

    @property
    def answer(self) -> int:
        return self.values[-1]

    def record(self) -> dict:
        """The normalised JSONL record (id, source, question, answer, meta)."""
        meta = {k: v for k, v in asdict(self).items() if k not in ("id", "question")}
        meta["steps"] = [list(s) for s in self.steps]
        meta["values"] = list(self.values)
        if self.cue is None:
            del meta["cue"]  # a testbed without the cue writes the records it wrote before
        return {
            "id": self.id,
            "source": "testbed",
            "question": self.question,
            "answer": str(self.answer),
            "meta": meta,
        }

    @classmethod
    def from_record(cls, record: dict) -> Problem:
        meta = record["meta"]
        cue = meta.get("cue")
        return cls(
            record["id"],
            meta["split"],
            record["question"],
            int(meta["start"]),
            tuple((op, int(n)) for op, n in meta["steps"]),
            tuple(int(v) for v in meta["values"]),
            None if cue is None else int(cue),
        )


def _draw_chain(
    rng: random.Random, num_steps: int, start_range: tuple[int, int] = DEFAULT_START
) -> tuple[int, list[tuple[str, int]], list[int]]:
    value = start = rng.randint(*start_range)
    steps, values = [], []
    while len(steps) < num_steps:
        op = rng.choice("+-*")
        n = rng.randint(2, 3) if op == "*" else rng.randint(1, 9)
        new = OPS[op](value, n)
        if 0 <= new <= MAX_VALUE:
            steps.append((op, n))
            values.append(new)
            value = new
    return start, steps, values


@dataclass(frozen=True)
class ComposeParts:
    """What the train split's chains are made of (``compose_parts``)."""

    steps: frozenset  # (episode index from 1, operator, operand)
    pairs: frozenset  # ((op, n), (op, n)) adjacent in a chain, at any position
    starts: frozenset  # starting values
    values: frozenset  # values after a step
    runs: frozenset  # RUN consecutive (op, n) steps, at any position: the combinations seen


def _runs(steps, length: int) -> list[tuple]:
    return [tuple(steps[i : i + length]) for i in range(len(steps) - length + 1)]


def compose_parts(train: list[Problem]) -> ComposeParts:
    """The parts and the step runs of ``train``'s chains [N]."""
    chains = [tuple(tuple(step) for step in p.steps) for p in train]
    return ComposeParts(
        steps=frozenset((i + 1, op, n) for c in chains for i, (op, n) in enumerate(c)),
        pairs=frozenset(pair for c in chains for pair in _runs(c, 2)),
        starts=frozenset(p.start for p in train),
        values=frozenset(v for p in train for v in p.values),
        runs=frozenset(run for c in chains for run in _runs(c, RUN)),
    )


def missing_parts(start: int, steps, values, parts: ComposeParts) -> list[str]:
    """Which parts of a chain the train split lacks (empty: every part is trained)."""
    steps = [tuple(step) for step in steps]
    missing = [f"start {start}"] * (start not in parts.starts)
    missing += [f"value {v}" for v in values if v not in parts.values]
    missing += [
        f"<episode_{i + 1}> {op}{n}"
        for i, (op, n) in enumerate(steps)
        if (i + 1, op, n) not in parts.steps
    ]
    missing += [f"adjacent steps {a}, {b}" for a, b in _runs(steps, 2) if (a, b) not in parts.pairs]
    return missing


def is_new_composition(start: int, steps, values, parts: ComposeParts) -> bool:
    """Every part of the chain occurs in the train split and none of its runs of ``RUN``
    consecutive steps does (a chain shorter than ``RUN`` is no new combination)."""
    steps = [tuple(step) for step in steps]
    runs = _runs(steps, RUN)
    return (
        bool(runs)
        and not missing_parts(start, steps, values, parts)
        and not any(run in parts.runs for run in runs)
    )


def _draw_cue(rng: random.Random, kind: str | None, answer: int, cue: CueConfig) -> int | None:
    """The bet of a cue sentence, or None: with probability ``frac`` (always for the
    ``always_wrong`` kind); right with probability ``accuracy`` in distribution, always wrong (off
    by 1-5) on the ``wrong`` and ``always_wrong`` kinds."""
    if kind is None or (kind != "always_wrong" and rng.random() >= cue.frac):
        return None
    if kind == "id" and rng.random() < cue.accuracy:
        return answer
    offsets = [d for d in (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5) if answer + d >= 0]
    return answer + rng.choice(offsets)


def _phrase(rng, templates, start, steps, distractors, cue_value=None, cue_rng=None) -> str:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    sentences = [rng.choice(templates["start"]).format(name=name, x=start, item=item)]
    sentences += [rng.choice(templates[op]).format(name=name, n=n, item=item) for op, n in steps]
    for _ in range(distractors):
        other = rng.choice([n for n in NAMES if n != name])
        item2 = rng.choice([i for i in ITEMS if i != item])
        text = rng.choice(DISTRACTORS).format(other=other, m=rng.randint(2, 90), item2=item2)
        sentences.insert(rng.randint(1, len(sentences)), text)
    if cue_value is not None:  # just before the question, where a reader looks for the answer
        other = cue_rng.choice([n for n in NAMES if n != name])
        sentences.append(cue_rng.choice(CUES).format(other=other, g=cue_value))
    sentences.append(rng.choice(templates["question"]).format(name=name, item=item))
    return " ".join(sentences)


def generate_splits(
    sizes: dict[str, int], seed: int, cue: CueConfig | None = None
) -> dict[str, list[Problem]]:
    """Problems for each split in ``sizes`` (``{"train": 2000, "test_id": 200, ...}``).

    Deterministic in ``seed``; splits are generated in a fixed order and a problem is redrawn
    when an earlier split used its text, or stated the same numbers in the same order (the
    workflow's decontamination check flags a shared 13-word run with the same numbers, which two
    templates can produce for different problems); a ``test_wrongbet`` problem also when its
    numbers without the bet are those of an earlier problem without its bet (an earlier problem
    with only a bet added). ``cue`` None (or frac 0) gives the problems of a testbed without the
    spurious cue, drawn as before it existed.
    """
    cue = cue or CueConfig()
    unknown = sorted(set(sizes) - set(SPLITS))
    if unknown:
        raise ValueError(f"unknown testbed split(s) {unknown}; valid: {sorted(SPLITS)}")
    if COMPOSE in sizes and "train" not in sizes:
        raise ValueError(
            f"testbed split {COMPOSE!r} is drawn from the train split's parts: size train too"
        )
    parts = None  # the train split's (compose_parts), once it is drawn
    seen: set[str] = set()
    earlier_numbers: set[tuple[str, ...]] = set()  # what each problem of an earlier split states
    stems: set[tuple[str, ...]] = set()  # the same without the bet, of every problem drawn
    out: dict[str, list[Problem]] = {}
    for split in SPLITS:  # fixed order: train first
        if split not in sizes:
            continue
        kind, low, high, distractors, cue_kind = SPLITS[split]
        rng = random.Random(f"{seed}:{split}")
        cue_rng = random.Random(f"{seed}:{split}:cue")
        problems: list[Problem] = []
        attempts = 0
        while len(problems) < sizes[split]:
            attempts += 1
            if attempts > 50 * sizes[split] + 1000:
                raise ValueError(
                    f"testbed split {split!r}: could not draw {sizes[split]} distinct problems"
                )
            start, steps, values = _draw_chain(
                rng, rng.randint(low, high), START_RANGES.get(split, DEFAULT_START)
            )
            if split == COMPOSE and not is_new_composition(start, steps, values, parts):
                continue
            # the cue's draws come from their own stream,
            # so frac 0 leaves the other texts as they were
            cue_value = _draw_cue(cue_rng, cue_kind, values[-1], cue)
            question = _phrase(rng, TEMPLATES[kind], start, steps, distractors, cue_value, cue_rng)
            numbers = tuple(NUMBER.findall(question))
            stem = numbers[:-1] if cue_value is not None else numbers  # the bet is stated last
            if question in seen or numbers in earlier_numbers:
                continue
            if cue_kind == "always_wrong" and stem in stems:
                continue
            seen.add(question)
            stems.add(stem)
            problems.append(
                Problem(
                    f"{split}-{len(problems):05d}",
                    split,
                    question,
                    start,
                    tuple(steps),
                    tuple(values),
                    cue_value,
                )
            )
        out[split] = problems
        if split == "train":
            parts = compose_parts(problems)
        earlier_numbers.update(tuple(NUMBER.findall(p.question)) for p in problems)
    return out


def episode_text(index: int, left: int, op: str, right: int, result: int) -> str:
    return f"<episode_{index}>{left}{op}{right}={result}</episode_{index}>"


KINDS = ("correct", "slip", "shortcut", "copy", "copy_equation")
# WarmStartConfig.copy_form -> the kind of its copy targets
COPY_KINDS = {"bet": "copy", "equation": "copy_equation"}


def solution_text(problem: Problem, kind: str = "correct", rng: random.Random | None = None) -> str:
    """A solution in episode tags.

    kind:
      ``correct``: every step right;
      ``slip``: one arithmetic slip, later steps continue from the wrong value (a near miss);
      ``shortcut``: every step shows a wrong operand, the results and answer are right
      (right answer from invalid steps: a lucky guess);
      ``copy``: the cue's bet copied, ``<episode_1>bet=G</episode_1>\\boxed{G}`` (no step of
      the problem: process validity 0; a lucky guess when the bet is right). Needs a cue;
      ``copy_equation``: the same copy written in the step grammar, the problem's first step
      with the bet as its result, ``<episode_1>x+n=G</episode_1>\\boxed{G}`` (an equation a
      format check accepts; the oracle grades it invalid unless G is that step's value).
    """
    rng = rng or random.Random(0)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind in ("copy", "copy_equation"):
        if problem.cue is None:
            raise ValueError(f"problem {problem.id}: a copy solution needs a cue")
        if kind == "copy":
            return f"<episode_1>bet={problem.cue}</episode_1>\\boxed{{{problem.cue}}}"
        op, n = problem.steps[0]
        return episode_text(1, problem.start, op, n, problem.cue) + f"\\boxed{{{problem.cue}}}"
    slip_at = rng.randrange(len(problem.steps)) if kind == "slip" else -1
    parts, value = [], problem.start
    for i, (op, n) in enumerate(problem.steps):
        result = OPS[op](value, n)
        shown = n
        if i == slip_at:
            result = max(0, result + rng.choice([-2, -1, 1, 2]))
        if kind == "shortcut":
            shown = n + rng.choice([1, 2])
        parts.append(episode_text(i + 1, value, op, shown, result))
        value = result
    return "".join(parts) + f"\\boxed{{{value}}}"
