"""One task vocabulary (gc2po.data.tasks) for training, evaluation and the workflow config."""

from __future__ import annotations

import json

import pytest

from gc2po.data.tasks import TASKS, check_task
from gc2po.evaluation import cli_eval, run
from gc2po.training.rewards import REWARDS


def test_training_and_evaluation_know_the_same_tasks():
    assert TASKS == ("testbed", "benchmark")
    assert set(REWARDS) == set(TASKS) == set(run.FORCE_ANSWER) and cli_eval.TASKS is TASKS


def test_a_task_passes_and_an_old_spelling_names_its_replacement():
    assert [check_task(task, "where") for task in TASKS] == list(TASKS)
    with pytest.raises(ValueError) as err:
        check_task("benchmarks", "f.yaml: mode")
    assert str(err.value) == (
        "f.yaml: mode: 'benchmarks' is now spelled 'benchmark': set it to benchmark"
    )
    with pytest.raises(ValueError) as err:
        check_task(3, "run: task")
    assert str(err.value) == "run: task: must be one of ['testbed', 'benchmark'], got 3"


def test_the_benchmark_reward_grades_by_the_record_grader_as_evaluation_does():
    reward, grade = REWARDS["benchmark"], run.grader_for("benchmark")
    metas = [{"grader": "math"}, {"grader": "choice"}, {}]  # {}: math by default
    texts, answers = ["\\boxed{4}", "\\boxed{B}", "\\boxed{7}"], ["4", "C", "7"]
    completions = [[{"role": "assistant", "content": text}] for text in texts]
    rewards = reward(None, completions, answer=answers, meta_json=[json.dumps(m) for m in metas])
    assert rewards == [1.0, 0.0, 1.0]
    grades = [
        grade({"answer": a, "meta": m}, text)["correct"]
        for a, m, text in zip(answers, metas, texts)
    ]
    assert grades == [True, False, True]
