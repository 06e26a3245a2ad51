"""The docs are for the people who use the project: every page (README.md, docs/ and the index of
benchmarks/, the history in docs/archive/ apart) is at most 30 KB, no paragraph reaches 350 words,
no line tells how the project was written (who worked beside a measurement, rounds of work,
sessions, reviewers, the development branch, which commit a clone was pulled to), the index holds
no maintainer notes,
every job count names a config whose dry run it is, every duration stated for a config's run is
the latest recorded one (docs/measurements-workflow.md, "Workflow wall time", the warm start's
included), a page with GPU figures on another torch than the pinned one says so, the Python
versions claimed are the tested one; every relative link and anchor resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_docs_facts import table_after

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "docs" / "archive"
MAX_PAGE_BYTES = 30 * 1024


def user_pages() -> list[Path]:
    pages = [
        ROOT / "README.md",
        ROOT / "benchmarks" / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]
    return [p for p in pages if ARCHIVE not in p.parents]


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# each: what it catches, the pattern (case-insensitive)
PROCESS_TEXT = {
    "a work session": r"(?<![-\w])sessions?\b",
    "a wave of work": r"\bwaves?\b",
    "a round of work": r"\brounds? of work\b"
    r"|\b(?:first|second|third|fourth|fifth|sixth|last|this|that|an earlier|a later) round\b"
    r"(?! trip)",
    "who else was at work": r"\bhelper agents?\b|\bother engineers?\b|\bother (?:people|agents)\b"
    r"|\bhelpers? (?:was|were|worked|working)\b",
    "work beside a measurement": r"\bbeside (?:it|them|a (?:workflow|test|full|running) \w+"
    r"|the (?:test suite|tests|docs tests|study|suite|dose-response run|vLLM CPU step))\b"
    r"|\b(?:quiet|shared) (?:2-core )?machine\b|\b(?:with|beside) other (?:work|runs|jobs)\b",
    "which commit a clone was pulled to": r"\bpulled (?:in)?to\b|\bgit pull\b"
    r"|\bclones? (?:at|of) commit\b",
    "an earlier version of the page": r"\b(?:earlier|previous) version of (?:this|the) page\b"
    r"|\bused before this page\b",
    "who reviewed the work": r"\breviewer(?:s|'s|s')?\b",
    "the development branch": r"--branch infra\b|\binfra branch\b",
}


def process_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, matched text) of each line telling how the project was written."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in PROCESS_TEXT.items():
            found += [(number, what, m[0]) for m in re.finditer(pattern, line, re.IGNORECASE)]
    return found


def test_the_pages_are_found():
    pages = {name(p) for p in user_pages()}
    assert {"README.md", "docs/index.md", "docs/results.md", "docs/measurements.md"} <= pages
    assert not any(page.startswith("docs/archive/") for page in pages)


@pytest.mark.parametrize("page", user_pages(), ids=name)
def test_a_page_is_at_most_30_kb(page):
    size = len(page.read_bytes())
    assert size <= MAX_PAGE_BYTES, f"{name(page)}: {size} bytes; split it or archive its history"


def test_no_page_tells_how_the_project_was_written():
    problems = [
        f"{name(page)}:{number}: {what}: {text!r}"
        for page in user_pages()
        for number, what, text in process_lines(page.read_text())
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "line",
    [
        "measured in the fifth session",
        "a second wave of trainings",
        "the rows of this round of work",
        "beside the test suite, load 4",
        "a helper agent reading code beside it",
        "on the shared 2-core machine",
        "about 30 minutes measured beside other work",
        "a clean clone of commit 0e6c745",
        "The machine of a reviewer's report, a Zen 3 EPYC",
        "Two `git clone --branch infra` of commit c8af1c2",
        "`git pull` of commit ef1309c",
        "with commit 501af47 pulled into it",
        "the intervals used before this page was rewritten",
    ],
)
def test_the_process_check_catches(line):
    assert process_lines(line)


@pytest.mark.parametrize(
    "line",
    [
        "bubblewrap's `--new-session` flag",
        "the waveform",
        "a CI helper script",
        "into the remote beside the checkout",
        "on an idle 2-core machine",
        "two clean clones of one commit",
        "this round trip of DVC",
    ],
)
def test_the_process_check_passes(line):
    assert not process_lines(line)


# --- paragraphs, the index, torch and Python versions ----------------------------------------

MAX_PARAGRAPH_WORDS = 350  # a paragraph this long is split where its topic changes


def prose_blocks(text: str) -> list[str]:
    """The paragraphs of a page: code (fenced or indented) left out, a table row and a list
    item each a paragraph of its own."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    blocks = []
    for block in paragraphs(text):
        if all(line.startswith("    ") for line in block.splitlines() if line.strip()):
            continue  # an indented code block
        blocks += re.split(r"\n(?=\s*(?:[-*]|\d+\.) )", block)
    return blocks


def long_paragraphs(page: str, text: str) -> list[str]:
    return [
        f"{page}: a paragraph of {len(block.split())} words: {block[:60]!r}..."
        for block in prose_blocks(text)
        if len(block.split()) >= MAX_PARAGRAPH_WORDS
    ]


def test_no_paragraph_reaches_350_words():
    problems = [p for page in user_pages() for p in long_paragraphs(name(page), page.read_text())]
    assert not problems, "\n".join(problems)


def test_the_paragraph_check_can_fail():
    long = " ".join(["word"] * MAX_PARAGRAPH_WORDS)
    assert long_paragraphs("p", f"intro\n\n{long}\n")
    # a list's items and a table's rows are paragraphs of their own; code is not prose
    items = "\n".join(f"- {' '.join(['word'] * 100)}" for _ in range(4))
    rows = "\n".join(f"| {' '.join(['word'] * 100)} |" for _ in range(4))
    code = f"```\n{long}\n```\n\n    {long}\n"
    assert not long_paragraphs("p", f"{items}\n\n{rows}\n\n{code}")


def test_the_index_holds_no_maintainer_notes():
    """docs/index.md is the reader's map: which test checks what belongs to the tests."""
    index = (ROOT / "docs" / "index.md").read_text()
    named = sorted(set(re.findall(r"tests/[\w/]+\.py", index)))
    assert not named, f"docs/index.md names the tests {named}"


def pinned(package: str) -> str:
    return re.search(rf'"{package}==([\d.]+)"', (ROOT / "pyproject.toml").read_text())[1]


def unpinned_torch(page: str, text: str, pin: str) -> list[str]:
    """Figures measured on a torch other than the pinned one, on a page that does not say the
    pin (each such page must say which version the figures ran on and which one is pinned)."""
    others = sorted({v for v in re.findall(r"torch[ =](\d+\.\d+)", text) if not pin.startswith(v)})
    return [f"{page}: figures on torch {v}, the page never names the pin {pin}" for v in others
            if pin not in text]  # fmt: skip


def test_a_page_with_figures_on_another_torch_says_the_pin():
    pin = pinned("torch")
    problems = [
        p for page in user_pages() for p in unpinned_torch(name(page), page.read_text(), pin)
    ]
    assert not problems, "\n".join(problems)
    assert unpinned_torch("p", "device=cuda torch=2.11.0+cu130", "2.13.0")
    assert not unpinned_torch("p", "torch 2.11.0 (the pin is 2.13.0)", "2.13.0")


def test_the_python_claimed_is_the_one_tested():
    """The tests run on Python 3.11 only (the conda envs pin it): no page claims a range."""
    claims = [
        f"{name(page)}: {m[0]!r}"
        for page in user_pages()
        for m in re.finditer(r"Python\s*>=\s*3\.\d+|Python 3\.1[2-9]\+?", page.read_text())
    ]
    assert not claims, claims
    for env in ("gc2po.yaml", "gc2po-gpu.yaml"):
        assert "python=3.11" in (ROOT / "workflow" / "envs" / env).read_text(), env


# --- job counts and durations ---------------------------------------------------------------

CONFIG = re.compile(r"config/[\w.]+\.ya?ml")
JOBS = re.compile(r"\b(\d+) jobs\b")
DURATION = re.compile(r"\b(?:\d+ h )?\d+ min(?: \d+ s)?\b")


def documented_jobs() -> dict[str, int]:
    """config -> its job count in docs/workflow.md's config table, which
    tests/test_docs_facts.py checks against a dry run (``snakemake -n --forceall``)."""
    rows = table_after((ROOT / "docs" / "workflow.md").read_text(), "## The configs")
    return {CONFIG.search(row[0])[0]: int(row[4]) for row in rows}


def recorded_runs() -> dict[str, str]:
    """overlay (or config/config.yaml for the default) -> the wall time of its latest
    recorded run, from docs/measurements-workflow.md's table."""
    text = (ROOT / "docs" / "measurements-workflow.md").read_text()
    runs = {}
    for row in table_after(text, "## Workflow wall time"):
        configs = CONFIG.findall(row[1])
        overlay = next((c for c in configs if c != "config/config.yaml"), "config/config.yaml")
        runs[overlay] = DURATION.search(row[2])[0]
    return runs


def paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks, each table row its own block."""
    blocks = []
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith("|"):
            blocks += block.splitlines()
        else:
            blocks.append(block)
    return blocks


def count_problems(page: str, text: str, jobs: dict[str, int]) -> list[str]:
    """Each "<n> jobs" must name a config of the block whose dry run plans n jobs, or
    follow "only"/"of" (a rerun's share of a run: "only the 20 sweep trainings")."""
    problems = []
    for block in paragraphs(text):
        named = [jobs[c] for c in CONFIG.findall(block) if c in jobs]
        for match in JOBS.finditer(block):
            if int(match[1]) not in named:
                problems.append(f"{page}: {match[0]!r}, the configs it names plan {named}")
    return problems


def duration_problems(page: str, text: str, runs: dict[str, str]) -> list[str]:
    """A block naming one recorded run's config (the overlay, or the default alone) and a
    duration in the same sentence must state that run's recorded wall time."""
    problems = []
    for block in paragraphs(text):
        for sentence in re.split(r"(?<=[.;:])\s", " ".join(block.split())):
            configs = [c for c in CONFIG.findall(sentence) if c in runs]
            overlays = [c for c in configs if c != "config/config.yaml"] or configs
            durations = DURATION.findall(sentence)
            if len(set(overlays)) == 1 and durations and runs[overlays[0]] not in durations:
                problems.append(
                    f"{page}: {sentence[:120]!r} states {durations}, the latest recorded run of "
                    f"{overlays[0]} took {runs[overlays[0]]}"
                )
    return problems


def test_every_job_count_is_a_configs_dry_run():
    jobs = documented_jobs()
    problems = [
        problem
        for page in user_pages()
        for problem in count_problems(name(page), page.read_text(), jobs)
    ]
    assert not problems, "\n".join(problems)


def test_every_duration_of_a_configs_run_is_the_latest_recorded():
    runs = recorded_runs()
    assert "config/config.yaml" in runs and "config/testbed_full.yaml" in runs
    problems = [
        problem
        for page in user_pages()
        if page.name != "measurements-workflow.md"
        for problem in duration_problems(name(page), page.read_text(), runs)
    ]
    assert not problems, "\n".join(problems)


def warm_start_times(text: str) -> tuple[str, list[str]]:
    """(the warm start of the default's latest recorded run with one, in its wall-time row; the
    warm start times "Where the default's time goes" states) of docs/measurements-workflow.md."""
    row = next(
        r for r in table_after(text, "## Workflow wall time") if "config/config.yaml" in r[1]
    )
    # the wall time's cell, or, where the default installs its shipped base model, the
    # conditions' record of the run before it was shipped
    recorded = re.search(r"the warm start ([\d,]+ s)", " ".join(row[2:]))[1]
    where = text.split("Where the default's time goes", 1)[1].split("\n\n", 1)[0]
    stated = re.findall(r"warm start[^.;]*?(\d[\d,.]* (?:s|min))", where)
    return recorded, stated


def test_the_defaults_warm_start_time_is_its_latest_recorded_one():
    recorded, stated = warm_start_times((ROOT / "docs" / "measurements-workflow.md").read_text())
    assert stated and stated[0] == recorded, (recorded, stated)
    # the sentence before: a warm start "about 3.5 min" beside the row's 1,048 s
    stale = (
        "## Workflow wall time\n\n| run | command | wall time | when |\n|---|---|---|---|\n"
        "| default | `snakemake --cores 2` (`config/config.yaml`) | 33 min (the warm start 1,048 s)"
        " | x |\n\nWhere the default's time goes (its job logs): the warm start about 3.5 min\n"
    )
    recorded, stated = warm_start_times(stale)
    assert (recorded, stated) == ("1,048 s", ["3.5 min"])


def test_the_count_and_duration_checks_can_fail():
    jobs = {"config/testbed_full.yaml": 241}
    assert count_problems("p", "`config/testbed_full.yaml` plans 201 jobs.", jobs)
    assert not count_problems("p", "`config/testbed_full.yaml` plans 241 jobs.", jobs)
    assert count_problems("p", "The study ran 185 jobs.", jobs)
    runs = {"config/testbed_full.yaml": "1 h 30 min 07 s", "config/config.yaml": "14 min 42 s"}
    stale = "The full Table 1 (`config/testbed_full.yaml`) takes 1 h 10 min."
    assert duration_problems("p", stale, runs)
    assert not duration_problems("p", stale.replace("1 h 10 min", "1 h 30 min 07 s"), runs)


# --- links ----------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings."""
    found = set()
    for line in text.splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
            found.add(slug)
    return found


def test_every_relative_link_and_anchor_resolves():
    problems = []
    for page in user_pages():
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                problems.append(f"{name(page)}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                problems.append(f"{name(page)}: {target}: no such heading")
    assert not problems, "\n".join(problems)


# --- the version ----------------------------------------------------------------------------


def test_the_version_is_the_changelogs_latest_everywhere_it_is_reported():
    """pyproject.toml's version is CHANGELOG.md's latest entry, CITATION.cff's version and what
    ``gc2po --version`` reports (the installed package's metadata)."""
    from importlib import metadata

    import yaml

    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    latest = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(), re.M)[1]
    assert latest == version, f"CHANGELOG.md's latest entry is {latest}, pyproject.toml {version}"
    assert str(yaml.safe_load((ROOT / "CITATION.cff").read_text())["version"]) == version
    assert metadata.version("gc2po") == version, "reinstall the package: pip install -e ."
