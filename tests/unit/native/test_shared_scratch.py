"""Groups' scratch arguments share the runtime's arena (:mod:`tdsl.runtime.workspace`),
so the function calling the groups must not tell LLVM they are distinct: marked
``noalias``, LLVM inlined two groups and moved one's store to its scratch past the
other's (found by ``test_integer_differential``: ``(A ** 0) @ max(B, axis=0)`` with
int64 ``A`` gave ``[1, 0, 3]`` for ``[2, 2, 3]``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tdsl.jit import JITTensorKernel
from tdsl.runtime.compile import native_unavailable_reason

pytestmark = pytest.mark.skipif(
    native_unavailable_reason() is not None, reason=str(native_unavailable_reason())
)


def _kernel() -> object:
    return JITTensorKernel(threads=1, target="native").compile(
        "(A ** 0) @ max(B, axis=0)", {"A": (2, 1), "B": (3, 1, 3)}, {"A": "int64", "B": "int32"}
    )


def test_two_groups_sharing_the_scratch_arena_compute_numpys_product() -> None:
    a = np.array([[3], [-2]], np.int64)
    b = np.array([[[1, 1, 3]], [[2, -4, 0]], [[1, 2, -5]]], np.int32)
    kernel = _kernel()
    # the column max's scratch (int32) and the ones' scratch (int64) share the arena
    function = kernel.function  # type: ignore[attr-defined]
    slots = dict(function._slots)
    scratch = [i for i, arg in enumerate(function.args) if arg.role == "scratch"]
    assert len(scratch) == 2 and slots[scratch[0]] == slots[scratch[1]]
    np.testing.assert_array_equal(kernel(A=a, B=b), np.ones_like(a) @ np.max(b, axis=0))  # type: ignore[operator]


def test_the_calling_function_does_not_mark_shared_scratch_noalias() -> None:
    ir = _kernel().llvm_ir  # type: ignore[attr-defined]
    main = re.search(r'define void @"main"\((.*)\)', ir)
    assert main is not None
    params = main.group(1).split(", ")
    # in, in, out, tmp, scratch, scratch: the two scratch pointers are not noalias
    assert [p.startswith("ptr noalias") for p in params] == [True] * 4 + [False] * 2
    # each group's own arguments stay noalias: their scratch is disjoint within a group
    for group in re.findall(r'define void @"main_g\d"\((.*)\)', ir):
        assert all(p.startswith(("i64", "ptr noalias")) for p in group.split(", "))
