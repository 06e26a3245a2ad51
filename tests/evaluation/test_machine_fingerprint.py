"""The machine fingerprint every evaluation summary records: its fields, that it reports the
ISA torch actually dispatches to (lowered by ATEN_CPU_CAPABILITY in a fresh process), the CPU's
identity, the installed package set and the kernels oneDNN, MKL and numpy's BLAS chose."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys

import pytest
import torch

from gc2po.evaluation.machine import MKL_HEADER, cpu_identity, installed_packages
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
        "cpu_id",
        "architecture",
        "cpu_flags",
        "cpu_count",
        "torch_cpu_capability",
        "torch_threads",
        "torch_interop_threads",
        "env",
        "gpus",
        "versions",
        "kernels",
        "packages",
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


CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7B13
stepping\t: 0
microcode\t: 0xa0011d1
flags\t\t: fpu avx avx2

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
"""


def test_cpu_identity_is_the_first_cpus_vendor_family_model_stepping_and_microcode():
    assert cpu_identity(CPUINFO) == {
        "vendor": "AuthenticAMD",
        "family": "25",
        "model": "1",  # the first block's, not the second's 17
        "model_name": "AMD EPYC 7B13",
        "stepping": "0",
        "microcode": "0xa0011d1",
    }
    assert cpu_identity("") == dict.fromkeys(
        ["vendor", "family", "model", "model_name", "stepping", "microcode"]
    )


def test_installed_packages_are_the_sorted_freeze_lines_and_their_sha256():
    packages = installed_packages()
    lines = packages["list"]
    assert packages["count"] == len(lines) == len({line.split("==")[0] for line in lines})
    assert [line.split("==")[0] for line in lines] == sorted(line.split("==")[0] for line in lines)
    assert f"torch=={torch.__version__}" in lines and "math-verify==" in " ".join(lines)
    text = "".join(line + "\n" for line in lines)
    assert packages["sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_the_kernels_are_those_this_machine_chose():
    """On this x86 machine with torch's MKL and oneDNN and numpy's OpenBLAS: each names its
    version and the code path it took here (oneDNN's ISA line, MKL's first MKL_VERBOSE line, the
    OpenBLAS core)."""
    kernels = machine_fingerprint()["kernels"]
    assert kernels["onednn"]["version"].startswith("v3.") and kernels["onednn"]["isa"]
    assert kernels["mkl"]["version"] and kernels["mkl"]["isa"]
    assert "Lnx" not in kernels["mkl"]["isa"]  # the clock speed MKL prints is not recorded
    blas = kernels["numpy_blas"]
    if blas["name"] and "openblas" in blas["name"]:
        assert blas["core"]


def test_onednn_max_cpu_isa_changes_the_recorded_onednn_isa():
    """ONEDNN_MAX_CPU_ISA caps oneDNN's dispatch: the recorded ISA follows it, so it is what
    oneDNN ran, not a constant."""
    native = fingerprint_in_subprocess()["kernels"]["onednn"]["isa"]
    capped = fingerprint_in_subprocess(ONEDNN_MAX_CPU_ISA="SSE41")["kernels"]["onednn"]["isa"]
    assert native and capped == "Intel SSE4.1"
    assert native != capped or "avx" not in machine_fingerprint()["cpu_flags"]


@pytest.mark.parametrize(
    "line, isa",
    [
        (
            "MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 "
            "architecture Intel(R) Architecture processors, Lnx 2.60GHz lp64 gnu_thread",
            "Intel(R) Architecture processors",  # what it reports on this AMD EPYC
        ),
        (
            "MKL_VERBOSE oneMKL 2024.0 Product build 20240605 for Intel(R) 64 architecture Intel(R)"
            " Advanced Vector Extensions 512 (Intel(R) AVX-512) enabled processors, Lnx 3.10GHz "
            "lp64 intel_thread",
            "Intel(R) Advanced Vector Extensions 512 (Intel(R) AVX-512) enabled processors",
        ),
    ],
)
def test_mkl_code_path_is_read_from_its_verbose_header_without_the_clock(line, isa):
    assert MKL_HEADER.search(line).group(2) == isa
