"""Properties over random well-typed expressions and random shapes.

The expressions come from ``tests/unit/random_expressions.py``, which renders
its own expression trees as text and evaluates the same trees with NumPy: the
reference never goes through the code under test.

* lowering verifies, and the result type is NumPy's result shape and dtype;
* the interpreter on the lowered IR computes NumPy's values;
* random edits of the text (deleted, duplicated, swapped or inserted
  characters) give a module or a TdslError, never any other exception.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_expressions import Case, cases, random_inputs, reference
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from tdsl.dialects.tensordsl import NUMPY_DTYPES
from tdsl.errors import TdslError
from tdsl.frontend import to_tensordsl


def main_of(module: ModuleOp) -> func.FuncOp:
    (main,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return main


# --------------------------------------------------------------------------- properties

PROPERTY_SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(cases())
def test_lowering_verifies_with_numpy_result_type(case: Case) -> None:
    module = to_tensordsl(case.text, shapes=case.shapes, dtypes=case.dtypes)
    module.verify()
    main = main_of(module)
    assert [arg.name_hint for arg in main.args] == case.order
    (result,) = main.function_type.outputs.data
    assert isinstance(result, TensorType)
    expected = reference(case, random_inputs(case, 0))
    assert tuple(result.get_shape()) == expected.shape, case.text
    assert NUMPY_DTYPES[type(result.get_element_type())] == expected.dtype, case.text


@PROPERTY_SETTINGS
@given(cases(dtypes=("f32", "f64")), st.integers(0, 2**32 - 1))
def test_interpreter_agrees_with_numpy(case: Case, seed: int) -> None:
    run = pytest.importorskip("tdsl.interpreters.run")
    module = to_tensordsl(case.text, shapes=case.shapes, dtypes=case.dtypes)
    env = random_inputs(case, seed)
    expected = reference(case, env)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (got,) = run.run_function(module, "main", *(env[name] for name in case.order))
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    finite = expected[np.isfinite(expected)]
    scale = float(np.max(np.abs(finite))) if finite.size else 1.0
    # f64 results computed from f32 inputs carry f32 rounding (an op may round
    # differently from NumPy's formula by an ulp): tight only for f64 throughout
    tight = all(case.dtypes[name] == "f64" for name in case.order)
    rtol = 1e-9 if tight else 1e-4
    atol = (1e-12 if tight else 1e-5) * max(1.0, scale)
    np.testing.assert_allclose(
        got, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=case.text
    )


MUTATION_CHARS = "()[],=+-*/@.#:_ e019\n\t$xAq"


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` after a few random deletions, duplications, swaps and insertions."""
    chars = list(text)
    for _ in range(draw(st.integers(1, 4))):
        if not chars:
            chars.append(draw(st.sampled_from(MUTATION_CHARS)))
            continue
        i = draw(st.integers(0, len(chars) - 1))
        edit = draw(st.sampled_from(["delete", "duplicate", "swap", "insert"]))
        if edit == "delete":
            del chars[i]
        elif edit == "duplicate":
            chars.insert(i, chars[i])
        elif edit == "swap" and i + 1 < len(chars):
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        else:
            chars.insert(i, draw(st.sampled_from(MUTATION_CHARS)))
    return "".join(chars)


def as_program(case: Case) -> str:
    params = ", ".join(
        f"{name}: {case.dtypes[name]}[{', '.join(map(str, case.shapes[name]))}]"
        for name in case.order
    )
    first = case.order[0] if case.order else "t"
    return f"# a kernel\ndef k({params}):\n    t = {case.text}\n    return t, {first}\n"


def only_tdsl_errors(text: str, case: Case) -> None:
    try:
        to_tensordsl(text, shapes=case.shapes, dtypes=case.dtypes)
    except TdslError as err:
        assert err.location is None or err.location.line >= 1
        str(err)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_expressions_give_only_tdsl_errors(data: st.DataObject) -> None:
    case = data.draw(cases())
    only_tdsl_errors(data.draw(mutated(case.text)), case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_programs_give_only_tdsl_errors(data: st.DataObject) -> None:
    case = data.draw(cases())
    program = as_program(case)
    to_tensordsl(program)  # the unmutated program is valid
    only_tdsl_errors(data.draw(mutated(program)), case)
