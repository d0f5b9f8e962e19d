"""The tdsl language's functions as typed Python that also runs eagerly on NumPy arrays.

Every function of the language (``tdsl.frontend.ir_gen.FUNCTIONS``) is here,
with the language's parameters and defaults, so that a ``@tdsl.function``
body is a Python function a type checker reads::

    import tdsl
    from tdsl.lang import f32, relu, softmax

    @tdsl.function
    def layer(x: f32[64, 32], w: f32[32, 16], b):
        return softmax(relu(x @ w + b))

Called eagerly, each function computes on NumPy arrays with tdsl's own
semantics: it builds its one op through tdsl's frontend (which types and
promotes its operands as NumPy 2 does, a Python number as a weak scalar) and
runs it in tdsl's interpreter, the reference every compiled kernel is
checked against.  So the undecorated body (``layer.python(x, w, b)``) is a
reference a user can step through with a debugger; the operators
(``+ - * / % ** @ & | ~`` and the comparisons) are NumPy's own, which tdsl
follows.  A function tdsl refuses (``sum`` of booleans) raises the
:class:`~tdsl.errors.TdslError` the compiler would.  The first call loads
xDSL; importing this module does not.

``f16``, ``f32``, ``f64``, ``i32``, ``i64`` and ``bool_`` type parameters: see :mod:`tdsl.lang_types`; the
functions are generated into :mod:`tdsl.lang.elementwise` and :mod:`tdsl.lang.functions`
from the function table.
"""

from __future__ import annotations

from tdsl.lang import elementwise, functions
from tdsl.lang.elementwise import *  # noqa: F403
from tdsl.lang.functions import *  # noqa: F403
from tdsl.lang_types import (
    DTYPE_CLASSES,
    Array,
    Operand,
    TensorSpec,
    bool_,
    f16,
    f32,
    f64,
    i32,
    i64,
    u8,
    u64,
)

__all__ = [
    "DTYPE_CLASSES",
    "Array",
    "Operand",
    "TensorSpec",
    "bool_",
    "f16",
    "f32",
    "f64",
    "i32",
    "i64",
    "u8",
    "u64",
]
__all__ += elementwise.__all__
__all__ += functions.__all__
