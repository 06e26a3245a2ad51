"""The machine fingerprint every evaluation summary records: its fields, and that it reports the
ISA torch actually dispatches to (lowered by ATEN_CPU_CAPABILITY in a fresh process)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import torch

from gc2po.evaluation.provenance import FINGERPRINT_ENV, machine_fingerprint

PRINT_FINGERPRINT = (
    "import json; from gc2po.evaluation.provenance import machine_fingerprint; "
    "print(json.dumps(machine_fingerprint()))"
)


def fingerprint_in_subprocess(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in FINGERPRINT_ENV}
    out = subprocess.run(
        [sys.executable, "-c", PRINT_FINGERPRINT],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout)


def test_fingerprint_fields_describe_this_process():
    fingerprint = machine_fingerprint()
    assert set(fingerprint) == {
        "cpu",
        "architecture",
        "cpu_flags",
        "cpu_count",
        "torch_cpu_capability",
        "torch_threads",
        "torch_interop_threads",
        "env",
        "gpus",
        "versions",
    }
    assert (
        fingerprint["architecture"] == platform.machine()
        and fingerprint["cpu_count"] == os.cpu_count()
    )
    if platform.system() == "Linux":  # /proc/cpuinfo names the CPU
        assert fingerprint["cpu"]
    assert fingerprint["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert fingerprint["torch_threads"] == torch.get_num_threads()
    assert set(fingerprint["env"]) == set(FINGERPRINT_ENV)
    assert fingerprint["env"]["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS")
    versions = fingerprint["versions"]
    assert (
        versions["torch"] == torch.__version__ and versions["python"] == platform.python_version()
    )
    assert versions["transformers"] and versions["trl"] and versions["numpy"]
    json.dumps(fingerprint)  # it goes into a JSON summary as it is


def test_aten_cpu_capability_changes_the_reported_isa_and_is_recorded():
    lowered = fingerprint_in_subprocess(ATEN_CPU_CAPABILITY="default", OMP_NUM_THREADS="1")
    assert lowered["torch_cpu_capability"] == "DEFAULT"  # every CPU has the portable kernels
    assert (
        lowered["env"]["ATEN_CPU_CAPABILITY"] == "default"
        and lowered["env"]["OMP_NUM_THREADS"] == "1"
    )
    assert lowered["torch_threads"] == 1
    native = fingerprint_in_subprocess()
    assert native["env"]["ATEN_CPU_CAPABILITY"] is None
    if "avx2" in native["cpu_flags"]:  # x86 with AVX2 (on AVX-512 machines this lowers the ISA)
        assert (
            fingerprint_in_subprocess(ATEN_CPU_CAPABILITY="avx2")["torch_cpu_capability"] == "AVX2"
        )
