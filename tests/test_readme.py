"""The docs name what exists: every code name in backticks in README.md and every page of docs/
resolves, and the package map of docs/method.md is true.

What counts as a code name in an inline span (a span with spaces is a command or prose: only the
repository paths and ``gc2po.*`` names in it are checked, and a leading call's name):

- ``gc2po.<...>``: imports, as a module or a name defined in one;
- a repository path (``benchmarks/workflow/seed_power.py``, ``config/``,
  ``workflow/rules/{a,b}.smk``): exists; the part before a placeholder (``<name>``, ``*``) must
  exist as a folder;
- a config key (``audit.reward_run``, ``evaluate.learning_curve: {...}``, ``trainer.bf16``):
  its path through ``gc2po/workflow/config.schema.yaml`` (``trainer.<field>``: a field of
  ``gc2po/training/config_fields.json``);
- a file name (``run.yaml``): a file of the repository, or a name the code writes (a string);
- an identifier with ``_`` or a call ``(...)``, a CamelCase name, an ``ALL_CAPS`` name, and every
  such component of a dotted or ``/``-separated name (``GC2POConfig.precision``,
  ``episodes/mean_count``): defined, imported or used in the code (an AST scan of gc2po/,
  workflow/, benchmarks/, tests/ and ci/: definitions, arguments, attributes, imports, and the
  strings that are not docstrings; Snakemake rules and strings), a key of a config file, a file
  name, or an importable dotted name (``sys.exit``). Plain words (``audit``, ``seed``) are not
  checked: they are prose as often as code.

Output paths (``results/``, ``resources/``, ``logs/``), system paths and command-line flags are
not checked. Fenced code blocks: their repository paths are.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import pkgutil
import re
from pathlib import Path

import pytest
import yaml

import gc2po

ROOT = Path(__file__).resolve().parents[1]
DOCS = (  # README, the pages of docs/ and its how-tos (docs/archive/ is history, not checked)
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "howto").glob("*.md")),
)
CODE_DIRS = ("gc2po", "workflow", "benchmarks", "tests", "ci", ".ci")
REPO_DIRS = ("gc2po", "workflow", "benchmarks", "tests", "config", "ci", "docs", "data")
SKIPPED_DIRS = {".git", "__pycache__", ".snakemake", ".ruff_cache", "results", "resources", "logs"}
OUTPUT_PREFIXES = ("results/", "resources/", "logs/", "/", "~", ".snakemake/", "../", "./")
FILE_SUFFIX = re.compile(r"\.(py|ya?ml|json|jsonl|md|smk|txt|csv|png|pdf|html|lock|toml|sh|rst)$")
PLACEHOLDER = re.compile(r"[<*\[]")
# names the how-tos make up for the reader's own code (docs/extending.md, "Add a benchmark")
EXAMPLE_NAMES = {"parse_mine"}
# other programs' names that the code never spells, each with where it lives
EXTERNAL_NAMES = {
    "TokensPrompt": "vllm.inputs (vLLM is not installed where the tests run)",
    "clip_ratio": "the prefix of TRL's GRPOTrainer clipping metrics",
    "ru_maxrss": "a field of resource.getrusage's result",
    "destroy_process_group": "torch.distributed's",
    "trainer_state": "the checkpoint file transformers' Trainer writes (trainer_state.json)",
    "train_samples_per_second": "a metric transformers' Trainer logs",
    "train_steps_per_second": "a metric transformers' Trainer logs",
    "sampling_logp_difference": "a metric TRL's GRPOTrainer logs (sampling/...)",
    "HF_TOKEN": "the Hugging Face Hub's environment variable for an access token",
    "io_uring": "a family of Linux system calls (the sandbox's filter names io_uring_setup, ...)",
    "RWF_NOWAIT": "a Linux preadv2 flag (os.RWF_NOWAIT)",
    "gpu_model": "a resource of the SLURM executor plugin (commented in the SLURM profile)",
    "slurm_extra": "a resource of the SLURM executor plugin (extra sbatch options)",
    # C and C++ frames of the gdb backtrace of the gloo exit-time abort (docs/measurements.md)
    **dict.fromkeys(
        [
            "AsyncAllgatherWork",
            "PyEval_RestoreThread",
            "PyThread_exit_thread",
            "Py_FinalizeEx",
            "THPVariable_dealloc",
            "pthread_exit",
            "take_gil",
        ],
        "a C/C++ frame of torch 2.13 or CPython 3.11 in a backtrace",
    ),
}
MODULE_ALIASES = {"pd": "pandas", "np": "numpy"}  # as the docs and the code abbreviate them


def resolves(dotted: str) -> bool:
    """The longest importable module prefix, then attributes for the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except (ImportError, TypeError, ValueError):  # not a module; "" or ".x" is not a name
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def repository_files() -> list[Path]:
    """Every file and folder of the checkout but outputs, caches and this test (whose stale
    examples must not count as names)."""
    found = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if SKIPPED_DIRS & set(parts) or parts[0].startswith(".venv") or path == Path(__file__):
            continue
        found.append(path)
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings or bare expressions (prose, not code)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def python_names(tree: ast.AST) -> set[str]:
    """Every name a module defines, imports, passes or reads, and its strings (not prose)."""
    prose = _docstrings(tree)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.update(node.name.split("."))
            names.add(node.asname or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in prose:
                names.add(node.value)
                names.update(re.split(r"[^\w.@-]+", node.value))
    return names


def mapping_keys(data) -> set[str]:
    """Every key of a parsed YAML or JSON document, at any depth."""
    if isinstance(data, dict):
        return {str(k) for k in data} | {k for v in data.values() for k in mapping_keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in mapping_keys(v)}
    return set()


@functools.cache
def vocabulary() -> frozenset[str]:
    """What the code defines, uses or writes, the config files' keys, the files' names."""
    names: set[str] = set()
    files = repository_files()
    for path in files:
        names.add(path.name)
        names.add(path.stem)
        top = path.relative_to(ROOT).parts[0]
        if path.suffix == ".py" and top in CODE_DIRS:
            names |= python_names(ast.parse(path.read_text(), str(path)))
        elif path.suffix == ".sh" or path.parent.name == ".ci":  # shell: its words
            names.update(re.findall(r"\w+", path.read_text()))
        elif path.suffix == ".smk" or path.name == "Snakefile":
            text = path.read_text()
            names.update(re.findall(r"^(?:rule|checkpoint) (\w+):", text, re.MULTILINE))
            for string in re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'", text):
                names.update(re.split(r"[^\w.@-]+", "".join(string)))
        elif path.suffix in (".yaml", ".yml", ".json") and top in ("config", "workflow", "gc2po"):
            try:
                names |= mapping_keys(yaml.safe_load(path.read_text()))
            except yaml.YAMLError:  # a Snakemake-templated file, not plain YAML
                continue
    return frozenset(names - {""})


@functools.cache
def schema() -> dict:
    return yaml.safe_load((ROOT / "gc2po/workflow/config.schema.yaml").read_text())


@functools.cache
def trainer_fields() -> frozenset[str]:
    return frozenset(json.loads((ROOT / "gc2po/training/config_fields.json").read_text()))


def config_path_exists(keys: list[str]) -> bool:
    """Whether ``keys`` is a path of the config schema (``trainer.<field>`` anywhere; below an
    object the schema leaves open, such as ``testbed.warm_start``, a key the code or a config
    file uses)."""
    node = schema()
    for i, key in enumerate(keys):
        if key.endswith("[]"):  # a list's items (docs/config-reference.md: report.dose_response[])
            key = key.removesuffix("[]")
            node = node.get("properties", {}).get(key, {}).get("items", {})
            continue
        if key == "trainer" and i + 1 < len(keys):
            return keys[i + 1] in trainer_fields()
        properties = node.get("properties", {})
        if key in properties:
            node = properties[key]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]  # a free key (a run label, a benchmark name)
        elif "properties" not in node and "additionalProperties" not in node:
            return all(k in vocabulary() for k in keys[i:])  # an open object
        else:
            return False
    return True


def is_code_like(name: str) -> bool:
    """An identifier that is code rather than a word: a ``_`` inside it (``ALL_CAPS`` too) or an
    inner capital (CamelCase)."""
    return bool(re.fullmatch(r"@?\w+", name)) and (
        "_" in name.strip("_") or bool(re.search(r"[a-z0-9][A-Z]", name))
    )


def brace_expansions(path: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [
        expanded
        for choice in match[1].split(",")
        for expanded in brace_expansions(path[: match.start()] + choice + path[match.end() :])
    ]


def path_problem(path: str) -> str | None:
    """Why a repository path does not resolve, or None."""
    for expanded in brace_expansions(path):
        placeholder = PLACEHOLDER.search(expanded)
        if placeholder:
            folder = expanded[: placeholder.start()].rsplit("/", 1)[0]
            if not (ROOT / folder).is_dir():
                return f"no folder {folder}"
        elif not (ROOT / expanded).exists():
            return f"no {expanded}"
    return None


def name_problem(token: str, called: bool = False) -> str | None:
    """Why one span's name does not resolve, or None (see the module docstring)."""
    if re.fullmatch(r"gc2po(\.\w+)+", token):
        return None if resolves(token) else "does not import"
    if token.startswith(OUTPUT_PREFIXES) or token.startswith("-"):
        return None
    head = token.split("/", 1)[0]
    if "/" in token and head in REPO_DIRS:
        if FILE_SUFFIX.search(token) or token.endswith("/") or (ROOT / token).exists():
            return path_problem(token)
    if token in EXAMPLE_NAMES or token in EXTERNAL_NAMES or token in vocabulary():
        return None
    if FILE_SUFFIX.search(token) and "/" not in token:
        if PLACEHOLDER.search(token) or token.startswith("."):
            return None
        stem_parts = FILE_SUFFIX.sub("", token).split("_vs_")  # a comparison table <a>_vs_<b>
        if len(stem_parts) == 2 and all(part in vocabulary() for part in stem_parts):
            return None
        return "no such file, nor a name the code writes"
    if "." in token and "/" not in token:
        keys = token.split(".")
        if keys[0] in schema()["properties"] or keys[0] == "trainer":  # train.trainer's fields
            return None if config_path_exists(keys) else "not a config key of the schema"
        if resolves(".".join([MODULE_ALIASES.get(keys[0], keys[0]), *keys[1:]])):
            return None
    parts = [p for p in re.split(r"[./]", token) if p and not p.startswith(("{", "*", "<"))]
    known = vocabulary() | EXTERNAL_NAMES.keys()
    unknown = [
        p
        for p in parts
        if (is_code_like(p) or (called and p == parts[-1])) and p.lstrip("@") not in known
    ]
    return f"{unknown} not defined or used in the code" if unknown else None


def span_problems(span: str) -> list[str]:
    """Why a span's names do not resolve: its key (``key: value``, ``NAME=value``), its call's
    name (``f(...)``) or the span itself when it is one token; in a span with spaces also every
    repository path and ``gc2po.*`` name."""
    span = span.strip()
    spaced = bool(re.search(r"\s", span))
    key = re.match(r"([\w.@-]+)(?:: |=)", span)
    call = re.match(r"(@?[A-Za-z_][\w.]*)\(", span)
    checks = []
    if key:
        checks.append((key[1], False))
    elif call:
        checks.append((call[1], True))
    elif not spaced:
        checks.append((span, False))
    if spaced:
        repo_path = rf"(?<![\w./-])((?:{'|'.join(REPO_DIRS)})/[\w./{{}},-]*\w/?)"
        checks += [(path, False) for path in re.findall(repo_path, span)]
        checks += [(name, False) for name in re.findall(r"(?<![\w./-])(gc2po(?:\.\w+)+)", span)]
    problems = [(token, name_problem(token, called)) for token, called in checks]
    return [f"{token}: {why}" for token, why in problems if why]


def inline_spans(text: str) -> list[str]:
    without_blocks = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"`([^`\n]+)`", without_blocks)


def fenced_paths(text: str) -> list[str]:
    blocks = re.findall(r"^```.*?^```", text, flags=re.MULTILINE | re.DOTALL)
    pattern = rf"(?<![\w./-])((?:{'|'.join(REPO_DIRS)})/[\w./-]*\.(?:py|ya?ml|json|smk|sh))"
    return [path for block in blocks for path in re.findall(pattern, block)]


@pytest.mark.parametrize("doc", DOCS)
def test_every_code_name_in_backticks_resolves(doc):
    text = (ROOT / doc).read_text()
    spans = inline_spans(text)
    assert len(spans) > 5
    problems = sorted({p for span in spans for p in span_problems(span)})
    problems += [f"{p}: no such file" for p in fenced_paths(text) if not (ROOT / p).exists()]
    assert not problems, f"{doc}: names that do not resolve: {problems}"


@pytest.mark.parametrize(
    "span",
    [
        "plan_table(jobs)",
        "gc2po.reporting.stats.paired_bootstrap_diff",
        "benchmarks/no_such_script.py",
        "audit.no_such_key",
        "trainer.no_such_field_zz",
        "evaluate.no_such_key_zz: {runs}",
        "no_such_function_zz(a, b) -> c",
        "NoSuchClass",
        "GC2POConfig.no_such_attribute_name",
        "python benchmarks/no_such_script.py --x 1",
        "no_such_file.yaml",
    ],
)
def test_the_check_fails_on_a_stale_name(span):
    assert span_problems(span), span


@pytest.mark.parametrize(
    "span",
    [
        "seeds_needed",
        "GC2POTrainer",
        "audit.reward_run",
        "evaluate.learning_curve: {runs, benchmarks, problems}",
        "cf_state: last_content",
        "gc2po.data.load_benchmark(name, path=None)",
        "trainer.bf16",
        "workflow/rules/{common,data,train}.smk",
        "results/<name>/tables/x.md",
        "run.yaml",
        "sys.exit",
        "episodes/mean_count",
    ],
)
def test_the_check_accepts_live_names(span):
    assert not span_problems(span), span_problems(span)


def test_every_module_of_the_package_map_exists():
    """The layer table names modules by their short name in the row of their package(s)."""
    method_page = (ROOT / "docs" / "method.md").read_text()
    table = method_page.split("## The package, layer by layer", 1)[1].split("\n\n", 2)[2]
    rows = [line for line in table.splitlines() if line.startswith("| `gc2po.")]
    listed = {p for row in rows for p in re.findall(r"`(gc2po\.\w+)`", row.split("|")[1])}
    subpackages = {f"gc2po.{m.name}" for m in pkgutil.iter_modules(gc2po.__path__) if m.ispkg}
    assert listed == subpackages, "the layer table's rows are the package's subpackages"
    missing = []
    for row in rows:
        packages_cell, modules_cell = row.split("|")[1:3]
        packages = re.findall(r"`(gc2po\.\w+)`", packages_cell)
        for short in re.findall(r"`([a-z_][a-z_.]*)`", modules_cell):
            if not any(resolves(f"{package}.{short}") for package in packages):
                missing.append((packages, short))
    assert not missing, f"modules the package map names that do not exist: {missing}"
