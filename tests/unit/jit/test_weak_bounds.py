"""The ranges a weak integer's arithmetic maps back to it (``tdsl/jit/weak_bounds.py``),
against a brute-force search: each is exactly the ints whose result lies in the range
asked for."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tdsl.jit.weak_bounds import _inverse  # pyright: ignore[reportPrivateUsage]

RESULTS: dict[str, Callable[[int, int, int], int]] = {
    "neg": lambda s, c, i: -s,
    "invert": lambda s, c, i: ~s,
    "add": lambda s, c, i: s + c,
    "sub": lambda s, c, i: s - c if i == 0 else c - s,
    "mul": lambda s, c, i: s * c,
    "floordiv": lambda s, c, i: s // c,
    "square": lambda s, c, i: s * s,
}
VALUES = range(-90, 91)


@pytest.mark.parametrize("kind", RESULTS)
def test_each_inverse_is_exactly_the_ints_whose_result_is_in_range(kind: str) -> None:
    result = RESULTS[kind]
    constants = [0] if kind in ("neg", "invert", "square") else range(-5, 6)
    for c in constants:
        if kind == "floordiv" and c == 0:
            continue  # (no division by 0)
        for index in (0, 1) if kind == "sub" else (0,):
            for low in range(-12, 13):
                for high in range(low, 13):
                    found = _inverse(kind, c, index, low, high)
                    if kind == "mul" and c == 0 and low <= 0 <= high:
                        assert found is None  # (s * 0 is 0: any s)
                        continue
                    assert found is not None
                    got = {s for s in VALUES if found[0] <= s <= found[1]}
                    # (s * s: bounded above only, all a range with low <= 0 needs)
                    floor = low if kind != "square" else min(low, 0)
                    want = {s for s in VALUES if floor <= result(s, c, index) <= high}
                    assert got == want, (kind, c, index, low, high, found)


def test_a_long_chain_of_weak_arithmetic_is_bounded_without_recursion() -> None:
    """``s + 1 + 1 + ...``: each step's range maps back to ``s`` one at a time (a
    recursion per step reached Python's limit at 600 steps)."""
    import tdsl

    steps = 3000
    kernel = tdsl.compile(
        "x * (s" + " + 1" * steps + ")",
        shapes={"x": (2,)},
        dtypes={"x": "f32", "s": int},
        target="numpy",
    )
    assert kernel.args[1].bounds == (-(2**63), 2**63 - 1 - steps)


def test_a_result_no_argument_gives_in_range_refuses_every_call() -> None:
    """``u8 + (s * 0 + 300)``: 300 meets uint8 whatever ``s`` is, so NumPy 2 raises
    OverflowError at every call; a kernel refuses every ``s`` (``s * 0`` bounded nothing,
    and the kernel computed 300 wrapped to 44; found by fuzzing weak-int bounds)."""
    import numpy as np

    import tdsl
    from tdsl.errors import TdslCallError

    kernel = tdsl.compile(
        "x + (s * 0 + 300)", shapes={"x": (2,)}, dtypes={"x": "u8", "s": int}, target="numpy"
    )
    x = np.zeros(2, np.uint8)
    for s in (0, 3, -(2**63)):
        with pytest.raises(OverflowError):
            x + (s * 0 + 300)
        with pytest.raises(TdslCallError, match="expected no Python int"):
            kernel(x, s)
    fits = tdsl.compile("x + (s * 0 + 200)", shapes={"x": (2,)}, dtypes={"x": "u8", "s": int})
    np.testing.assert_array_equal(fits(x, 2**62), x + 200)
