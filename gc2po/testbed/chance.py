"""How a testbed split's pass@1 reads: the chance level of a question-blind guesser, and whether
the train split can teach the split at all.

The chance level is the pass@1 of a guesser that never reads the question and draws its answer
from the train split's answer distribution: sum over answers a of P_train(a) P_split(gold = a).

``test_rephrase``, ``test_distractor`` and ``test_longer`` are labelled *not learnable from the
train split* (a choice of the project: labelled rather than made reachable): nothing trained on
the train split, the tokenizer and the warm start included, sees what they need. A table's Holm
family holds only the other splits (``gc2po.reporting.captions.holm_family``). ``UNREACHABLE``
says why; ``tests/testbed/test_chance.py`` checks each reason against the generator.
"""

from __future__ import annotations

from collections import Counter

from gc2po.testbed.generator import SPLITS

NOT_LEARNABLE = "not learnable from the train split"
# split -> why the train split cannot teach it (None: it can); every split of the generator
UNREACHABLE: dict[str, str | None] = {
    "train": None,
    "test_id": None,
    "test_rephrase": (
        "its held-out templates' verbs (sells, hands, break, turns into, ...) never occur in the "
        "train split, which alone trains the tokenizer, the warm start and RL"
    ),
    "test_distractor": (
        "its distractor sentences (another person's unrelated count, the weather) never occur in "
        "the train split, which has none, so nothing trained learns to skip one"
    ),
    "test_longer": (
        "it needs <episode_5> and <episode_6>, never a training target (train chains have 2-4 "
        "steps)"
    ),
    "test_wrongbet": None,
    "test_newstart": (
        "its starting values 21-40 never start a training chain (train starts are 2-20); they "
        "occur only as intermediate values, and no model measured carried them to a chain's start "
        "(pass@1 0.1-0.2% for the base, GRPO, both GC2PO forms and the f x p control, the recipe "
        "overlay's run at commit 078b820)"
    ),
    # every part (step at its episode tag, adjacent pair, start, value) is a train part
    "test_compose": None,
}


def chance_level(split_records: list[dict], train_records: list[dict]) -> float:
    """Pass@1 of a question-blind guesser drawing from the train answers: sum over answers a of
    P_train(a) * P_split(gold = a). Records: normalised ``{answer, ...}`` [N_split], [N_train];
    answers compare as text (``"25"``). Returns a fraction in [0, 1]."""
    if not split_records or not train_records:
        raise ValueError(
            "chance_level needs records of both the split and the train split, got "
            f"{len(split_records)} and {len(train_records)}"
        )
    train = Counter(str(record["answer"]) for record in train_records)
    split = Counter(str(record["answer"]) for record in split_records)
    return sum(train[answer] * count for answer, count in split.items()) / (
        sum(train.values()) * sum(split.values())
    )


def split_of(records: list[dict], where: str = "records") -> str:
    """The one testbed split ``records`` belong to (their ``meta.split``)."""
    splits = sorted({str(record.get("meta", {}).get("split")) for record in records})
    if len(splits) != 1 or splits[0] not in SPLITS:
        raise ValueError(
            f"{where}: expected the records of one testbed split ({sorted(SPLITS)}) in "
            f"meta.split, found {splits}"
        )
    return splits[0]


def split_labels(split_records: list[dict], train_records: list[dict], where: str = "") -> dict:
    """What an evaluation summary of a testbed split records about the split:
    ``{"chance_level": fraction, "reachable": bool}``."""
    split = split_of(split_records, where or "split records")
    return {
        "chance_level": chance_level(split_records, train_records),
        "reachable": UNREACHABLE[split] is None,
    }
