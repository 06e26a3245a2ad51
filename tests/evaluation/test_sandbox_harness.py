"""The sandbox's in-process pieces: the literal-only decoder that answers cross, the frames they
travel in, and how failures are described (no sandbox needed)."""

from __future__ import annotations

import math
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gc2po.evaluation.sandbox.wire import (
    MAX_FRAME_BYTES,
    CandidateError,
    decode_literal,
    describe,
    receive_frame,
    send_frame,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.complex_numbers(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.binary()
)
hashable = st.none() | st.booleans() | st.integers() | st.text() | st.binary()
literals = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(hashable, inner, max_size=4)
        | st.sets(hashable, max_size=4)
        | st.frozensets(hashable, max_size=4)
    ),
    max_leaves=20,
)


def same(a, b) -> bool:
    """Equal with the exact type, nan equal to nan and -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, complex):
        # repr does not keep the signs of zero parts:
        # eval(repr(complex(-0.0, -0.0))) is 0j in Python too
        return all(
            (math.isnan(x) and math.isnan(y)) or x == y
            for x, y in ((a.real, b.real), (a.imag, b.imag))
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300, deadline=None)
@given(literals)
def test_every_plain_literal_round_trips_through_repr(value):
    assert same(decode_literal(repr(value)), value)


@pytest.mark.parametrize(
    "text",
    [
        "<AlwaysEqual object at 0x7f>",  # what an object with a custom __eq__ looks like
        "__import__('os').system('true')",
        "os.system",
        "(lambda: 1)()",
        "f'{1}'",
        "1 + 1",
        "[x for x in ()]",
        "{**{}}",
        "True == True",
        "not 0",
        "type('A', (), {})()",
        "...",
        "set([1], 2)",
        "dict(a=1)",
        "[" * 5000 + "]" * 5000,
        "{[1]}",
        "{[]: 1}",
        "",
        "1; 2",
    ],
)
def test_anything_but_a_plain_literal_is_refused(text):
    with pytest.raises(ValueError):
        decode_literal(text)


def test_decoded_values_are_builtins_not_look_alikes():
    value = decode_literal(
        "(['a', 1.5, -0.0, inf, -inf, nan, (1+infj)], {'k': {1, 2}}, set(), frozenset({3}), b'x')"
    )
    assert type(value) is tuple and type(value[0]) is list and type(value[1]["k"]) is set
    assert value[0][3] == math.inf and value[0][4] == -math.inf and math.isnan(value[0][5])
    assert math.copysign(1, value[0][2]) == -1 and value[2] == set() and value[3] == frozenset({3})


def test_frames_carry_their_payload_and_refuse_oversized_or_cut_ones():
    read, write = os.pipe()
    try:
        send_frame(write, b"R", b"[1, 2]")
        send_frame(write, b"E", b"")
        assert receive_frame(read) == (b"R", b"[1, 2]")
        assert receive_frame(read) == (b"E", b"")
        os.write(write, struct.pack(">I", MAX_FRAME_BYTES + 1))
        with pytest.raises(CandidateError, match="limit"):
            receive_frame(read)
        os.write(write, struct.pack(">I", 10) + b"R12")  # cut short: the writer is gone
        os.close(write)
        write = None
        assert receive_frame(read) is None
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def test_failures_are_described_with_the_sample_line():
    namespace = {}
    exec(compile("def check(c):\n    assert c == 1\n", "<test>", "exec"), namespace)
    with pytest.raises(AssertionError) as caught:
        namespace["check"](2)
    assert describe(caught.value) == "AssertionError (<test> line 2)"
    assert describe(ValueError("bad")) == "ValueError: bad"
