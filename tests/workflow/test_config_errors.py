"""A bad or incomplete workflow or run config fails before any job with one line naming the key
and the fix, never a schema dump or a traceback (issue 26)."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gc2po.training.run_config import build_args, load_run_config
from gc2po.workflow.config_files import load_config
from gc2po.workflow.config_schema import check_schema

ROOT = Path(__file__).resolve().parents[2]
LAYERED = ["config/config.yaml", "my.yaml"]


def changed(path: str, value):
    """The default config with one key set (``value`` None: deleted)."""
    config = copy.deepcopy(load_config([]))
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return config


@pytest.mark.parametrize(
    "config, message",
    [
        (changed("mode", "foo"), "mode: must be one of ['testbed', 'benchmark'], got 'foo'"),
        (changed("seeds", []), "seeds: needs at least 1 item(s), got []"),
        (changed("seeds", [0, -1]), "seeds[1]: must be >= 0, got -1"),
        (changed("seeds", "1"), "seeds: must be array, got '1'"),
        (changed("name", "a b"), "name: must match '^[A-Za-z0-9_.-]+$', got 'a b'"),
        (changed("train.trainer", "x"), "train.trainer: must be object, got 'x'"),
        (changed("train.trainer", None), "train: missing key(s) ['trainer']"),
        (
            changed("train.epochs", 3),
            "train: unknown key(s) ['epochs']; valid: ['gpu_memory_gib', ",
        ),
        (
            changed("evaluate.backend", "tpu"),
            "evaluate.backend: must be one of ['transformers', 'vllm', 'auto']",
        ),
        (changed("testbed.rl_cued_share", 1), "testbed.rl_cued_share: must be < 1, got 1"),
        (changed("methods", ["grpo", "ppo"]), "methods[1]: must be one of ['dr_grpo', "),
        (changed("epochs", 3), "the config: unknown key(s) ['epochs']; valid: ['ablation_bases', "),
        (
            changed("report.dose_response", [{"method": "gc2po"}]),
            "report.dose_response[0]: missing key(s) ['key']",
        ),
        (
            changed(
                "report.dose_response",
                [{"method": "gc2po", "key": "lambda_cf", "markers": {"R_cf": "high"}}],
            ),
            "report.dose_response[0].markers.R_cf: must be number, got 'high'",
        ),
    ],
)
def test_a_bad_workflow_config_value_is_one_line_naming_the_key(config, message):
    with pytest.raises(ValueError) as err:
        check_schema(config, LAYERED)
    assert str(err.value).startswith(f"config/config.yaml my.yaml: {message}"), str(err.value)
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_a_partial_config_given_alone_says_to_layer_it_on_the_default():
    with pytest.raises(ValueError) as err:
        check_schema({"methods": ["grpo"]}, ["my.yaml"])
    assert str(err.value) == (
        "my.yaml: a config given alone must be complete (missing: name, mode, seeds, train, "
        "evaluate, report); "
        "to change a few keys, pass config/config.yaml first: --configfile "
        "config/config.yaml my.yaml"
    )
    check_schema(load_config([]), None)  # the default itself is complete and valid


def run(command: list[str], tmp_path: Path, overlay: str) -> subprocess.CompletedProcess:
    (tmp_path / "my.yaml").write_text(overlay)
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_snakemake_with_an_overlay_alone_fails_in_one_line(tmp_path):
    out = run(
        ["snakemake", "-n", "--cores", "1", "--configfile", str(tmp_path / "my.yaml")],
        tmp_path,
        "methods: [grpo]\n",
    )
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"config error: {tmp_path}/my.yaml: a config given alone must be complete (missing: name, "
        "mode, seeds, "
        "train, evaluate, report); to change a few keys, pass config/config.yaml first: "
        "--configfile "
        f"config/config.yaml {tmp_path}/my.yaml"
    )


def test_snakemake_with_a_bad_trainer_value_fails_in_one_line(tmp_path):
    out = run(
        [
            "snakemake",
            "-n",
            "--cores",
            "1",
            "--configfile",
            "config/config.yaml",
            str(tmp_path / "my.yaml"),
        ],
        tmp_path,
        "train:\n  trainer:\n    reward_weights: [-1.0]\n",
    )
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    # named by the file that sets the key and the key's whole path, then the job it stops
    assert len(lines) == 1 and lines[0].startswith(
        f"config error: {tmp_path / 'my.yaml'}: train.trainer.reward_weights: method "
    ), lines
    assert "weight -1.0 can give -1" in lines[0] and lines[0].endswith(
        "(training job testbed/gc2po)"
    )


def test_gc2po_plan_with_an_overlay_alone_fails_in_one_line(tmp_path):
    out = run(
        ["gc2po.cli", "plan", "--configfile", str(tmp_path / "my.yaml")], tmp_path, "seeds: [0]\n"
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert (
        len(lines) == 1
        and "a config given alone must be complete (missing: name, mode, methods" in lines[0]
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"trainer": {"num_generations": 3, "per_device_train_batch_size": 2}},
            "generation_batch_size (2) must be divisible by num_generations (3)",
        ),
        (
            {"method": "dr_grpo", "trainer": {"beta": 0.1}},
            "trainer.beta=0.1 conflicts with method 'dr_grpo'",
        ),
        (
            {"trainer": {"reward_weights": [-1.0]}},
            "trainer.reward_weights: method 'gc2po' needs rewards >= 0",
        ),
        ({"trainer": {"lambda_cf": 120.0}}, "lambda_cf must be in [0, 100], got 120.0"),
        ({"trainer": {"perturbation": "nope"}}, "perturbation: unknown name 'nope'"),
        ({"trainer": {"num_generations": 1}}, "num_generations must be >= 2"),
        ({"trainer": {"adv_clip": -1}}, "adv_clip must be > 0, got -1.0"),
        (
            {"precision": "fp8"},
            "precision must be one of ['bf16-mixed', 'bf16', 'fp32'], got 'fp8'",
        ),
        ({"method": "ppo"}, "method: unknown name 'ppo'"),
    ],
)
def test_a_bad_run_config_value_is_one_line_naming_the_key(change, message, run_files):
    with pytest.raises(ValueError) as err:
        build_args({**run_files, **change})
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "loader, what",
    [
        (lambda path: load_config([path]), "cannot read workflow config"),
        (load_run_config, "cannot read run config"),
    ],
)
def test_a_broken_yaml_file_is_one_line_naming_where(loader, what, tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("model: [a\ntrainer: {x: 1\n")
    with pytest.raises(ValueError) as err:
        loader(path)
    assert str(err.value) == f"{path}: {what}: line 2, column 8: expected ',' or ']', but got ':'"


OLD_SPELLINGS = [
    ("mode: benchmarks\n", "mode: 'benchmarks' is now spelled 'benchmark': set it to benchmark"),
    (
        "train:\n  task: math\n",
        "train.task: 'math' is now set by mode: remove train.task and set mode: benchmark",
    ),
]


@pytest.mark.parametrize("overlay, message", OLD_SPELLINGS)
def test_an_old_task_spelling_names_the_file_the_key_and_the_new_value(overlay, message, tmp_path):
    (tmp_path / "my.yaml").write_text(overlay)
    files = [str(ROOT / "config" / "config.yaml"), str(tmp_path / "my.yaml")]
    with pytest.raises(ValueError) as err:
        check_schema(load_config(files), files)
    assert str(err.value) == f"{tmp_path}/my.yaml: {message}"


def test_snakemake_with_an_old_task_spelling_fails_before_any_job(tmp_path):
    overlay, message = OLD_SPELLINGS[0]
    layered = ["--configfile", "config/config.yaml", str(tmp_path / "my.yaml")]
    out = run(["snakemake", "-n", "--cores", "1", *layered], tmp_path, overlay)
    assert out.returncode == 1
    assert out.stderr.strip() == f"config error: {tmp_path}/my.yaml: {message}"


def test_an_old_run_config_task_names_the_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: m\ntask: math\n")
    with pytest.raises(ValueError) as err:
        load_run_config(path)
    assert str(err.value) == f"{path}: task: 'math' is now spelled 'benchmark': set it to benchmark"


def test_a_misspelt_key_or_method_gets_a_suggestion():
    config = load_config([ROOT / "config/config.yaml"])
    config["reprot"] = config.pop("report")
    with pytest.raises(
        ValueError, match=r"unknown key\(s\) \['reprot'\] \(did you mean 'report'\?\)"
    ):
        check_schema(config)
    config = load_config([ROOT / "config/config.yaml"])
    config["methods"] = ["grpo", "gc2po_ad"]
    with pytest.raises(
        ValueError,
        match=r"methods\[1\]: must be one of .*, got 'gc2po_ad' \(did you mean 'gc2po_add'\?\)",
    ):
        check_schema(config)


# --- every later check's error names the file that sets the key and the key's whole path -------


def check_with(tmp_path: Path, base: str, overlay: str) -> str:
    """The workflow's config check (as workflow/rules/common.smk runs it) of ``base`` and an
    overlay; the error it raises."""
    from gc2po.workflow.config_check import checked

    path = tmp_path / "my.yaml"
    path.write_text(overlay)
    files = [base, str(path)]
    with pytest.raises(ValueError) as err:
        checked(load_config(files), files, cache=tmp_path / "check.json")
    return str(err.value)


@pytest.mark.parametrize(
    "base, overlay, message",
    [
        (  # a bare trainer field, from the memory plan (it named neither file nor key)
            "config/paper.yaml",
            "train:\n  trainer:\n    vllm_gpu_memory_utilization: 1.5\n",
            "{my}: train.trainer.vllm_gpu_memory_utilization: must be in (0, 1), got 1.5",
        ),
        (  # one method's setting: its per_method path, and the job it stops
            "config/config.yaml",
            "train:\n  per_method:\n    gc2po: {answer_space: words}\n",
            "{my}: train.per_method.gc2po.answer_space: must be one of ['topk', 'vocab'], got "
            "'words' (training job testbed/gc2po)",
        ),
        (  # a report key
            "config/config.yaml",
            "report:\n  comparisons: [[gc2po, ppo]]\n",
            "{my}: report.comparisons: 'ppo' (gc2po_vs_ppo) is not a run of this config",
        ),
        (  # a key the base config sets, made wrong by what the overlay changes: the base named
            "config/paper.yaml",
            "train:\n  launcher: {num_processes: 3}\n",
            "config/paper.yaml: train.sequences_per_step: 256 sequences per optimizer step cannot "
            "be split over 3 processes",
        ),
    ],
    ids=["bare-field", "per-method", "report", "base-file"],
)
def test_a_later_checks_error_names_the_file_and_the_keys_path(tmp_path, base, overlay, message):
    found = check_with(tmp_path, base, overlay)
    assert found.startswith(message.format(my=tmp_path / "my.yaml")), found
    assert "config '" not in found and "\n" not in found


def test_an_error_naming_no_key_names_the_files_given():
    from gc2po.workflow.config_schema import locate

    config = load_config([])
    message = "config 'testbed': training job testbed/grpo (base model testbed) does not fit"
    assert locate(message, config, ["config/config.yaml", "x.yaml"]) == (
        "config/config.yaml x.yaml: training job testbed/grpo (base model testbed) does not fit"
    )
    # a trainer key no file sets (a default) is shown where it would go, with the files given
    assert locate("config 'testbed': max_grad_norm must be > 0", config, ["x.yaml"]) == (
        "x.yaml: train.trainer.max_grad_norm: must be > 0"
    )


def test_a_setting_the_runs_method_never_reads_is_warned_naming_file_and_key(tmp_path):
    from gc2po.workflow.config_check import checked

    path = tmp_path / "my.yaml"
    path.write_text(
        "train:\n  per_method:\n    grpo: {lambda_cf: 0.5, max_grad_norm: 0.5}\n"
        "    gc2po: {lambda_cf: 0.5}\n"
        "variants:\n  grpo_floor: {method: grpo, trainer: {cf_std_floor: 0.01}}\n"
        "report:\n  main_methods: [grpo, gc2po, gc2po_add, grpo_fxp, grpo_floor]\n"
    )
    files = ["config/config.yaml", str(path)]
    warnings = checked(load_config(files), files, cache=tmp_path / "check.json")["warnings"]
    assert warnings == [
        f"{path}: train.per_method.grpo.lambda_cf: method 'grpo' computes no counterfactual "
        "signal and never reads lambda_cf: the setting changes nothing",
        f"{path}: variants.grpo_floor.trainer.cf_std_floor: method 'grpo' computes no "
        "counterfactual signal and never reads cf_std_floor: the setting changes nothing",
    ]  # GRPO reads max_grad_norm, GC2PO lambda_cf: no warning for them


def test_snakemake_prints_the_warning_and_plans_the_run(tmp_path):
    out = run(
        ["snakemake", "-n", "--cores", "1", "--configfile", "config/config.yaml",
         str(tmp_path / "my.yaml")],
        tmp_path,
        "train:\n  per_method:\n    grpo: {lambda_cf: 0.5}\n",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert (
        f"config warning: {tmp_path / 'my.yaml'}: train.per_method.grpo.lambda_cf: method 'grpo' "
        "computes no counterfactual signal" in out.stderr
    )


# --- a target after --configfile: what Snakemake itself prints, quoted in troubleshooting ------

TROUBLESHOOTING = ROOT / "docs" / "howto" / "troubleshooting.md"
TARGET = "results/testbed/tables/table1.md"


def target_after_configfile(work: Path) -> subprocess.CompletedProcess:
    """`snakemake -n` with the target written after `--configfile`, in ``work``."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "-s", str(ROOT / "Snakefile"),
         "--configfile", "config/config.yaml", TARGET],
        cwd=work, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def quoted_blocks(page: Path) -> list[str]:
    """The text of every ```text block of a page."""
    return re.findall(r"```text\n(.*?)```", page.read_text(), flags=re.DOTALL)


def test_a_target_after_configfile_prints_what_troubleshooting_quotes(tmp_path):
    """Snakemake reads the config files before the workflow, so neither case reaches the
    project's code; the page quotes both as they are: a missing target's traceback (its last
    line) and an existing Markdown table's YAML error."""
    work = tmp_path / "wf"
    shutil.copytree(ROOT / "config", work / "config")
    blocks = quoted_blocks(TROUBLESHOOTING)
    missing = target_after_configfile(work)
    assert missing.returncode == 1
    printed = (missing.stdout + missing.stderr).strip().splitlines()
    assert printed[0] == "Traceback (most recent call last):"
    assert f"{printed[-1]}\n" in blocks, printed[-1]
    assert printed[-1] == f"FileNotFoundError: [Errno 2] No such file or directory: '{TARGET}'"
    table = work / TARGET
    table.parent.mkdir(parents=True)
    table.write_text("### Pass@1 (%)\n\n| Model | Test (ID) |\n|---|---|\n| base | 76.4 |\n")
    exists = target_after_configfile(work)
    assert exists.returncode == 1
    assert (exists.stdout + exists.stderr).strip() + "\n" in blocks, exists.stdout
