"""The training jobs of a workflow config: one per (base model, run, seed), each with the resolved
run config it trains from. The Snakemake workflow (``workflow/rules/common.smk``) and
``gc2po plan`` both read them from here, so what is planned is what runs.

Runs: every method of ``methods`` on every base model; the ``ablation_methods``, the ``sweeps``
(``SWEEP_KEYS``: a setting's values, for the ``sweep_methods`` it applies to) and the named
``variants`` (a method with other settings) on the ``ablation_bases`` only (default: the first
base model). A job's trainer
settings are the config's shared ``train.trainer``, then ``train.per_method[method]``, then the
run's own (a sweep's lambda); each job's settings are checked where its ``GC2POConfig`` is built
(``gc2po.training.run_config.build_args``, called by ``validate``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from gc2po.errors import did_you_mean
from gc2po.layout import RunDir, resources_dir, results_dir
from gc2po.workflow import global_batch
from gc2po.workflow import method_facts as mf
from gc2po.workflow.base_models import base_model_path, base_models

# in display names: a variant {method: grpo_gated, trainer: {cf_signal: r_cf}} is
# "GRPO on f x g (gated, signal = r_cf)"
SETTING_NAMES = {"cf_signal": "signal", "cf_signal_rho": "rho", "cf_std_floor": "std floor"}


def __getattr__(name: str):
    """``SWEEP_KEYS`` (a swept setting -> the methods it is swept for: one run per value and per
    method of ``sweep_methods`` it applies to) and ``SWEEP_METHODS`` (those with sweeps), derived
    from the registry's ``Method.sweeps`` on first use (the registry imports torch)."""
    if name == "SWEEP_KEYS":
        return mf.sweep_keys(mf.method_facts())
    if name == "SWEEP_METHODS":
        return mf.sweep_methods(mf.method_facts())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Run:
    label: str
    method: str
    trainer: dict = field(default_factory=dict)  # the run's own settings (a sweep's lambda)
    bases: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    @property
    def display_name(self) -> str:
        """Its name in tables and figures: its method's display name, with the run's own settings
        inside the name's parentheses ("GC2PO (paper, lambda_exp = 0.5)") or after it."""
        from gc2po.methods import get_method

        name = get_method(self.method).display_name
        if not self.trainer:
            return name
        settings = ", ".join(
            f"{SETTING_NAMES.get(key, key)} = {value}" for key, value in self.trainer.items()
        )
        return f"{name[:-1]}, {settings})" if name.endswith(")") else f"{name} ({settings})"


@dataclass(frozen=True)
class TrainingJob:
    base: str
    run: str
    seed: int
    method: str
    model: str
    train_data: str
    output_dir: str
    trainer: dict
    launcher: dict | None

    def run_config(self, config: dict) -> dict:
        """The resolved run config the job trains from (written beside the run). ``resume`` and
        ``overwrite``: a rerun continues the same config's checkpoints and starts a changed one
        over. The task is the workflow's ``mode`` (the same vocabulary, gc2po.data.tasks).
        ``keep_checkpoints: false`` (``train.keep_checkpoints``): the run deletes its
        checkpoints when it ends. The memory plan's note on a job trained against it is added by
        ``gc2po.workflow.memory_check.noted_run_config``."""
        train = config["train"]
        run = {
            "model": self.model,
            "train_data": self.train_data,
            "task": config["mode"],
            "output_dir": self.output_dir,
            "method": self.method,
            "seed": self.seed,
            "resume": True,
            "overwrite": True,
            "trainer": copy.deepcopy(self.trainer),
        }
        for key in ("precision", "max_train_examples"):
            if train.get(key) is not None:
                run[key] = train[key]
        if train.get("keep_checkpoints") is False:  # absent when true: older run configs stay
            run["keep_checkpoints"] = False
        return run


def ablation_bases(config: dict) -> list[str]:
    """The base models the ablations, sweeps and variants run on (default: the first one);
    each must be one the config trains (``bases``)."""
    bases = list(base_models(config))
    chosen = config.get("ablation_bases") or bases[:1]
    unknown = sorted(set(chosen) - set(bases))
    if unknown:
        raise ValueError(
            f"ablation_bases: {unknown} are not base models this config trains"
            f"{did_you_mean(unknown[0], bases)}; bases: {bases}"
        )
    return list(chosen)


def runs(config: dict, facts: mf.Facts | None = None) -> dict[str, Run]:
    """Run label -> Run. ``method_seeds`` gives a method fewer seeds than ``seeds``
    (costly ones). ``facts``: the methods' roles and sweeps (``method_facts``; default: read
    from the registry)."""
    facts = facts or mf.method_facts()
    sweep_keys, sweep_methods = mf.sweep_keys(facts), mf.sweep_methods(facts)
    every, ablation = tuple(base_models(config)), tuple(ablation_bases(config))
    method_seeds = config.get("method_seeds") or {}

    def seeds(method):
        return tuple(int(s) for s in method_seeds.get(method, config["seeds"]))

    out = {m: Run(m, m, {}, every, seeds(m)) for m in config["methods"]}
    for method in config.get("ablation_methods") or []:
        out.setdefault(method, Run(method, method, {}, ablation, seeds(method)))
    swept = config.get("sweep_methods") or mf.default_sweep_methods(facts)
    for method in swept:
        if method not in sweep_methods:
            raise ValueError(
                f"sweep_methods: {method!r} has no sweep; valid: {list(sweep_methods)}"
            )
    for key, values in (config.get("sweeps") or {}).items():
        if key not in sweep_keys:
            raise ValueError(f"sweeps: unknown key {key!r}; valid: {list(sweep_keys)}")
        methods = [m for m in swept if m in sweep_keys[key]]
        if values and not methods:
            raise ValueError(
                f"sweeps.{key}: swept for {list(sweep_keys[key])}, none of which is in "
                f"sweep_methods {list(swept)}"
            )
        for method in methods:
            for value in values:
                label = f"{method}_{key}_{value}"
                out[label] = Run(label, method, {key: value}, ablation, seeds(method))
    for label, variant in (config.get("variants") or {}).items():  # a method with other settings
        if label in out:
            raise ValueError(f"variants.{label}: the label is already a run of this config")
        out[label] = Run(
            label,
            variant["method"],
            dict(variant.get("trainer") or {}),
            ablation,
            seeds(variant["method"]),
        )
    return out


def runs_of_role(runs: dict, facts: mf.Facts, role: str) -> list[str]:
    """Runs of a method of ``role`` trained under its own name (not a sweep's or variant's)."""
    return [
        label
        for label, run in runs.items()
        if run.method == label and facts.get(run.method, {}).get("role") == role
    ]


def display_names(config: dict) -> dict[str, str]:
    """Run label -> its name in tables and figures (``Run.display_name``)."""
    return {label: run.display_name for label, run in runs(config).items()}


def _check_method_names(mapping: dict, where: str) -> None:
    """Keys must be registered methods (an overlay may name methods its base config trains)."""
    from gc2po.methods import METHODS

    unknown = sorted(set(mapping) - set(METHODS))
    if unknown:
        raise ValueError(
            f"{where}: unknown method(s) {unknown}{did_you_mean(unknown[0], METHODS)}; "
            f"valid: {sorted(METHODS)}"
        )


def paths(config: dict) -> tuple[str, str]:
    """(resources folder, results folder) of the config."""
    return resources_dir(config["name"]), results_dir(config["name"])


def training_jobs(config: dict, facts: mf.Facts | None = None) -> list[TrainingJob]:
    res, out = paths(config)
    train = config["train"]
    per_method = train.get("per_method") or {}
    jobs = []
    for label, run in runs(config, facts).items():
        layers = {  # where each trainer key comes from, the later over the earlier
            "train.trainer": train.get("trainer") or {},
            f"train.per_method.{run.method}": per_method.get(run.method, {}),
            (
                f"variants.{label}.trainer"
                if label in (config.get("variants") or {})
                else "sweeps"  # a sweep's run sets its swept key: sweeps.<key>
            ): run.trainer,
        }
        trainer = {key: value for layer in layers.values() for key, value in layer.items()}
        if train.get("sequences_per_step") is not None:  # the global batch is the config's
            sources = {key: f"{name}.{key}" for name, layer in layers.items() for key in layer}
            trainer = global_batch.derived_trainer(
                trainer, train["sequences_per_step"], launcher_processes(config), sources
            )
        for base in run.bases:
            for seed in run.seeds:
                jobs.append(
                    TrainingJob(
                        base=base,
                        run=label,
                        seed=int(seed),
                        method=run.method,
                        model=base_model_path(config, base),
                        train_data=f"{res}/data/{base_models(config)[base]['train_data']}.jsonl",
                        output_dir=RunDir(base, label, seed).path(out),
                        trainer=trainer,
                        launcher=train.get("launcher"),
                    )
                )
    return jobs


def launcher_processes(config: dict) -> int:
    """The training jobs' process count over all machines (1 without a launcher)."""
    return int((config["train"].get("launcher") or {}).get("num_processes", 1))


def validate(config: dict, where: str = "config") -> None:
    """Resolve the GC2POConfig of every distinct training job (no model is loaded) and check its
    launcher: a bad key, type or value fails here, naming it, before any job runs."""
    from gc2po.training.run_config import build_args
    from gc2po.workflow.launch import validate_launcher

    # method names (the registry imports torch: checked here, not while building the runs)
    _check_method_names(config.get("method_seeds") or {}, "method_seeds")
    for label, variant in (config.get("variants") or {}).items():
        _check_method_names({variant["method"]: None}, f"variants.{label}.method")
    try:
        _check_method_names(config["train"].get("per_method") or {}, "train.per_method")
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err
    try:
        jobs = training_jobs(config)
    except ValueError as err:  # the global batch cannot be split as the config says
        raise ValueError(f"{where}: {err}") from err
    seen = set()
    for job in jobs:
        key = json.dumps([job.method, job.trainer, job.launcher], sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            args = build_args(job.run_config(config))
            if job.launcher is not None:
                validate_launcher(job.launcher, args.to_dict(), "train.launcher")
        except ValueError as err:
            raise ValueError(f"{where}: training job {job.base}/{job.run}: {err}") from err
