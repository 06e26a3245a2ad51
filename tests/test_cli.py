"""The command line: real subcommands only, help on every option, and refusals that name the
bad input in one line before torch (let alone a model) is loaded."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gc2po.cli import build_parser, main
from tests.reporting.conftest import write_eval

# an evaluation records the code's git revision (gc2po.evaluation.provenance)
pytestmark = pytest.mark.system("git")
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "config" / "examples"


def run_cli(*args, env=None, cwd=None):
    """``gc2po ARGS`` in a fresh interpreter; prints whether torch got imported."""
    code = (
        "import sys; from gc2po.cli import main; rc = main(sys.argv[1:]); "
        "print('torch imported:', 'torch' in sys.modules); sys.exit(rc)"
    )
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        cwd=cwd or ROOT,
        timeout=120,
    )
    return result, time.perf_counter() - start


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_help_lists_only_real_subcommands_and_every_option_has_help(capsys):
    parser = build_parser()
    commands = subcommands(parser)
    assert {"train", "eval", "audit", "tables"} <= set(commands)
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    listed = text[text.index("{") + 1 : text.index("}")].split(",")
    assert set(listed) == set(commands)  # the help announces exactly what exists
    assert "figures" not in text and "testbed," not in text  # announced once, never implemented
    for name, sub in commands.items():
        assert callable(sub.get_default("func")), name
        for action in sub._actions:
            assert action.help and action.help.strip(), (
                f"gc2po {name} {action.option_strings or action.dest}: no help"
            )


def _one_line_error(result, *needles):
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    error = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(error) == 1 and error[0].startswith("gc2po eval: error: "), result.stderr
    for needle in needles:
        assert needle in error[0], (needle, error[0])
    assert (
        "torch imported: False" in result.stdout
    )  # refused before any model (or torch) was loaded


def test_a_missing_model_folder_fails_fast_naming_the_option(tmp_path):
    result, seconds = run_cli(
        "eval",
        "--config",
        EXAMPLES / "eval_testbed.yaml",
        "--model",
        "/missing",
        "--benchmark",
        "test_id",
    )
    _one_line_error(result, "--model", "/missing", "does not exist")
    assert (
        seconds < 30
    )  # a fresh interpreter; the guarantee that matters is that torch was not imported


def test_a_hub_id_offline_and_not_cached_fails_fast(tmp_path):
    result, _ = run_cli(
        "eval",
        "--config",
        EXAMPLES / "eval_testbed.yaml",
        "--model",
        "someorg/not-cached-model",
        "--benchmark",
        "test_id",
        env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")},
    )
    _one_line_error(result, "--model", "someorg/not-cached-model", "HF_HUB_OFFLINE")


def test_a_folder_without_a_model_fails_fast(tmp_path):
    result, _ = run_cli(
        "eval",
        "--config",
        EXAMPLES / "eval_testbed.yaml",
        "--model",
        tmp_path,
        "--benchmark",
        "test_id",
    )
    _one_line_error(result, "--model", "config.json")


@pytest.mark.parametrize(
    "change, needles",
    [
        ({"sampling": {"temperature": "abc"}}, ["sampling.temperature", "'abc'", "number"]),
        ({"sampling": {"top_p": 1.5}}, ["sampling.top_p", "1.5"]),
        ({"sampling": {"n": 0}}, ["sampling.n", "integer >= 1"]),
        ({"sampling": {"max_tokens": 5}}, ["sampling.", "unknown key(s) ['max_tokens']"]),
        ({"backend": "gpu"}, ["backend", "'gpu'"]),
        ({"batch_size": "32"}, ["batch_size", "'32'"]),
        ({"budgets": [8, -1]}, ["budgets", "[8, -1]"]),
        ({"surprise": 1}, ["unknown key(s) ['surprise']"]),
        ({"task": "math"}, ["task", "'math' is now spelled 'benchmark'", "set it to benchmark"]),
        ({"task": "poetry"}, ["task", "one of ['testbed', 'benchmark']", "'poetry'"]),
        (
            {"benchmarks": {"test_id": {"path": "x.jsonl", "limit": 0}}},
            ["benchmarks.test_id.limit", "0"],
        ),
        ({"benchmarks": {"test_id": {"path": "missing.jsonl"}}}, ["missing.jsonl"]),
    ],
)
def test_bad_eval_config_values_fail_naming_the_key(tmp_path, tiny_model_dir, change, needles):
    config = yaml.safe_load((EXAMPLES / "eval_testbed.yaml").read_text())
    for key, value in change.items():
        config[key] = (
            {**config[key], **value} if isinstance(value, dict) and key == "sampling" else value
        )
    path = tmp_path / "eval.yaml"
    path.write_text(yaml.safe_dump(config))
    result, _ = run_cli(
        "eval", "--config", path, "--model", tiny_model_dir, "--benchmark", "test_id"
    )
    _one_line_error(result, str(path), *needles)


def test_unknown_benchmark_and_unreadable_config(tmp_path, tiny_model_dir):
    result, _ = run_cli(
        "eval",
        "--config",
        EXAMPLES / "eval_testbed.yaml",
        "--model",
        tiny_model_dir,
        "--benchmark",
        "test_huge",
    )
    _one_line_error(result, "--benchmark", "'test_huge'", "testbed split")
    result, _ = run_cli(
        "eval",
        "--config",
        EXAMPLES / "eval_gsm8k.yaml",
        "--model",
        tiny_model_dir,
        "--benchmark",
        "mmlu",
    )
    _one_line_error(result, "--benchmark", "unknown benchmark 'mmlu'")
    result, _ = run_cli(
        "eval",
        "--config",
        tmp_path / "nope.yaml",
        "--model",
        tiny_model_dir,
        "--benchmark",
        "gsm8k",
    )
    _one_line_error(result, "nope.yaml", "cannot read eval config")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    result, _ = run_cli(
        "eval",
        "--config",
        tmp_path / "list.yaml",
        "--model",
        tiny_model_dir,
        "--benchmark",
        "gsm8k",
    )
    _one_line_error(result, "list.yaml", "must be a mapping")


def test_missing_required_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--config", "x.yaml"])
    assert exit_info.value.code == 2 and "--model" in capsys.readouterr().err


def test_tables_subcommand_writes_every_format(tmp_path, capsys):
    for model, rate in (("base", 0), ("grpo", 1)):
        for seed in (0, 1):
            for benchmark in ("test_id", "test_longer"):
                write_eval(tmp_path / "ev", "m", model, seed, benchmark, [rate, 0, 1, 1])
    out = tmp_path / "tables" / "t1"
    assert main(["tables", "--eval-dir", str(tmp_path / "ev" / "eval"), "--out", str(out)]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| Model | Test (ID) | Longer chains | Average |" in md and "| + GRPO |" in md
    assert all(out.with_suffix(ext).exists() for ext in (".tex", ".csv", ".html"))
    assert (
        main(
            [
                "tables",
                "--eval-dir",
                str(tmp_path / "ev" / "eval"),
                "--out",
                str(out),
                "--methods",
                "gc2po",
            ]
        )
        == 2
    )
    assert "--methods: no evaluation files for ['gc2po']" in capsys.readouterr().err
    assert main(["tables", "--eval-dir", str(tmp_path / "empty"), "--out", str(out)]) == 2


def test_tables_subcommand_names_a_sweep_as_its_config_plans_it(tmp_path):
    for model in ("base", "gc2po_lambda_exp_0.5"):
        write_eval(tmp_path / "ev", "testbed", model, 0, "test_id", [1, 0, 1, 1])
    overlay = tmp_path / "sweep.yaml"
    overlay.write_text("sweeps: {lambda_exp: [0.5], lambda_cf: []}\n")
    out = tmp_path / "tables" / "t1"
    args = ["tables", "--eval-dir", str(tmp_path / "ev" / "eval"), "--out", str(out)]
    assert main(args) == 0 and "| + gc2po_lambda_exp_0.5 |" in out.with_suffix(".md").read_text()
    assert main([*args, "--configfile", str(ROOT / "config/config.yaml"), str(overlay)]) == 0
    assert "| + GC2PO (paper, lambda_exp = 0.5) |" in out.with_suffix(".md").read_text()


def test_example_run_configs_validate():
    from gc2po.training.run_config import build_args, load_run_config

    for name, method in (("run_testbed.yaml", "gc2po"), ("run_math.yaml", "gc2po")):
        args = build_args(load_run_config(EXAMPLES / name))
        assert args.method == method and args.max_steps > 0, name


def test_example_eval_configs_validate():
    from gc2po.evaluation.cli_eval import validate_config

    for path in sorted(EXAMPLES.glob("eval_*.yaml")):
        config = validate_config(yaml.safe_load(path.read_text()), str(path))
        assert config["benchmarks"] and config["sampling"]["temperature"] == 0.6, path


def test_version_names_the_package_version_and_git_revision():
    from importlib import metadata

    from gc2po.evaluation.provenance import git_revision

    result, _ = run_cli("--version")
    assert result.returncode == 0, result.stderr
    line = result.stdout.splitlines()[0]
    assert line.startswith(f"gc2po {metadata.version('gc2po')}"), line
    revision = git_revision()["revision"]  # this checkout's, None outside git
    assert (f"(git {revision[:12]}" in line) if revision else ("git" not in line), line


def test_methods_lists_every_registered_method_with_its_name_fidelity_and_settings(capsys):
    from gc2po.methods import METHODS

    assert main(["methods"]) == 0
    text = capsys.readouterr().out
    blocks = text.strip().split("\n\n")
    assert [b.split(":")[0] for b in blocks] == sorted(METHODS, key=lambda n: METHODS[n].order)
    for block in blocks:
        method = METHODS[block.split(":")[0]]
        assert block.startswith(f"{method.name}: {method.display_name}"), block
        assert f"  fidelity: {method.fidelity}" in block, block
    mrt = next(b for b in blocks if b.startswith("mrt:"))
    assert "settings (method_args): alpha=1.0, num_stops=4, max_episodes=6" in mrt, mrt
    assert "settings: none of its own" in next(b for b in blocks if b.startswith("grpo:"))


def test_a_misspelt_method_gets_a_suggestion(capsys):
    assert main(["methods", "mrtt"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("gc2po methods: error: unknown method 'mrtt' (did you mean 'mrt'?)")
