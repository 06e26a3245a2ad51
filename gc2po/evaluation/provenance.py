"""What an evaluation summary records about where its numbers come from: the data file's
sha256, the code's git revision, the graders and their versions, and the machine that computed
them. Only :func:`machine_fingerprint` imports torch (when called)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path

from gc2po.data.tasks import BENCHMARK, TESTBED

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # gc2po/

# Our graders' source files per task: their hash is "our grader's version".
GRADER_SOURCES = {
    TESTBED: ("testbed/oracle.py", "core/segment.py"),
    # a folder: each of its modules, in name order (the sandbox decides code verdicts)
    BENCHMARK: ("evaluation/graders.py", "evaluation/sandbox", "data/benchmarks.py"),
}
GRADER_NAMES = {
    "testbed": "testbed oracle",
    "math": "math-verify",
    "choice": "choice letter",
    "label": "FOLIO label",
    "none_answer": "no-answer phrase",
    "code": "HumanEval execution",
}


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def records_sha256(records: list[dict]) -> str:
    """sha256 of the records as JSON lines (what was evaluated,
    when it did not come from one file)."""
    return hashlib.sha256(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
    ).hexdigest()


def data_provenance(
    path: str | Path | None, records: list[dict], source: str | None = None
) -> dict:
    """``{"path", "sha256", "hashed"}``: the file's sha256 when the records came from one file,
    else the sha256 of the normalised records (a folder, the Hub, generated problems)."""
    if path is not None and Path(path).is_file():
        return {"path": str(path), "sha256": file_sha256(path), "hashed": "file"}
    return {
        "path": str(path) if path is not None else source,
        "sha256": records_sha256(records),
        "hashed": "normalised records",
    }


@cache
def git_revision() -> dict:
    """``{"revision", "dirty"}`` of the checkout the gc2po package runs from (None outside git)."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True
        )

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"revision": None, "dirty": None}
        status = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return {"revision": None, "dirty": None}
    return {"revision": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@cache
def grader_source_hash(task: str) -> str:
    digest = hashlib.sha256()
    for relative in GRADER_SOURCES[task]:
        path = PACKAGE_DIR / relative
        for source in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def grader_provenance(task: str, records: list[dict]) -> tuple[str, dict]:
    """(grader names, versions) used for ``records``: our graders' source hash, and
    math-verify's version where it grades."""
    if task == TESTBED:
        kinds = [TESTBED]
    else:
        kinds = sorted({r.get("meta", {}).get("grader", "math") for r in records})
    versions = {"gc2po-graders": grader_source_hash(TESTBED if task == TESTBED else BENCHMARK)}
    if "math" in kinds:
        versions["math-verify"] = package_version("math-verify")
    return ", ".join(GRADER_NAMES.get(k, k) for k in kinds), versions


def code_provenance() -> dict:
    return {"gc2po": package_version("gc2po"), **git_revision()}


# Environment settings that change which kernels torch, oneDNN and MKL run, or how they split
# float sums over threads: two machines agree byte for byte only when these agree too.
FINGERPRINT_ENV = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUBLAS_WORKSPACE_CONFIG",
)
# CPU flags that decide the SIMD code paths of ATen and oneDNN (x86; other CPUs report none).
SIMD_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
FINGERPRINT_PACKAGES = ("torch", "transformers", "trl", "numpy", "vllm")


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""  # not Linux


def _cpu_model_and_flags(text: str) -> tuple[str | None, list[str]]:
    """(CPU model name, its SIMD flags of SIMD_FLAGS) from a /proc/cpuinfo text; (platform's
    answer, []) where there is none."""
    fields: dict[str, str] = {}
    for line in text.splitlines():  # one block per CPU: the first block's values
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or fields.get("Model name") or fields.get("cpu model")
    flags = set(fields.get("flags", fields.get("Features", "")).split())
    return model or platform.processor() or None, [flag for flag in SIMD_FLAGS if flag in flags]


def machine_fingerprint() -> dict:
    """Where the numbers were computed: CPU model and SIMD flags, the CPU's vendor, family,
    model, stepping and microcode (``cpu_id``), the ISA torch dispatches to
    (``ATEN_CPU_CAPABILITY`` lowers it), the env settings of FINGERPRINT_ENV (None: unset),
    torch's thread counts, the GPUs torch sees, the library versions, every installed package
    (``packages``: the sorted ``name==version`` list and its sha256) and the kernels oneDNN, MKL
    and numpy's BLAS chose (``kernels``, gc2po.evaluation.machine). Same fingerprint and same
    inputs: same bytes (docs/results.md); another fingerprint may round floats differently."""
    import torch

    from gc2po.evaluation.machine import cpu_identity, installed_packages, kernel_choices

    cpuinfo = _cpuinfo()
    model, flags = _cpu_model_and_flags(cpuinfo)
    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available()
        else []
    )
    return {
        "cpu": model,
        "cpu_id": cpu_identity(cpuinfo),
        "architecture": platform.machine(),
        "cpu_flags": flags,
        "cpu_count": os.cpu_count(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "env": {name: os.environ.get(name) for name in FINGERPRINT_ENV},
        "gpus": gpus,
        "versions": {
            "python": platform.python_version(),
            **{name: package_version(name) for name in FINGERPRINT_PACKAGES},
        },
        "kernels": kernel_choices(),
        "packages": installed_packages(),
    }
