import pytest

from gc2po.testbed.generator import SPLITS, Problem, generate_splits, solution_text
from gc2po.testbed.oracle import grade

SIZES = {
    "train": 300,
    "test_id": 60,
    "test_rephrase": 60,
    "test_distractor": 60,
    "test_longer": 60,
    "test_wrongbet": 60,
}


def test_generator_is_deterministic_per_seed():
    a, b, c = generate_splits(SIZES, 3), generate_splits(SIZES, 3), generate_splits(SIZES, 4)
    assert a == b
    assert [p.question for p in a["train"]] != [p.question for p in c["train"]]


def test_no_problem_text_in_two_splits():
    splits = generate_splits(SIZES, 0)
    seen = {}
    for name, problems in splits.items():
        for problem in problems:
            assert problem.question not in seen, (
                f"{problem.question!r} in {seen.get(problem.question)} and {name}"
            )
            seen[problem.question] = name


def test_split_properties():
    splits = generate_splits(SIZES, 0)
    assert all(2 <= len(p.steps) <= 4 for p in splits["train"] + splits["test_id"])
    assert all(len(p.steps) >= 5 for p in splits["test_longer"])  # longer than anything in training
    train_text = " ".join(p.question for p in splits["train"])
    assert "At first" not in train_text and any(
        "At first" in p.question or "collects" in p.question for p in splits["test_rephrase"]
    )
    # distractors add sentences with numbers that are not part of the chain
    extra = [p for p in splits["test_distractor"] if p.question.count(".") >= len(p.steps) + 3]
    assert len(extra) == len(splits["test_distractor"])


def test_reference_solutions_and_records_round_trip():
    for problem in generate_splits({"train": 50}, 1)["train"]:
        assert Problem.from_record(problem.record()) == problem
        result = grade(problem, solution_text(problem, "correct"))
        assert result.f == 1 and result.p == 1.0 and result.group == "near_ideal"
        slip = grade(problem, solution_text(problem, "slip"))
        assert (
            slip.f == 0 and slip.group == "near_miss" or (slip.f == 0 and len(problem.steps) == 1)
        )
        shortcut = grade(problem, solution_text(problem, "shortcut"))
        assert shortcut.f == 1 and shortcut.p < 0.5 and shortcut.group == "lucky_guess"


def test_unknown_split_raises():
    import pytest

    with pytest.raises(ValueError, match="unknown testbed split"):
        generate_splits({"validation": 3}, 0)
    assert set(SPLITS) == {
        "train",
        "test_id",
        "test_rephrase",
        "test_distractor",
        "test_longer",
        "test_wrongbet",
        "test_newstart",
        "test_compose",
    }


def test_new_start_split_shifts_only_the_starting_value():
    """test_newstart: starts at 21-40 where train starts at 2-20; the same templates, operations,
    operand ranges and step counts; no bet; every value within what training chains reach."""
    from gc2po.testbed.generator import MAX_VALUE

    splits = generate_splits({"train": 500, "test_newstart": 200}, 0)
    train, new = splits["train"], splits["test_newstart"]
    assert {p.start for p in train} <= set(range(2, 21))
    assert {p.start for p in new} <= set(range(21, 41)) and len({p.start for p in new}) > 10
    assert all(p.cue is None for p in new)
    assert {len(p.steps) for p in new} == {2, 3, 4}
    assert {op for p in new for op, _ in p.steps} == {"+", "-", "*"}
    train_operands = {(op, n) for p in train for op, n in p.steps}
    assert {(op, n) for p in new for op, n in p.steps} <= train_operands
    # every value stays within the chains' bound, and every starting value is a value that
    # train chains reach after some step (so its tokens and its arithmetic are taught)
    assert max(v for p in new for v in p.values) <= MAX_VALUE
    assert {p.start for p in new} <= {v for p in train for v in p.values}


def test_the_cue_pays_in_distribution_and_misleads_out_of_it():
    from gc2po.testbed.generator import CueConfig

    sizes = {
        "train": 2000,
        "test_id": 400,
        "test_rephrase": 200,
        "test_distractor": 400,
        "test_longer": 200,
    }
    splits = generate_splits(sizes, 3, CueConfig(frac=0.5, accuracy=0.8))
    for split in ("train", "test_id"):
        cued = [p for p in splits[split] if p.cue is not None]
        assert 0.44 < len(cued) / len(splits[split]) < 0.56
        assert 0.74 < sum(p.cue == p.answer for p in cued) / len(cued) < 0.86
        assert all(f" {p.cue}." in p.question for p in cued)
    misleading = [p for p in splits["test_distractor"] if p.cue is not None]
    assert 0.4 < len(misleading) / 400 < 0.6 and all(
        p.cue != p.answer and p.cue >= 0 for p in misleading
    )
    assert all(p.cue is None for split in ("test_rephrase", "test_longer") for p in splits[split])
    problem = next(p for p in splits["test_id"] if p.cue is not None)
    assert Problem.from_record(problem.record()) == problem


def test_no_cue_writes_the_records_of_a_testbed_without_one():
    from gc2po.testbed.generator import CueConfig

    sizes = {"train": 50, "test_id": 20, "test_distractor": 20}
    plain = generate_splits(sizes, 0)
    assert generate_splits(sizes, 0, CueConfig(frac=0.0)) == plain
    assert all("cue" not in p.record()["meta"] for ps in plain.values() for p in ps)
    with_cue = generate_splits(sizes, 0, CueConfig(frac=0.5))
    assert [p.steps for p in with_cue["train"]] == [
        p.steps for p in plain["train"]
    ]  # the cue draws its own stream


def test_a_copied_bet_is_a_lucky_guess_or_fully_bad_never_valid():
    from gc2po.testbed.generator import CueConfig

    problems = [
        p
        for p in generate_splits({"test_id": 300}, 1, CueConfig(frac=1.0, accuracy=0.5))["test_id"]
    ]
    for problem in problems:
        result = grade(problem, solution_text(problem, "copy"))
        assert result.p == 0 and result.f == int(problem.cue == problem.answer)
        assert result.group == ("lucky_guess" if result.f else "fully_bad")
    uncued = generate_splits({"test_id": 1}, 1)["test_id"][0]
    with pytest.raises(ValueError, match="needs a cue"):
        solution_text(uncued, "copy")


@pytest.mark.parametrize(
    "values", [{"frac": 1.5}, {"accuracy": -0.1}, {"frac": True}, {"frac": "half"}]
)
def test_a_bad_cue_setting_is_refused_naming_the_key(values):
    from gc2po.testbed.data import cue_from_mapping

    with pytest.raises(
        ValueError, match=r"testbed\.cue\.(frac|accuracy): must be a number in \[0, 1\]"
    ):
        cue_from_mapping(values)
    with pytest.raises(ValueError, match=r"testbed\.cue: unknown key\(s\) \['rate'\]"):
        cue_from_mapping({"rate": 0.5})


@pytest.mark.parametrize("cue", [None, {"frac": 0.5, "accuracy": 0.9}])
def test_the_wrong_bet_split_always_bets_wrong_on_plain_train_style_problems(cue):
    from gc2po.testbed.generator import NUMBER, TEMPLATES, CueConfig

    sizes = {"train": 300, "test_id": 60, "test_wrongbet": 200}
    splits = generate_splits(sizes, 2, CueConfig(**cue) if cue else None)
    wrongbet = splits["test_wrongbet"]
    assert len(wrongbet) == 200
    # a bet on every problem, whatever the cue's frac (0 here when cue is None), always wrong
    assert all(p.cue is not None and p.cue != p.answer and p.cue >= 0 for p in wrongbet)
    assert all(abs(p.cue - p.answer) <= 5 for p in wrongbet)
    assert all(2 <= len(p.steps) <= 4 for p in wrongbet)
    # train templates and no distractor: start, one sentence per step, the bet, the question
    assert all(p.question.count(".") + p.question.count("?") == len(p.steps) + 3 for p in wrongbet)
    held_out = {t.split("{")[0] for ts in TEMPLATES["held_out"].values() for t in ts} - {""}
    assert not any(phrase in p.question for p in wrongbet for phrase in held_out)
    assert all(f" {p.cue}." in p.question for p in wrongbet)
    # no problem of an earlier split with only a bet added
    earlier = {
        tuple(NUMBER.findall(p.question))[: -1 if p.cue is not None else None]
        for split in ("train", "test_id")
        for p in splits[split]
    }
    assert not any(tuple(NUMBER.findall(p.question))[:-1] in earlier for p in wrongbet)


def test_adding_the_wrong_bet_split_leaves_every_other_split_as_it_was():
    from gc2po.testbed.generator import CueConfig

    cue = CueConfig(frac=0.5, accuracy=0.9)
    others = {k: v for k, v in SIZES.items() if k != "test_wrongbet"}
    assert generate_splits(others, 0, cue) == {
        k: v for k, v in generate_splits(SIZES, 0, cue).items() if k != "test_wrongbet"
    }


def test_gc2po_eval_knows_every_split():
    from gc2po.evaluation.cli_eval import TESTBED_SPLITS

    assert TESTBED_SPLITS == tuple(SPLITS)


def test_the_rl_train_split_keeps_every_uncued_problem_and_a_share_of_cued_ones(tmp_path):
    import json

    from gc2po.testbed.data import write_splits

    manifest = write_splits(
        {"train": 400, "test_id": 20}, 0, tmp_path, {"frac": 0.5, "accuracy": 0.9}, 0.2
    )
    read = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    cut = [json.loads(line) for line in (tmp_path / "train_rl.jsonl").read_text().splitlines()]
    uncued = {r["id"] for r in read if "cue" not in r["meta"]}
    cued_kept = [r for r in cut if "cue" in r["meta"]]
    assert uncued <= {r["id"] for r in cut}  # every uncued problem stays
    assert len(cued_kept) == len(uncued) // 4  # a fifth of the cut is cued: 1 cued per 4 uncued
    assert {r["id"] for r in cut} <= {r["id"] for r in read}  # a subset of the train split
    assert manifest["rl_cued_share"] == 0.2
    assert manifest["splits"]["train_rl"]["count"] == len(cut)
    assert manifest["splits"]["train"]["count"] == 400  # the warm start's split is whole


def test_without_a_share_no_rl_train_split_is_written_and_the_others_are_the_same(tmp_path):
    from gc2po.testbed.data import write_splits

    cue = {"frac": 0.5, "accuracy": 0.9}
    manifest = write_splits({"train": 50, "test_id": 10}, 0, tmp_path / "a", cue)
    assert not (tmp_path / "a" / "train_rl.jsonl").exists()
    assert "train_rl" not in manifest["splits"]
    write_splits({"train": 50, "test_id": 10}, 0, tmp_path / "b", cue, 0.2)
    write_splits({"train": 50, "test_id": 10}, 0, tmp_path / "c", cue, 0.2)
    for split in ("train", "test_id"):  # the share changes no split's file
        assert (tmp_path / "a" / f"{split}.jsonl").read_bytes() == (
            tmp_path / "b" / f"{split}.jsonl"
        ).read_bytes()
    # the cut is a pure function of the config
    assert (tmp_path / "b" / "train_rl.jsonl").read_bytes() == (
        tmp_path / "c" / "train_rl.jsonl"
    ).read_bytes()


@pytest.mark.parametrize("uncued", [172, 1495])
def test_the_cut_counts_exactly_where_floats_round_down(uncued):
    from gc2po.testbed.data import with_cued_share

    records = [{"id": i, "meta": {}} for i in range(uncued)]
    records += [{"id": -1 - i, "meta": {"cue": 3}} for i in range(uncued)]
    # 0.2 * 172 / 0.8 is 42.99999... in floats; a fifth cued is 1 cued per 4 uncued: 43
    assert sum("cue" in r["meta"] for r in with_cued_share(records, 0.2)) == uncued // 4


@pytest.mark.parametrize("share", [1.0, -0.1, True, "0.2"])
def test_a_bad_rl_cued_share_is_refused_before_anything_is_written(tmp_path, share):
    from gc2po.testbed.data import write_splits

    with pytest.raises(ValueError, match="testbed.rl_cued_share: must be a number in"):
        write_splits({"train": 50}, 0, tmp_path / "out", None, share)
    assert not (tmp_path / "out").exists()
