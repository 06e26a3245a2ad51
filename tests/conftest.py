"""Shared fixtures: a tokenizer trained in-process and a tiny random causal LM saved with
``save_pretrained`` (no download anywhere)."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from tests.system_packages import MARKER, MARKER_HELP, ProgramGuard, marked_packages, prepare

UNAVAILABLE = pytest.StashKey[dict]()  # package -> why it is missing and cannot be installed
GUARD = ProgramGuard()


# Parallel workers (pytest-xdist) by default, one per physical core up to this many: most tests
# keep one core busy or wait (SLURM jobs, subprocesses, sandbox limits), and the suite's files are
# independent. More workers would each collect the whole suite and hold their own torch.
MAX_WORKERS = 4
# installing Debian packages (tests/system_packages.py) one session process at a time
SYSTEM_PACKAGES_LOCK = os.path.join(tempfile.gettempdir(), "gc2po-tests-system-packages.lock")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``python3 -m pytest`` runs on ``MAX_WORKERS`` workers at most, a test file per worker at a
    time (``--dist loadfile``: a module's fixtures, such as the SLURM cluster, are built once), in
    the order of ``pytest_collection_modifyitems`` below. ``-n N`` sets the count (``-n 0``: one
    process), ``--dist`` the distribution; ``-p no:xdist`` runs without pytest-xdist."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return  # pytest-xdist is off, or this is one of its workers
    option = config.option
    if option.collectonly or option.usepdb:
        return
    if option.numprocesses is None:
        import psutil

        cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
        option.numprocesses = min(cores, MAX_WORKERS) if cores > 1 else 0
    if option.numprocesses and option.dist == "no":
        option.dist = "loadfile"
        option.loadscopereorder = False  # keep the order set below, not the files' test counts


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER_HELP)


def pytest_collection_modifyitems(config, items):
    """On pytest-xdist's workers (which hand out whole files in collection order): the files
    holding a ``slow`` test first, so that the longest files (SLURM, training, the workflow
    runs) start early beside the short ones instead of running alone at the end. The order within
    a file is kept; every worker sorts the same collection the same way."""
    if getattr(config, "workerinput", None) is None:
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable


def pytest_collection_finish(session):
    """Once the selection is known: install the missing Debian packages that the selected tests
    name with the ``system`` marker (tests/system_packages.py), and nothing for a test that names
    none. Where installing is impossible (not root, no apt-get) those tests skip and say why.
    Parallel workers take turns (a file lock): the first installs, the others find it done."""
    if not session.config.option.collectonly:
        from filelock import FileLock

        with FileLock(SYSTEM_PACKAGES_LOCK):
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
    by ``ci_local_run``, not by every test); killed at the session's end.

    Under pytest-xdist one run serves every worker: the first worker to create its folder in the
    workers' common temporary folder starts it, the others attach to it. The starting worker
    lets it finish at its own end (a test on another worker may still read it) unless the
    session is stopping early."""
    items = request.session.items
    if not any("ci_local_run" in getattr(item, "fixturenames", ()) for item in items):
        yield None
        return
    from tests.workflow.ci_run import CiRun

    worker = getattr(request.config, "workerinput", None)
    try:
        if worker is None:
            run = CiRun(tmp_path_factory.mktemp("ci_local"))
        else:
            shared = tmp_path_factory.getbasetemp().parent / "ci_local"
            try:
                shared.mkdir()
            except FileExistsError:  # another worker started it
                yield CiRun.attach(shared)
                return
            run = CiRun(shared)
    except Exception as err:  # noqa: BLE001 - only the tests that read the run may fail for it
        yield err
        return
    yield run
    if worker is None:
        run.stop()
    else:
        session = request.session
        run.wait_or_stop(stopping=bool(session.shouldstop or session.shouldfail))


@pytest.fixture(scope="session")
def shared_outputs(request, tmp_path_factory):
    """Outputs several test files read, made once per session (tests/shared_outputs.py): under
    pytest-xdist the workers share them through their common temporary folder."""
    from tests.shared_outputs import SharedOutputs

    if getattr(request.config, "workerinput", None) is None:
        return SharedOutputs(tmp_path_factory.mktemp("shared_outputs"))
    return SharedOutputs(tmp_path_factory.getbasetemp().parent / "shared_outputs")


@pytest.fixture(scope="session")
def dry_run(shared_outputs):
    """``dry_run(*args)``: ``snakemake -n --forceall --cores 2 *args`` from the checkout, run
    once per session for every test that asks for the same ``args``."""
    return shared_outputs.dry_run


@pytest.fixture(scope="session")
def mini_warm_start(shared_outputs):
    """(model folder, statistics) of the testbed's mini warm start, trained once per session."""
    return shared_outputs.mini_warm_start()


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
