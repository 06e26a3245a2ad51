"""One task vocabulary (gc2po.data.tasks) for training, evaluation and the workflow config."""

from __future__ import annotations

import pytest

from gc2po.data.tasks import TASKS, check_task
from gc2po.evaluation import cli_eval, run
from gc2po.rewards import REWARDS


def test_training_and_evaluation_know_the_same_tasks():
    assert TASKS == ("testbed", "benchmark")
    assert set(REWARDS) == set(TASKS) == set(run.FORCE_ANSWER) and cli_eval.TASKS is TASKS


def test_a_task_passes_and_an_old_spelling_names_its_replacement():
    assert [check_task(task, "where") for task in TASKS] == list(TASKS)
    with pytest.raises(ValueError, match=r"^f.yaml: mode: 'benchmarks' is now spelled 'benchmark': set it to "
                                         r"benchmark$"):
        check_task("benchmarks", "f.yaml: mode")
    with pytest.raises(ValueError, match=r"^run: task: must be one of \['testbed', 'benchmark'\], got 3$"):
        check_task(3, "run: task")


def test_the_benchmark_reward_grades_by_the_record_grader_as_evaluation_does():
    reward, grade = REWARDS["benchmark"], run.grader_for("benchmark")
    meta = ['{"grader": "math"}', '{"grader": "choice"}', "{}"]  # {}: math by default
    completions = [[{"role": "assistant", "content": text}] for text in ("\\boxed{4}", "\\boxed{B}", "\\boxed{7}")]
    answers = ["4", "C", "7"]
    rewards = reward(None, completions, answer=answers, meta_json=meta)
    assert rewards == [1.0, 0.0, 1.0]
    assert [grade({"answer": a, "meta": {"grader": "choice"} if i == 1 else {}}, c[0]["content"])["correct"]
            for i, (a, c) in enumerate(zip(answers, completions))] == [True, False, True]
