"""Shared fixtures: a tokenizer trained in-process and a tiny random causal LM saved with
``save_pretrained`` (no download anywhere)."""

from __future__ import annotations

import json

import pytest

from tests.system_packages import MARKER, MARKER_HELP, ProgramGuard, marked_packages, prepare

UNAVAILABLE = pytest.StashKey[dict]()  # package -> why it is missing and cannot be installed
GUARD = ProgramGuard()


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER_HELP)


def pytest_collection_finish(session):
    """Once the selection is known: install the missing Debian packages that the selected tests
    name with the ``system`` marker (tests/system_packages.py), and nothing for a test that names
    none. Where installing is impossible (not root, no apt-get) those tests skip and say why."""
    if not session.config.option.collectonly:
        session.config.stash[UNAVAILABLE] = prepare(session.items)


def _guarded(item):
    """A test's setup or call, in which starting a listed package's program that the test's
    ``system`` markers do not name fails the test, naming the package."""
    GUARD.start()
    try:
        result = yield
    finally:
        unmarked = GUARD.stop(item)
    if unmarked:
        names = ", ".join(repr(p) for p in sorted(unmarked))
        pytest.fail(
            f"{item.nodeid} runs a program of the Debian package(s) {names} of "
            f"system-packages.txt without naming it: add @pytest.mark.{MARKER}({names})",
            pytrace=False,
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    unavailable = item.config.stash.get(UNAVAILABLE, {})
    reasons = [unavailable[p] for p in sorted(marked_packages(item)) if p in unavailable]
    if reasons:
        pytest.skip("; ".join(reasons))
    return (yield from _guarded(item))


# Teardown is not guarded: a module's or session's fixtures end in the teardown of whichever
# test ran last, which need not be one that uses them (the SLURM cluster stops with scancel).
@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _guarded(item))


@pytest.fixture(scope="session", autouse=True)
def ci_run_in_background(request, tmp_path_factory):
    """The workflow tests' ci run (tests/workflow/ci_run.py), started with the session where a
    selected test reads it (``ci_local_run``), else None; the error if it could not start (raised
    by ``ci_local_run``, not by every test); killed at the session's end."""
    items = request.session.items
    if not any("ci_local_run" in getattr(item, "fixturenames", ()) for item in items):
        yield None
        return
    from tests.workflow.ci_run import CiRun

    try:
        run = CiRun(tmp_path_factory.mktemp("ci_local"))
    except Exception as err:  # noqa: BLE001 - only the tests that read the run may fail for it
        yield err
        return
    yield run
    run.stop()


@pytest.fixture(autouse=True)
def _git_revision_per_test():
    """gc2po.evaluation.provenance runs git once per process (cached): cleared before each test,
    so that every test reaching it starts git and the guard sees each, whatever ran before."""
    from gc2po.evaluation.provenance import git_revision

    git_revision.cache_clear()


CORPUS = [
    "<episode_1> First, 3 + 4 = 7. </episode_1> <episode_2> Then 7 * 2 = 14. </episode_2> The "
    "answer is \\boxed{14}.",
    "Let me think.\n\nWe add 12 and 30 to get 42.\n\nSo the answer is \\boxed{42}.",
    "<episode_3> Compute 5 - 2 = 3 <episode_5> and 3 * 3 = 9 </episode_5> final \\boxed{9}",
    "Tom has 5 apples and buys 3 more. How many apples does Tom have?",
]


@pytest.fixture(scope="session")
def fast_tokenizer():
    from gc2po.models.build import train_tokenizer

    return train_tokenizer(CORPUS * 20, vocab_size=300)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, fast_tokenizer):
    """A 2-layer Llama with random weights and the test tokenizer, saved like a Hub model."""
    from gc2po.models.build import build_causal_lm

    path = tmp_path_factory.mktemp("tiny_model")
    model = build_causal_lm(fast_tokenizer, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    model.save_pretrained(path)
    fast_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def testbed_train_file(tmp_path_factory):
    from gc2po.testbed.generator import generate_splits

    path = tmp_path_factory.mktemp("testbed") / "train.jsonl"
    problems = generate_splits({"train": 16}, seed=0)["train"]
    path.write_text("".join(json.dumps(p.record()) + "\n" for p in problems))
    return path


@pytest.fixture
def run_files(tmp_path):
    """The smallest valid run config's files: an (empty) model folder and one training row."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "q", "answer": "1"}) + "\n")
    return {
        "model": str(model),
        "train_data": str(data),
        "output_dir": str(tmp_path / "out"),
        "task": "testbed",
    }
