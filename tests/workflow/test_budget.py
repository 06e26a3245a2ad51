"""The budget ``gc2po plan`` prints before the first job (gc2po.workflow.budget, run_length,
run_disk): per job kind what a job asks SLURM for and the GPU-hours, whose figures follow the plan
(jobs, GPUs, runtime cap; or tokens per step x steps at a stated throughput), the job counts the
dry run's, and the disk each run leaves with ``train.keep_checkpoints``."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

from gc2po import cli
from gc2po.workflow import budget, resources, run_disk
from gc2po.workflow.config_files import load_config
from gc2po.workflow.job_shape import QWEN25_7B
from gc2po.workflow.plan import training_jobs
from gc2po.workflow.plan_summary import run_summary
from tests.workflow.slurm_workflow import dry_run, planned_jobs

ROOT = Path(__file__).resolve().parents[2]
PAPER = str(ROOT / "config" / "paper.yaml")
GPUS4 = str(ROOT / "config" / "examples" / "gpus4.yaml")
CI = [str(ROOT / "config" / "config.yaml"), str(ROOT / "config" / "ci.yaml")]
BUDGET_LINE = re.compile(r"^  (\w+) +\((.*)\) x (\d+): ([\d,.]+) GPU-hours, (.*)$")


def printed_budget(files: list[str], capsys) -> dict[str, tuple[int, float, str]]:
    """Job kind -> (jobs, GPU-hours, basis) as `gc2po plan` prints them."""
    cli.main(["plan", *(["--configfile", *files] if files else [])])
    out = capsys.readouterr().out
    found = {}
    for line in out.splitlines():
        match = BUDGET_LINE.match(line)
        if match:
            found[match[1]] = (int(match[3]), float(match[4].replace(",", "")), match[5])
    total = re.search(r"^  total +(\d+) of them: ([\d,.]+) GPU-hours", out, re.MULTILINE)
    found["total"] = (int(total[1]), float(total[2].replace(",", "")), "")
    return found


def overlay(tmp_path: Path, content: dict) -> str:
    path = tmp_path / f"overlay{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(content))
    return str(path)


def test_the_papers_gpu_hours_are_its_jobs_gpus_and_runtime_cap(capsys, tmp_path):
    """No throughput stated: every job at its runtime cap, an upper bound, labelled so; four
    GPUs a job halve the training figure."""
    h200 = overlay(tmp_path, {"train": {"gpu_memory_gib": 139}})  # the 4-GPU 7B jobs fit
    for files, gpus in (([PAPER], 8), ([PAPER, GPUS4, h200], 4)):
        config = load_config(files)
        printed = printed_budget(files, capsys)
        jobs = len(training_jobs(config))
        assert printed["train"][:2] == (jobs, jobs * gpus * 2880 / 60)
        assert printed["train"][2].startswith("upper bound: the runtime cap")
        evaluations = 3 * 3 + jobs  # every base model once per seed, every run per seed
        assert printed["evaluate"][:2] == (evaluations, evaluations * 1 * 720 / 60)
        assert printed["total"][:2] == (jobs + evaluations, jobs * gpus * 48 + evaluations * 12)
    assert (jobs, evaluations) == (108, 117)  # the paper's, as the dry run counts them


def test_a_stated_throughput_gives_the_plans_tokens_over_it(capsys, tmp_path):
    """GPU-hours = sum over jobs of steps x sequences_per_step x (max_prompt_tokens +
    max_completion_length) / throughput, the steps one epoch of each training set's problems
    (datasets.<key>.limit) at 32 prompts a step."""
    files = [PAPER, overlay(tmp_path, {"train": {"tokens_per_gpu_second": 2500}})]
    config = load_config(files)
    printed = printed_budget(files, capsys)
    problems = {"aime_919": 919, "numina_4k": 4000}
    tokens_per_step = 256 * (1024 + 16384)
    expected = 0.0
    for job in training_jobs(config):
        key = config["base_models"][job.base]["train_data"]
        expected += math.ceil(problems[key] / 32) * tokens_per_step / 2500 / 3600
    assert printed["train"][0] == 108
    assert printed["train"][1] == round(expected)
    assert printed["train"][2].startswith("estimate: the plan's tokens per step x steps at 2500")
    assert printed["evaluate"][2] == "upper bound: the runtime cap"  # evaluations stay bounded
    # two epochs: twice the steps; half the completion: (1024 + 8192) / (1024 + 16384) the tokens
    longer = [*files, overlay(tmp_path, {"train": {"trainer": {"num_train_epochs": 2}}})]
    assert printed_budget(longer, capsys)["train"][1] == round(2 * expected)
    shorter = {"train": {"trainer": {"max_completion_length": 8192}}}
    shorter_files = [*files, overlay(tmp_path, shorter)]
    assert printed_budget(shorter_files, capsys)["train"][1] == round(
        expected * (1024 + 8192) / (1024 + 16384)
    )


def test_a_run_over_its_runtime_cap_is_named(tmp_path):
    config = load_config([PAPER, overlay(tmp_path, {"train": {"tokens_per_gpu_second": 50}})])
    rows = run_summary(config)
    warnings = budget.over_cap(config, rows)
    # 50 tokens a GPU-second: 29 steps of 256 x 17,408 tokens on 8 GPUs take 90 h, every run
    assert len(warnings) == len(rows)
    assert warnings[0].startswith(f"  warning: {rows[0]['base']}/{rows[0]['run']}: about ")
    assert warnings[0].endswith("over its runtime cap of 48 h (resources.train.runtime)")


def test_the_evaluation_counts_are_the_dry_runs():
    out = dry_run("--forceall", "--cores", "2", "--configfile", *CI)
    assert out.returncode == 0, out.stderr[-2000:]
    planned = planned_jobs(out.stdout)
    counts = budget.evaluation_counts(load_config(CI))
    assert set(counts) == {"evaluate", "evaluate_greedy", "learning_curve"}
    assert counts == {kind: planned[kind] for kind in counts}
    assert len(training_jobs(load_config(CI))) == planned["train"]


def test_a_cpu_config_has_no_gpu_hours(capsys):
    printed = printed_budget([], capsys)  # the embedded default
    assert printed["train"][1:] == (0.0, "CPU jobs, no GPU")
    assert printed["evaluate"][1:] == (0.0, "CPU jobs, no GPU")


@pytest.mark.parametrize(
    "launcher, precision, final, checkpoint",
    [
        ("config/accelerate/deepspeed_zero3.yaml", None, 2, 14),  # bf16 + fp32 master, m, v
        ("config/accelerate/deepspeed_zero2.yaml", None, 2, 16),  # + the bf16 module states
        (None, "bf16-mixed", 4, 12),  # fp32 weights, Adam's m and v in fp32
        (None, "bf16", 2, 6),
    ],
)
def test_bytes_per_parameter_follow_the_launcher_and_precision(
    launcher, precision, final, checkpoint
):
    config = load_config([PAPER])
    train = config["train"]
    train["launcher"] = {"config_file": launcher, "num_processes": 8} if launcher else None
    train["precision"] = precision
    assert run_disk.bytes_per_param(config) == (final, checkpoint)


def test_keep_checkpoints_false_leaves_the_final_model_only(capsys, tmp_path):
    keep = overlay(tmp_path, {"train": {"keep_checkpoints": True}})
    kept, dropped = load_config([PAPER, keep]), load_config([PAPER])  # the paper: false
    row = next(r for r in run_summary(kept) if r["base"] == "R1-Distill-Qwen-7B")
    params = QWEN25_7B.num_params()  # R1-Distill-Qwen-7B's shape
    with_checkpoints = run_disk.run_disk(kept, row, params)
    final_only = run_disk.run_disk(dropped, row, params)
    assert with_checkpoints.final == final_only.final == pytest.approx(2 * params / 1e9)
    assert with_checkpoints.checkpoint == pytest.approx(14 * params / 1e9)
    # 125 steps (numina_4k's 4000 problems at 32 a step), a save every 10: 12 saves, 2 kept
    assert with_checkpoints.kept == 2 and final_only.kept == 0
    assert with_checkpoints.end == pytest.approx(final_only.final + 2 * final_only.checkpoint)
    assert final_only.end == pytest.approx(final_only.final)
    assert final_only.peak == with_checkpoints.peak == pytest.approx(3 * final_only.checkpoint)
    cli.main(["plan", "--configfile", PAPER])
    out = capsys.readouterr().out
    assert (
        "disk per training run (train.keep_checkpoints: false: final only when a run ends):" in out
    )
    final = f"{2 * params / 1e9:.1f}"
    assert f"R1-Distill-Qwen-7B: 24 runs, each up to {final} GB when it ends" in out


def test_keep_checkpoints_reaches_the_run_config_only_when_false(tmp_path):
    config = load_config([PAPER])  # false: the run deletes its checkpoints when it ends
    assert training_jobs(config)[0].run_config(config)["keep_checkpoints"] is False
    kept = load_config([PAPER, overlay(tmp_path, {"train": {"keep_checkpoints": True}})])
    assert "keep_checkpoints" not in training_jobs(kept)[0].run_config(kept)  # as before the key
    default = load_config([])
    assert "keep_checkpoints" not in training_jobs(default)[0].run_config(default)


def test_keep_checkpoints_false_is_refused_beside_what_reads_them(tmp_path):
    from gc2po.testbed.mechanism import MEASURE_SPLITS
    from gc2po.workflow import report_plan
    from gc2po.workflow.method_facts import method_facts

    config = load_config([*CI, overlay(tmp_path, {"train": {"keep_checkpoints": False}})])
    with pytest.raises(ValueError) as err:
        report_plan.check(config, method_facts(), MEASURE_SPLITS)
    assert str(err.value) == (
        "train.keep_checkpoints: false deletes the checkpoints evaluate.learning_curve reads "
        "(['grpo', 'gc2po']); keep them (true, the default) or drop evaluate.learning_curve"
    )
    config["evaluate"].pop("learning_curve")
    with pytest.raises(ValueError, match=r"checkpoints audit.checkpoint_steps reads \(\[1\]\)"):
        report_plan.check(config, method_facts(), MEASURE_SPLITS)


def test_the_training_resources_the_budget_prints_are_the_rules():
    """The budget's request is the one the train rule hands Snakemake."""
    config = load_config([PAPER])
    kinds = {k.kind: k for k in budget.budgets(config, run_summary(config))}
    assert kinds["train"].resources == resources.training(config)
    assert kinds["evaluate"].resources == resources.evaluation(config)
    assert "TRAIN_RESOURCES.snakemake()" in (ROOT / "workflow/rules/train.smk").read_text()
