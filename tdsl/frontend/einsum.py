"""``einsum(subscripts, a, b)``: NumPy's ``np.einsum`` of one or two operands, written as
the ops it stands for.

Each operand's axes are named by one letter of ``subscripts`` (``"ij,jk->ik"``;
without ``->`` the result's letters are those named once, in alphabetical order,
as NumPy's implicit mode).  The frontend then writes:

* both operands in the type of the result first (``np.result_type``), as NumPy's
  einsum computes;
* a ``sum`` over each axis named by one operand only and not by the result (a
  float16 operand's in float32, rounded once);
* for two operands, a ``matmul`` when one letter is contracted (named by both,
  not by the result) and each operand has at most one letter of its own in the
  result: the letters named by both and the result are its batch axes
  (``transpose`` and ``expand_dims`` arrange them, ``squeeze`` drops an axis it
  added); otherwise a broadcast ``mul`` of both operands, arranged as the
  result's letters then the contracted ones, and a ``sum`` over the contracted
  axes (an outer product has none);
* a ``transpose`` into the result's order;
* float16 products that are summed are computed in float32 and rounded once, as
  NumPy's einsum computes them (where it is a ``matmul``, as ``np.matmul`` computes
  them: NumPy's einsum may round a batched float16 product's partial sums to float16,
  a few ulps from the once-rounded result);
* ``+ 0.0`` after a float ``mul`` or ``sum``: NumPy's einsum adds each product into
  a zeroed result, so a ``-0.0`` product or sum comes out ``+0.0``
  (``np.einsum("i,j->ij", [-1.0], [0.0])`` is ``[[0.0]]``); a ``matmul``
  accumulates from zero itself, and a lone transpose is NumPy's view.

An axis of length 1 where another operand's is longer broadcasts to it first, as in
NumPy (``broadcast_to``'s ops).  So fusion, tiling and every target see ordinary ops.
Not supported, each a located
error: ``...``, a letter named twice by one operand (a diagonal, ``"ii"``), more than
two operands, and booleans.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import AnyFloat, Float16Type, f32
from xdsl.ir import Operation

from tdsl.dialects import tensordsl as td
from tdsl.dialects.structured import BOOL
from tdsl.errors import TdslTypeError, internal_error
from tdsl.frontend.ast import Call, Span
from tdsl.frontend.creation import broadcast_value
from tdsl.frontend.values import LiteralValue

if TYPE_CHECKING:
    from tdsl.frontend.lower_expr import FunctionLowering, TensorValue, Value


def lower_einsum(
    lowering: FunctionLowering, node: Call, args: Sequence[Value], spans: Sequence[Span]
) -> TensorValue:
    """The ops of ``node``, an ``einsum`` call of ``args`` (see the module docstring)."""
    keyword = lowering.keyword(node, "subscripts")
    if keyword is None or not isinstance(keyword.value, str):  # params() checked it
        raise internal_error(
            "frontend: `einsum` lowered without string subscripts",
            location=lowering.where(node.span),
        )
    where = lowering.where(keyword.span)

    def fail(message: str) -> TdslTypeError:
        return TdslTypeError(f"einsum subscripts {keyword.value!r}: {message}", where)

    text = keyword.value.replace(" ", "")
    if "." in text:
        raise fail("`...` is not supported yet: name each axis with a letter")
    if text.count("->") > 1:
        raise fail("`->` may appear once, before the result's letters")
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(args):
        raise fail(f"they name {len(terms)} operands, and {len(args)} are given")
    operands: list[TensorValue] = []
    extents: dict[str, int] = {}
    for k, (term, arg, span) in enumerate(zip(terms, args, spans, strict=True)):
        t = lowering.tensor(arg, span)
        if t.element == BOOL:
            raise TdslTypeError(
                "einsum of booleans is not supported: convert them first, e.g. where(b, 1.0, 0.0)",
                lowering.where(span),
            )
        if not all(c.isascii() and c.isalpha() for c in term):
            raise fail(f"operand {k} is named `{term}`: name each axis with one letter")
        if len(term) != len(t.shape):
            raise fail(
                f"`{term}` names {len(term)} axes, and operand {k} is "
                f"{lowering.describe(t)} (rank {len(t.shape)})"
            )
        if len(set(term)) != len(term):
            raise fail(f"`{term}` names an axis twice (a diagonal), which is not supported yet")
        for c, n in zip(term, t.shape, strict=True):
            known = extents.setdefault(c, n)
            if known != n and 1 not in (known, n):
                raise fail(
                    f"`{c}` is {known} long in one operand and {n} in another (an axis of "
                    "length 1 broadcasts, as in NumPy)"
                )
            extents[c] = max(known, n)
        operands.append(t)
    # an axis of length 1 where another operand's is longer broadcasts, as NumPy's einsum
    operands = [
        broadcast_value(lowering, t, tuple(extents[c] for c in term), span)
        for t, term, span in zip(operands, terms, spans, strict=True)
    ]
    if arrow:
        if not all(c.isascii() and c.isalpha() for c in out) or len(set(out)) != len(out):
            raise fail(f"the result `{out}` must name each of its axes once, with a letter")
        if any(c not in extents for c in out):
            missing = next(c for c in out if c not in extents)
            raise fail(f"the result names `{missing}`, which no operand names")
    else:
        out = "".join(sorted(c for c in extents if lhs.count(c) == 1))
    return _Writer(lowering, node.span).write(operands, terms, out, spans)


class _Writer:
    """Writes the ops of one ``einsum``, each located at the call."""

    def __init__(self, lowering: FunctionLowering, span: Span) -> None:
        self.lowering = lowering
        self.span = span

    def emit(self, op: Operation) -> TensorValue:
        return self.lowering.emit(op, self.span)

    def sum_out(self, t: TensorValue, term: str, keep: str) -> tuple[TensorValue, str]:
        """``t`` summed over its axes whose letters ``keep`` lacks (the last first), a
        float16 ``t`` in float32 and rounded once (as NumPy's einsum: ``"ij->"`` of
        ``[[1, 2**-12], [2**-12, 2**-12]]`` is 1.001, not the 1.0 of rounding each
        axis's sums)."""
        axes = [axis for axis, c in enumerate(term) if c not in keep]
        if not axes:
            return t, term
        element = t.element
        if element == Float16Type():
            t = self.lowering.to_element(t, f32, self.span)
        for axis in reversed(axes):
            t = self.emit(td.SumOp(t.value, axis=axis, keepdims=False))
        if element == Float16Type():
            t = self.lowering.to_element(t, element, self.span)
        return t, "".join(c for c in term if c in keep)

    def arrange(self, t: TensorValue, term: str, order: str) -> TensorValue:
        """``t`` with its axes in ``order`` (letters ``term`` lacks: axes of extent 1)."""
        perm = tuple(term.index(c) for c in order if c in term)
        if perm != tuple(range(len(perm))):
            t = self.emit(td.TransposeOp(t.value, perm))
        added = tuple(k for k, c in enumerate(order) if c not in term)
        if added:
            t = self.emit(td.ExpandDimsOp(t.value, added))
        return t

    def write(
        self, operands: list[TensorValue], terms: list[str], out: str, spans: Sequence[Span]
    ) -> TensorValue:
        if len(operands) == 1:
            t, term = self.sum_out(operands[0], terms[0], out)
            if term != terms[0]:
                t = self.zeroed(t)
            return self.arrange(t, term, out)
        (a, b), (la, lb) = operands, terms
        # (in the result's type first, as NumPy's einsum: an int32 operand's own axis
        # summed beside a float64 one wrapped where NumPy's float64 sum does not)
        a, b = self.lowering.unify([(a, spans[0]), (b, spans[1])], None, "`einsum`", self.span)
        a, la = self.sum_out(a, la, out + lb)
        b, lb = self.sum_out(b, lb, out + la)
        batch = "".join(c for c in out if c in la and c in lb)
        afree = "".join(c for c in out if c in la and c not in lb)
        bfree = "".join(c for c in out if c in lb and c not in la)
        contracted = "".join(c for c in la if c in lb and c not in out)
        if len(contracted) == 1 and len(afree) <= 1 and len(bfree) <= 1:
            lhs = self.arrange(a, la, batch + (afree or "_") + contracted)
            rhs = self.arrange(b, lb, batch + contracted + (bfree or "_"))
            product = self.lowering.matmul("`einsum`", [lhs, rhs], (spans[0], spans[1]), self.span)
            units = tuple(
                k for k, c in enumerate((afree or "_") + (bfree or "_"), len(batch)) if c == "_"
            )
            if units:
                product = self.emit(td.SqueezeOp(product.value, units))
            return self.arrange(product, batch + afree + bfree, out)
        full = out + contracted
        lhs, rhs = self.arrange(a, la, full), self.arrange(b, lb, full)
        # float16 products summed: in float32, rounded once, as NumPy's einsum (a float16
        # product beyond 65504 was inf, and the sum nan)
        wide = bool(contracted) and lhs.element == rhs.element == Float16Type()
        if wide:
            lhs = self.lowering.to_element(lhs, f32, self.span)
            rhs = self.lowering.to_element(rhs, f32, self.span)
        product = self.lowering.binary(
            td.MulOp, "`einsum`", [lhs, rhs], (spans[0], spans[1]), self.span
        )
        result = self.zeroed(self.sum_out(product, full, out)[0])
        return self.lowering.to_element(result, Float16Type(), self.span) if wide else result

    def zeroed(self, t: TensorValue) -> TensorValue:
        """``t + 0.0`` for floats (``-0.0`` becomes ``+0.0``, as einsum's zeroed result
        makes it; every other value is unchanged); ``t`` otherwise."""
        if not isinstance(t.element, AnyFloat):
            return t
        zero = LiteralValue(0.0, self.span)  # weak: t's dtype
        return self.lowering.tensor(
            self.lowering.binary(
                td.AddOp, "`einsum`", [t, zero], (self.span, self.span), self.span
            ),
            self.span,
        )


__all__ = ["lower_einsum"]
