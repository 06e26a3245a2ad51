"""The report's setup page: what was run (config), how big the models are (counted from their
saved files), the evaluation protocol and data hashes, and the machines the evaluations ran on
(read from the evaluation summaries)."""

from __future__ import annotations

import html
import json
import struct
from pathlib import Path

import pandas as pd

from gc2po.reporting.names import benchmark_name, method_name


def safetensors_parameters(model_dir: str | Path) -> int | None:
    """Parameters stored in a model folder's ``*.safetensors`` files (read from their JSON
    headers, no tensor is loaded); None when there are none."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        with path.open("rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            header = json.loads(handle.read(length))
        for name, entry in header.items():
            if name != "__metadata__":
                count = 1
                for dim in entry["shape"]:
                    count *= dim
                total += count
    return total


def _model_rows(base_models: dict, model_paths: dict) -> pd.DataFrame:
    rows = []
    for label, spec in base_models.items():
        path = Path(model_paths[label])
        row = {"base model": label, "source": spec["source"], "path": str(path)}
        config_file = path / "config.json"
        if config_file.is_file():
            config = json.loads(config_file.read_text())
            params = safetensors_parameters(path)
            row.update(
                {
                    "parameters": f"{params:,}" if params else "n/a",
                    "architecture": config.get("model_type"),
                    "hidden size": config.get("hidden_size"),
                    "layers": config.get("num_hidden_layers"),
                    "vocabulary": config.get("vocab_size"),
                }
            )
        else:
            row["parameters"] = "not local (read from the Hub when a job needs it)"
        warm = path / "warmstart.json"
        if warm.is_file():
            stats = json.loads(warm.read_text())
            row["warm start"] = (
                f"{stats['steps']} SFT steps on {stats['num_examples']} problems, "
                f"final loss {stats['final_loss']:.3f}"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _evaluation_rows(summaries: list[Path]) -> pd.DataFrame:
    rows = []
    for path in summaries:
        summary = json.loads(Path(path).read_text())
        protocol, data = summary.get("protocol", {}), summary.get("data", {})
        rows.append(
            {
                "benchmark": benchmark_name(summary.get("benchmark", Path(path).name)),
                "problems": summary.get("problems"),
                "samples per problem": protocol.get("n"),
                "data sha256": str(data.get("sha256", ""))[:16],
                "data": data.get("path"),
            }
        )
    return pd.DataFrame(rows).drop_duplicates(subset=["benchmark"])


def _protocol_text(summaries: list[Path]) -> str:
    if not summaries:
        return "no evaluation summaries"
    summary = json.loads(Path(summaries[0]).read_text())
    p, code = summary.get("protocol", {}), summary.get("code", {})
    versions = ", ".join(f"{k} {v}" for k, v in p.get("grader_versions", {}).items())
    return (
        f"temperature {p.get('temperature')}, top-p {p.get('top_p')}, at most "
        f"{p.get('max_new_tokens')} new "
        f"tokens, sampling seed = training seed, {p.get('backend')} backend; grader: "
        f"{p.get('grader')} "
        f"({versions}); code: gc2po {code.get('gc2po')}, git {code.get('revision')}"
        + (" (uncommitted changes)" if code.get("dirty") else "")
    )


def _cpu_id_text(cpu_id: dict | None) -> str:
    if not cpu_id:
        return "not recorded"  # a summary written before the fingerprint held it
    return (
        f"{cpu_id['vendor']} family {cpu_id['family']} model {cpu_id['model']} "
        f"stepping {cpu_id['stepping']}, microcode {cpu_id['microcode']}"
    )


def _kernels_text(kernels: dict | None) -> str:
    if not kernels:
        return "not recorded"
    onednn, mkl, blas = kernels["onednn"], kernels["mkl"], kernels["numpy_blas"]
    return (
        f"oneDNN {onednn['version']}: {onednn['isa']}; MKL {mkl['version']}: {mkl['isa']}; "
        f"numpy {blas['name']} {blas['version']}: {blas['core']}"
    )


def _packages_text(packages: dict | None) -> str:
    if not packages:
        return "not recorded"
    return f"{packages['count']} installed, sha256 {packages['sha256'][:16]}"


def _machine_rows(summaries: list[Path]) -> pd.DataFrame:
    """One row per distinct machine fingerprint (provenance.machine_fingerprint) among the
    summaries, with how many evaluations it computed; summaries written before the fingerprint
    existed count as "not recorded"."""
    counts: dict[str, int] = {}
    for path in summaries:
        machine = json.loads(Path(path).read_text()).get("machine")
        key = json.dumps(machine, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    rows = []
    for key, count in counts.items():
        machine = json.loads(key)
        if machine is None:
            rows.append({"CPU": "not recorded", "evaluations": count})
            continue
        env = ", ".join(f"{k}={v}" for k, v in machine["env"].items() if v is not None)
        cpu = f"{machine['cpu']} ({machine['architecture']}, {machine['cpu_count']} cores)"
        rows.append(
            {
                "CPU": cpu,
                "CPU id": _cpu_id_text(machine.get("cpu_id")),
                "SIMD flags": " ".join(machine["cpu_flags"]),
                "torch ISA": machine["torch_cpu_capability"],
                "kernels": _kernels_text(machine.get("kernels")),
                "torch threads": machine["torch_threads"],
                "GPUs": ", ".join(machine["gpus"]) or "none",
                "env overrides": env or "none",
                "versions": ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v),
                "packages": _packages_text(machine.get("packages")),
                "evaluations": count,
            }
        )
    return pd.DataFrame(rows)


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, border=0, na_rep="", escape=True)


def setup_html(
    config: dict, base_models: dict, model_paths: dict, runs: dict, summaries: list[Path]
) -> str:
    """A standalone HTML page describing the run."""
    train = config.get("train", {})
    run_rows = pd.DataFrame(
        [
            {
                "run": label,
                "method": method_name(spec["method"]),
                "overrides": ", ".join(f"{k} = {v}" for k, v in spec["trainer"].items()),
                "base models": ", ".join(spec.get("bases", [])),
                "seeds": ", ".join(map(str, spec.get("seeds", []))),
            }
            for label, spec in runs.items()
        ]
    )
    trainer = pd.DataFrame(
        [{"setting": k, "value": v} for k, v in train.get("trainer", {}).items()]
    )
    sections = [
        (
            "Run",
            f"<p>config <b>{html.escape(config['name'])}</b> (mode {html.escape(config['mode'])}); "
            f"seeds {html.escape(str(config['seeds']))}: every run is trained once per seed of "
            "its own (the "
            "table below), and every model is evaluated once per seed with that seed as the "
            "sampling seed.</p>" + _table(run_rows),
        ),
        (
            "Base models",
            _model_rows(base_models, model_paths)
            .set_index("base model")
            .T.to_html(border=0, na_rep=""),
        ),
        (
            "Training (shared by every run)",
            f"<p>task {html.escape(config['mode'])}</p>" + _table(trainer),
        ),
        (
            "Evaluation",
            f"<p>{html.escape(_protocol_text(summaries))}</p>"
            + _table(_evaluation_rows(summaries)),
        ),
        (
            "Machines",
            "<p>where the evaluations ran. The same fingerprint and inputs give the "
            "same bytes; another ISA, thread count or library version can round floats "
            "differently and so change samples (docs/results.md).</p>"
            + _table(_machine_rows(summaries)),
        ),
    ]
    body = "".join(f"<h3>{html.escape(title)}</h3>{content}" for title, content in sections)
    style = (
        "body{font-family:sans-serif;font-size:13px} "
        "table{border-collapse:collapse;margin-bottom:12px}"
        "th,td{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}"
    )
    return (
        "<!DOCTYPE html><html><head><meta "
        f"charset='utf-8'><style>{style}</style></head><body>{body}</body></html>\n"
    )
