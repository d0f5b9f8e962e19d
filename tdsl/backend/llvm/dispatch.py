"""A pattern applier that tries on each op only the patterns written for its type.

xDSL's :class:`~xdsl.pattern_rewriter.GreedyRewritePatternApplier` calls every pattern
on every op, and a pattern decorated with
:func:`~xdsl.pattern_rewriter.op_type_rewrite_pattern` returns at once when the op is
not of its annotated type.  The LLVM conversion walks about a hundred patterns over
every op of a kernel, so most of its time went into those ``isinstance`` calls (a
third of ``tdsl-convert-to-llvm``, measured on the JIT's tests).
:class:`TypeDispatchApplier` reads each decorated pattern's op types once, keeps per
op class the patterns that can match it, in the order given, and calls the decorated
function directly.  A pattern it cannot read (not decorated, or a generic
``match_and_rewrite``) is tried on every op, as before.  What it rewrites is what the
greedy applier rewrites: the same patterns in the same order, first action wins.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

_Call = Callable[[Operation, PatternRewriter], object]


def _typed(pattern: RewritePattern) -> tuple[Any, Callable[..., object]] | None:
    """The op type a pattern's ``op_type_rewrite_pattern`` checks and the function it
    wraps, or None when the pattern's method is not such a wrapper."""
    method = type(pattern).match_and_rewrite
    if getattr(method, "__name__", None) != "impl" or method.__closure__ is None:
        return None
    found = inspect.getclosurevars(method).nonlocals
    expected, func = found.get("expected_type"), found.get("func")
    if expected is None or not callable(func):
        return None
    return expected, func


class TypeDispatchApplier(RewritePattern):
    """Apply ``patterns`` in order until one acts, trying only those whose op type
    matches (no dead-code erasure, no folding: as ``GreedyRewritePatternApplier`` with
    ``dce_enabled=False``)."""

    def __init__(self, patterns: Sequence[RewritePattern]) -> None:
        self._entries = [(p, _typed(p)) for p in patterns]
        self._by_class: dict[type[Operation], list[_Call]] = {}

    def _calls(self, cls: type[Operation]) -> list[_Call]:
        calls: list[_Call] = []
        for pattern, typed in self._entries:
            if typed is None:
                calls.append(pattern.match_and_rewrite)
            elif issubclass(cls, typed[0]):
                func = typed[1]
                calls.append(lambda op, rw, p=pattern, f=func: f(p, op, rw))
        self._by_class[cls] = calls
        return calls

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        calls = self._by_class.get(type(op))
        if calls is None:
            calls = self._calls(type(op))
        for call in calls:
            call(op, rewriter)
            if rewriter.has_done_action:
                return


__all__ = ["TypeDispatchApplier"]
