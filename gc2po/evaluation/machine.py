"""What decides the bytes a machine computes, beyond torch's own settings (the parts of
:func:`gc2po.evaluation.provenance.machine_fingerprint` that need probing): the CPU's identity,
the installed Python packages, and the kernels that oneDNN, MKL and numpy's BLAS chose on this
CPU. Two CPUs that report the same ISA to torch may still differ here (another family or
microcode, MKL's generic path on AMD against its AVX-512 path on Intel, another OpenBLAS core).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path

CPU_FIELDS = {  # /proc/cpuinfo key -> fingerprint key (x86; other CPUs report fewer)
    "vendor_id": "vendor",
    "cpu family": "family",
    "model": "model",
    "model name": "model_name",
    "stepping": "stepping",
    "microcode": "microcode",
}
ONEDNN_ISA = re.compile(r"onednn_verbose,(?:v\d+,)?info,cpu,isa:(.+)")
MKL_HEADER = re.compile(r"MKL_VERBOSE (.+?) for Intel\(R\) 64 architecture (.+?)(?:, Lnx|$)")
# One single-precision GEMM through the MKL that torch links (libtorch_cpu's sgemm_), in a fresh
# process so that MKL_VERBOSE is read at MKL's start: its first line names MKL's code path.
MKL_PROBE = """import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
n, one, zero, no = ctypes.c_int(2), ctypes.c_float(1), ctypes.c_float(0), ctypes.c_char(b"N")
a, c = (ctypes.c_float * 4)(1, 2, 3, 4), (ctypes.c_float * 4)()
r = ctypes.byref
lib.sgemm_(r(no), r(no), r(n), r(n), r(n), r(one), a, r(n), a, r(n), r(zero), c, r(n))
"""
OPENBLAS_CORENAME = (
    "scipy_openblas_get_corename64_",
    "scipy_openblas_get_corename",
    "openblas_get_corename64_",
    "openblas_get_corename",
)


def cpu_identity(cpuinfo: str) -> dict:
    """Vendor, family, model, model name, stepping and microcode of the first CPU of a
    /proc/cpuinfo text (None where it does not say)."""
    first: dict[str, str] = {}
    for line in cpuinfo.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            first.setdefault(key.strip(), value.strip())
    return {name: first.get(key) for key, name in CPU_FIELDS.items()}


def installed_packages() -> dict:
    """Every installed distribution as ``name==version`` (the one import finds first where a
    name is installed twice), sorted, and the sha256 of those lines: what ``pip freeze`` says,
    without pip."""
    seen: dict[str, str] = {}
    for dist in metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if name and name not in seen:
            seen[name] = f"{name}=={dist.version}"
    lines = [seen[name] for name in sorted(seen)]
    digest = hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()
    return {"sha256": digest, "count": len(lines), "list": lines}


def _torch_build_line(pattern: str) -> str | None:
    import torch

    found = re.search(pattern, torch.__config__.show())
    return found.group(1).strip() if found else None


@cache  # oneDNN prints its header once per process; its ISA is fixed when it starts
def onednn_kernels() -> dict:
    """oneDNN's version and the ISA it dispatches to (its verbose header, printed to the C
    stdout, which is read back from a temporary file for the one reorder that prints it)."""
    import torch

    isa = None
    if torch.backends.mkldnn.is_available():
        with tempfile.TemporaryFile() as capture:
            sys.stdout.flush()
            saved = os.dup(1)
            try:
                os.dup2(capture.fileno(), 1)
                with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                    torch.ones(2, 2).to_mkldnn()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            capture.seek(0)
            found = ONEDNN_ISA.search(capture.read().decode(errors="replace"))
            isa = found.group(1).strip() if found else None
    return {"version": _torch_build_line(r"MKL-DNN (v[^\n]+)"), "isa": isa}


@cache
def mkl_kernels() -> dict:
    """The MKL torch links: its version (torch's build) and the code path it takes on this CPU
    (MKL_VERBOSE's first line in a fresh process; None where torch has no MKL)."""
    import torch

    version, isa = _torch_build_line(r"Math Kernel Library Version ([^\n]+)"), None
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    if version and library.is_file():
        try:
            done = subprocess.run(
                [sys.executable, "-c", MKL_PROBE, str(library)],
                env={**os.environ, "MKL_VERBOSE": "1"},
                capture_output=True,
                text=True,
                timeout=120,
            )
            found = MKL_HEADER.search(done.stdout)
            isa = found.group(2).strip() if found else None
        except (OSError, subprocess.SubprocessError):
            isa = None
    return {"version": version, "isa": isa}


def _loaded_openblas() -> str | None:
    """The OpenBLAS shared library loaded in this process (numpy's), from /proc/self/maps."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    return min(paths) if paths else None


def numpy_blas() -> dict:
    """The BLAS numpy was built with (name, version) and, for OpenBLAS, the core it chose at
    run time on this CPU (``openblas_get_corename``)."""
    import numpy

    blas = numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    core, library = None, _loaded_openblas()
    if library is not None:
        handle = ctypes.CDLL(library)
        for symbol in OPENBLAS_CORENAME:
            function = getattr(handle, symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                core = function().decode()
                break
    return {"name": blas.get("name"), "version": blas.get("version"), "core": core}


def kernel_choices() -> dict:
    return {"onednn": onednn_kernels(), "mkl": mkl_kernels(), "numpy_blas": numpy_blas()}
