"""What crosses between the sandbox's processes (``gc2po.evaluation.sandbox.harness``): length-
prefixed frames over pipes, tagged returned / raised / ready, and plain literals as ``repr``
text decoded by ``decode_literal``, which builds nothing but plain values (an object whose
``__eq__`` always says True cannot cross); ``describe`` turns an exception into the reason a
sample failed. Standard library only: the grader sends this file's source into the sandbox
ahead of the harness's, and both run in one namespace there.
"""

from __future__ import annotations

import _ast as ast
import math
import os
import select
import struct

MAX_FRAME_BYTES = 64 << 20  # the largest argument or answer that crosses, as repr text
MAX_REASON_CHARS = 2000
# an answer frame: R = returned (repr of the value), E = raised (description), K = function ready
RETURNED, RAISED, READY = b"R", b"E", b"K"
SAMPLE_FILES = (
    "<prompt>",
    "<test>",
    "<completion>",
    "<program>",
)  # the sample's code, for ``describe``
_NAMED_FLOATS = {
    "inf": math.inf,
    "nan": math.nan,
    "infj": complex(0, math.inf),
    "nanj": complex(0, math.nan),
}


class CandidateError(Exception):
    """The candidate's function raised, its answer was not a literal, or its process failed."""


def decode_literal(text: str):
    """The value of ``repr`` text of a plain literal (None, bool, int, float incl. inf/nan, complex,
    str, bytes, and tuples, lists, dicts, sets of those). Anything else raises ValueError."""
    try:
        return _literal(compile(text, "<answer>", "eval", ast.PyCF_ONLY_AST).body)
    except (
        SyntaxError,
        MemoryError,
        RecursionError,
        TypeError,
    ) as error:  # TypeError: unhashable set item
        raise ValueError(f"not a literal: {type(error).__name__}") from None


def _literal(node):
    if isinstance(node, ast.Constant) and type(node.value) in (
        int,
        float,
        complex,
        str,
        bytes,
        bool,
        type(None),
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMED_FLOATS:
        return _NAMED_FLOATS[node.id]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_literal(item) for item in node.elts]
        return {ast.Tuple: tuple, ast.List: list, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(key): _literal(value) for key, value in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand)
        if type(operand) in (int, float, complex):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):  # complex: (1+2j)
        left, right = _literal(node.left), _literal(node.right)
        if type(left) in (int, float) and type(right) is complex:
            return left + right if isinstance(node.op, ast.Add) else left - right
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("set", "frozenset")
        and not node.keywords
        and len(node.args) <= 1
    ):
        kind = set if node.func.id == "set" else frozenset
        return kind(_literal(node.args[0])) if node.args else kind()
    raise ValueError(f"not a literal: {type(node).__name__}")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, size: int, ended: int | None = None) -> bytes | None:
    """``size`` bytes, or None at end of file, or once ``ended`` (a pidfd of the writer) is
    readable with nothing left to read: a process the writer left behind may hold the pipe."""
    chunks, remaining = [], size
    while remaining:
        if ended is not None and select.select([fd, ended], [], [])[0] == [ended]:
            return None
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def send_frame(fd: int, tag: bytes, payload: bytes) -> None:
    write_all(fd, struct.pack(">I", len(payload) + 1) + tag + payload)


def receive_frame(fd: int, ended: int | None = None) -> tuple[bytes, bytes] | None:
    """(tag, payload), or None at end of file (or once ``ended``, see ``read_exact``); a frame
    over MAX_FRAME_BYTES raises CandidateError."""
    header = read_exact(fd, 4, ended)
    if header is None:
        return None
    (size,) = struct.unpack(">I", header)
    if not 1 <= size <= MAX_FRAME_BYTES:
        raise CandidateError(f"a frame of {size} bytes (the limit is {MAX_FRAME_BYTES})")
    body = read_exact(fd, size, ended)
    return None if body is None else (body[:1], body[1:])


def describe(error: BaseException) -> str:
    """``Type: message (<file> line N)``, N in the innermost frame of the sample's own code."""
    where = ""
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename in SAMPLE_FILES:
            where = f" ({traceback.tb_frame.f_code.co_filename} line {traceback.tb_lineno})"
        traceback = traceback.tb_next
    message = str(error)
    return f"{type(error).__name__}{': ' + message if message else ''}{where}"[:MAX_REASON_CHARS]
