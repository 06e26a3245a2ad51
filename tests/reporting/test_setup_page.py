"""The setup page lists the machines of the evaluations (their fingerprints); the tables never
read the fingerprint, so two machines whose numbers agree give byte-identical tables (the HTML
table included: its element ids are fixed, not pandas' random ones)."""

from __future__ import annotations

import json
from pathlib import Path

from gc2po.reporting.setup_page import _machine_rows, setup_html
from gc2po.reporting.tables import EvalFile, write_table
from tests.reporting.conftest import write_eval

CONFIG = {
    "name": "ci",
    "mode": "testbed",
    "seeds": [0, 1],
    "train": {"trainer": {}},
}


def fingerprint(cpu: str, capability: str, **env: str) -> dict:
    return {
        "cpu": cpu,
        "architecture": "x86_64",
        "cpu_flags": ["avx2", "avx512f"],
        "cpu_count": 2,
        "torch_cpu_capability": capability,
        "torch_threads": 2,
        "torch_interop_threads": 2,
        "env": {"ATEN_CPU_CAPABILITY": None, **env},
        "gpus": [],
        "versions": {"python": "3.11.7", "torch": "2.13.0", "vllm": None},
        "cpu_id": {
            "vendor": "AuthenticAMD" if "AMD" in cpu else "GenuineIntel",
            "family": "25",
            "model": "17",
            "model_name": cpu,
            "stepping": "1",
            "microcode": "0x1000065",
        },
        "kernels": {
            "onednn": {"version": "v3.12.0", "isa": "Intel AVX2"},
            "mkl": {"version": "2024.2", "isa": "Intel(R) Architecture processors"},
            "numpy_blas": {"name": "scipy-openblas", "version": "0.3.31", "core": "Zen"},
        },
        "packages": {"sha256": "ab" * 32, "count": 3, "list": ["a==1", "b==2", "c==3"]},
    }


def stamp(path: Path, machine: dict | None) -> None:
    """Write ``machine`` into the summary of evaluation file ``path`` (None: remove it)."""
    summary_path = Path(str(path) + ".summary.json")
    summary = json.loads(summary_path.read_text())
    summary.pop("machine", None)
    if machine is not None:
        summary["machine"] = machine
    summary_path.write_text(json.dumps(summary))


def test_setup_page_lists_each_machine_with_its_evaluations(tmp_path):
    paths = [
        write_eval(tmp_path, "testbed", "base", seed, "test_id", [1, 0, 1]) for seed in range(4)
    ]
    epyc, xeon = (
        fingerprint("AMD EPYC", "AVX512"),
        fingerprint("Intel Xeon", "AVX2", ATEN_CPU_CAPABILITY="avx2"),
    )
    for path, machine in zip(paths, [epyc, epyc, xeon, None]):
        stamp(path, machine)
    summaries = [Path(str(p) + ".summary.json") for p in paths]
    rows = _machine_rows(summaries).set_index("CPU")
    assert list(rows.index) == [
        "AMD EPYC (x86_64, 2 cores)",
        "Intel Xeon (x86_64, 2 cores)",
        "not recorded",
    ]
    assert list(rows["evaluations"]) == [2, 1, 1]
    assert list(rows["torch ISA"][:2]) == ["AVX512", "AVX2"]
    assert list(rows["env overrides"][:2]) == ["none", "ATEN_CPU_CAPABILITY=avx2"]
    assert rows["versions"].iloc[0] == "python 3.11.7, torch 2.13.0"  # absent packages left out
    assert rows["CPU id"].iloc[0] == (
        "AuthenticAMD family 25 model 17 stepping 1, microcode 0x1000065"
    )
    assert rows["kernels"].iloc[0] == (
        "oneDNN v3.12.0: Intel AVX2; MKL 2024.2: Intel(R) Architecture processors; "
        "numpy scipy-openblas 0.3.31: Zen"
    )
    assert rows["packages"].iloc[0] == f"3 installed, sha256 {'ab' * 8}"
    page = setup_html(
        CONFIG,
        {"testbed": {"source": "warm_start"}},
        {"testbed": tmp_path / "model"},
        {},
        summaries,
    )
    assert "<h3>Machines</h3>" in page and "ATEN_CPU_CAPABILITY=avx2" in page


def test_a_fingerprint_from_before_the_cpu_id_kernels_and_packages_still_shows(tmp_path):
    path = write_eval(tmp_path, "testbed", "base", 0, "test_id", [1, 0, 1])
    machine = fingerprint("AMD EPYC", "AVX512")
    stamp(path, {k: v for k, v in machine.items() if k not in ("cpu_id", "kernels", "packages")})
    row = _machine_rows([Path(str(path) + ".summary.json")]).iloc[0]
    assert (row["CPU id"], row["kernels"], row["packages"]) == ("not recorded",) * 3
    assert row["torch ISA"] == "AVX512"


def test_tables_are_byte_identical_whatever_machine_the_summaries_name(tmp_path):
    files = [
        EvalFile.from_path(write_eval(tmp_path, "testbed", model, seed, bench, correct))
        for model, correct in (("base", [1, 0, 1, 0]), ("gc2po", [1, 1, 1, 0]))
        for seed in range(2)
        for bench in ("test_id", "test_longer")
    ]

    def tables(machine: dict) -> dict[str, bytes]:
        for file in files:
            stamp(file.path, machine)
        out = {
            ext: tmp_path / f"table1_{machine['cpu']}.{ext}" for ext in ("md", "tex", "csv", "html")
        }
        write_table(
            files, ["gc2po"], ["test_id", "test_longer"], "Pass@1 (%)", label="table1", **out
        )
        return {ext: path.read_bytes() for ext, path in out.items()}

    epyc = tables(fingerprint("AMD EPYC", "AVX512"))
    assert epyc == tables(fingerprint("Intel Xeon", "AVX2", ATEN_CPU_CAPABILITY="avx2"))
    assert b"| + GC2PO (paper) |" in epyc["md"]
