"""The results layout: every path a training run, evaluation, learning curve, audit, table or
figure is written to is built here, and every such path that is read back is parsed here.

One template per kind of path, relative to its root, both builds and parses it, so the two can
never disagree::

    resources/<name>/                          data and base models (resources_dir)
    results/<name>/                            everything below (results_dir)
      runs/<base>/<run>/seed<k>/               RunDir: run.yaml, metrics.jsonl, final/,
                                               checkpoint-<step>/
      eval/<base>/<model>/seed<k>/<benchmark>.jsonl
                                               EvalFile below an evaluation root: eval/,
                                               eval_greedy/ (greedy decoding),
                                               eval_reasoning[_greedy]/ (evaluate.reasoning:
                                               the uncued problems), or gc2po eval's output_dir
      curves/<base>/<run>/seed<k>.csv          CurveFile
      audit/<base>/<model>/seed<k>[/step<n>]/  AuditDir, CheckpointAuditDir: summary.json,
                                               completions.csv, perturbation_study.csv
      tables/<table>.<ext>, figures/<figure>.png, report/setup.html

Fields may be Snakemake wildcards (``RunDir("{base}", "{run}", "{seed}")``): the built path is
then the rule's pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar, TypeVar

EVAL_ROOT = "eval"  # the configured sampling
GREEDY_EVAL_ROOT = "eval_greedy"  # greedy decoding (evaluate.greedy)
# evaluate.reasoning: n samples, and greedy decoding, of the uncued problems of its splits
REASONING_EVAL_ROOT = "eval_reasoning"
SUMMARY_SUFFIX = ".summary.json"  # an evaluation file's summary sits beside it
NUMBER_FIELDS = ("seed", "step")  # parsed as integers

Kind = TypeVar("Kind", bound="_Layout")


def _pattern(template: str) -> re.Pattern:
    """A template's regex: ``{seed}`` and ``{step}`` match digits, any other field one path part."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        re.escape(part)
        if i % 2 == 0
        else rf"(?P<{part}>\d+)"
        if part in NUMBER_FIELDS
        else rf"(?P<{part}>[^/]+)"
        for i, part in enumerate(parts)
    )
    return re.compile(rf"(?:^|/){regex}/?$")


class _Layout:
    """A kind of path: ``TEMPLATE`` below a root (the results folder or an evaluation root)."""

    TEMPLATE: ClassVar[str]
    WHAT: ClassVar[str]  # in messages: "an evaluation file"

    @classmethod
    def shown(cls) -> str:
        """The template as the documentation writes it: ``runs/<base>/<run>/seed<seed>``."""
        return re.sub(r"\{(\w+)\}", r"<\1>", cls.TEMPLATE)

    def relative(self) -> str:
        return self.TEMPLATE.format(**{f.name: getattr(self, f.name) for f in fields(self)})

    def path(self, root: str | Path) -> str:
        return f"{root}/{self.relative()}"

    @classmethod
    def find(cls: type[Kind], path: str | Path) -> Kind | None:
        """The key of ``path`` (any prefix before the template), or None when it is not one."""
        found = _pattern(cls.TEMPLATE).search(Path(path).as_posix())
        if not found:
            return None
        return cls(
            **{
                name: int(value) if name in NUMBER_FIELDS else value
                for name, value in found.groupdict().items()
            }
        )

    @classmethod
    def parse(cls: type[Kind], path: str | Path) -> Kind:
        found = cls.find(path)
        if found is None:
            raise ValueError(f"{path}: not {cls.WHAT} of the layout .../{cls.shown()}")
        return found


@dataclass(frozen=True)
class RunDir(_Layout):
    """One training run's folder below the results folder."""

    WHAT: ClassVar[str] = "a training run's folder"
    TEMPLATE: ClassVar[str] = "runs/{base}/{run}/seed{seed}"
    FINAL: ClassVar[str] = "final"
    METRICS: ClassVar[str] = "metrics.jsonl"
    RUN_CONFIG: ClassVar[str] = "run.yaml"
    CHECKPOINT: ClassVar[str] = "checkpoint-{step}"  # what the trainer names a kept checkpoint
    CHECKPOINTS: ClassVar[str] = "checkpoint-*"  # every kept checkpoint (a glob)
    base: str
    run: str
    seed: int | str

    def final(self, root: str | Path) -> str:
        return f"{self.path(root)}/{self.FINAL}"

    def metrics(self, root: str | Path) -> str:
        return f"{self.path(root)}/{self.METRICS}"

    def run_config(self, root: str | Path) -> str:
        return f"{self.path(root)}/{self.RUN_CONFIG}"

    def checkpoint(self, root: str | Path, step: int | str) -> str:
        return f"{self.path(root)}/{self.CHECKPOINT.format(step=step)}"

    @classmethod
    def of_member(cls, path: str | Path, member: str) -> RunDir | None:
        """The run that ``path`` is the ``member`` (FINAL, METRICS) of, or None."""
        path = Path(path)
        return cls.find(path.parent) if path.name == member else None

    @classmethod
    def checkpoint_step(cls, name: str) -> int | None:
        """The step of a checkpoint folder's name, or None when it is not one."""
        found = re.fullmatch(cls.CHECKPOINT.format(step=r"(\d+)"), name)
        return int(found[1]) if found else None


def is_error(record: dict) -> bool:
    """A per-sample record of an evaluation file whose grading failed: no grade, neither right
    nor wrong (``gc2po.evaluation.grading_errors`` writes such records)."""
    return record.get("status") == "error"


@dataclass(frozen=True)
class EvalFile(_Layout):
    """Per-sample evaluation records of one (base, model, seed) on one benchmark, below an
    evaluation root (``eval_root``, or ``gc2po eval``'s output_dir)."""

    WHAT: ClassVar[str] = "an evaluation file"
    TEMPLATE: ClassVar[str] = "{base}/{model}/seed{seed}/{benchmark}.jsonl"
    GLOB: ClassVar[str] = "*/*/seed*/*.jsonl"  # every evaluation file below a root
    base: str
    model: str  # "base" or a run label
    seed: int | str
    benchmark: str

    def summary(self, root: str | Path) -> str:
        return self.path(root) + SUMMARY_SUFFIX

    @classmethod
    def of_summary(cls, path: str | Path) -> EvalFile:
        text = Path(path).as_posix()
        if not text.endswith(SUMMARY_SUFFIX):
            raise ValueError(f"{path}: not an evaluation summary (*.jsonl{SUMMARY_SUFFIX})")
        return cls.parse(text.removesuffix(SUMMARY_SUFFIX))


def eval_root(results: str | Path, greedy: bool = False) -> str:
    return f"{results}/{GREEDY_EVAL_ROOT if greedy else EVAL_ROOT}"


def reasoning_root(results: str | Path, greedy: bool = False) -> str:
    """The evaluation root of ``evaluate.reasoning``: sampled, or greedy (``_greedy``)."""
    return f"{results}/{REASONING_EVAL_ROOT}{'_greedy' if greedy else ''}"


def summary_path(eval_path: str | Path) -> Path:
    """The summary beside a per-sample evaluation file."""
    return Path(str(eval_path) + SUMMARY_SUFFIX)


@dataclass(frozen=True)
class CurveFile(_Layout):
    """One seed's learning curve (accuracy per kept checkpoint) of a run."""

    WHAT: ClassVar[str] = "a learning-curve file"
    TEMPLATE: ClassVar[str] = "curves/{base}/{run}/seed{seed}.csv"
    base: str
    run: str
    seed: int | str


@dataclass(frozen=True)
class AuditDir(_Layout):
    """The reward audit of one model (``base`` or a run's final model) below the results folder."""

    WHAT: ClassVar[str] = "an audit folder"
    TEMPLATE: ClassVar[str] = "audit/{base}/{model}/seed{seed}"
    SUMMARY: ClassVar[str] = "summary.json"
    COMPLETIONS: ClassVar[str] = "completions.csv"
    EPISODES: ClassVar[str] = "episodes.csv"  # one row per episode: the signal audit's data
    STUDY: ClassVar[str] = "perturbation_study.csv"
    base: str
    model: str
    seed: int | str

    def file(self, root: str | Path, name: str) -> str:
        return f"{self.path(root)}/{name}"


@dataclass(frozen=True)
class CheckpointAuditDir(AuditDir):
    """The reward audit of a run's kept checkpoint ``checkpoint-<step>`` (along training)."""

    WHAT: ClassVar[str] = "a checkpoint's audit folder"
    TEMPLATE: ClassVar[str] = "audit/{base}/{model}/seed{seed}/step{step}"
    step: int | str = 0


def audit_of_summary(path: str | Path) -> AuditDir:
    """The audit (of a model or of a checkpoint) whose ``summary.json`` ``path`` is."""
    path = Path(path)
    if path.name != AuditDir.SUMMARY:
        raise ValueError(f"{path}: not an audit summary ({AuditDir.SUMMARY})")
    return CheckpointAuditDir.find(path.parent) or AuditDir.parse(path.parent)


def results_dir(name: str) -> str:
    return f"results/{name}"


def resources_dir(name: str) -> str:
    return f"resources/{name}"


def table_file(results: str | Path, table: str, ext: str) -> str:
    return f"{results}/tables/{table}.{ext}"


def figure_file(results: str | Path, figure: str) -> str:
    return f"{results}/figures/{figure}.png"


def report_page(results: str | Path, page: str) -> str:
    return f"{results}/report/{page}.html"
