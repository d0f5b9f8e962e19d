"""``canonicalize`` folds a cast of a one-element constant: the folded constant is
what the cast computes at run time (the interpreter, from the op's scalar body) and
what NumPy's ``astype`` gives, bit for bit, special values included."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp, f16, f32, f64
from xdsl.dialects.func import Func
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.transforms.canonicalize import CanonicalizePass

from tdsl.dialects.structured import INT_TYPES
from tdsl.dialects.tensordsl import ConstantOp, TensorDSL, dense_from_numpy, dense_to_text

run_function = pytest.importorskip("tdsl.interpreters.run").run_function

SOURCES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i64": np.int64,
}
TARGETS = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "i64": np.int64,
}
VALUES = [0.0, -0.0, 1e-5, -2.5, 7.9, 65519.0, 70000.0, 3e38, 1e-40, np.inf, -np.inf, np.nan]


ELEMENTS: dict[str, Attribute] = {"f16": f16, "f32": f32, "f64": f64, **INT_TYPES}


def module_of(value: np.ndarray[Any, Any], source: str, target: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, TensorDSL):
        ctx.load_dialect(dialect)
    constant = dense_to_text(dense_from_numpy(value, ELEMENTS[source]))
    text = (
        f"func.func @main() -> tensor<{target}> {{\n"
        f"  %c = tensordsl.constant {constant}\n"
        f"  %0 = tensordsl.cast %c : tensor<{source}> -> tensor<{target}>\n"
        f"  func.return %0 : tensor<{target}>\n}}"
    )
    return Parser(ctx, text).parse_module()


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("target", list(TARGETS))
def test_folded_casts_are_the_casts(source: str, target: str) -> None:
    if source == target:
        pytest.skip("a cast to its own type is its operand")
    for v in VALUES:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if source == "i64" and not np.isfinite(v):
                continue
            value = np.asarray(v).astype(SOURCES[source])
            want = value.astype(TARGETS[target])
        module = module_of(value, source, target)
        with np.errstate(all="ignore"):
            (at_run_time,) = run_function(module.clone(), "main")
        CanonicalizePass().apply(Context(allow_unregistered=True), module)
        constants = [op for op in module.walk() if isinstance(op, ConstantOp)]
        assert len(constants) == 1 and "tensordsl.cast" not in str(module), str(module)
        folded = constants[0].as_numpy()
        assert folded.dtype == want.dtype
        assert folded.tobytes() == want.tobytes(), (v, source, target, folded, want)
        assert np.asarray(at_run_time).tobytes() == want.tobytes(), (v, at_run_time, want)
