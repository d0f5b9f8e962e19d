"""Scans along an axis, ``cumsum`` and ``cumprod``: each result element combines the
elements before it, and a running value is carried from tile to tile.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith
from xdsl.irdl import irdl_op_definition

from tdsl.dialects.structured import ScalarOpBuilder, ScanOp


@irdl_op_definition
class CumsumOp(ScanOp):
    """Cumulative sum along ``axis``, as ``np.cumsum``: ``axis`` absent scans a 0-d or
    1-d tensor whole (a larger one needs an axis).  Each partial sum is rounded to the
    result's dtype (float16 adds in float16, as NumPy's); ``inf`` and ``nan`` propagate
    and overflow gives ``inf``, as in NumPy.

    ```mlir
    %1 = tensordsl.cumsum %0 axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    ```
    """

    name = "tensordsl.cumsum"
    FUNCTION: ClassVar[str | None] = "cumsum"
    NUMPY_UFUNC: ClassVar[str] = "add"
    IDENTITY: ClassVar[float] = -0.0  # x + -0.0 is x, for x = -0.0 too
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.AddfOp


@irdl_op_definition
class CumprodOp(ScanOp):
    """Cumulative product along ``axis``, as ``np.cumprod`` (``axis`` as for ``cumsum``).
    Each partial product is rounded to the result's dtype; overflow gives ``inf``, and
    ``0 * inf`` is ``nan``, as in NumPy.

    ```mlir
    %1 = tensordsl.cumprod %0 axis = -1 : tensor<4x8xf64> -> tensor<4x8xf64>
    ```
    """

    name = "tensordsl.cumprod"
    FUNCTION: ClassVar[str | None] = "cumprod"
    NUMPY_UFUNC: ClassVar[str] = "multiply"
    IDENTITY: ClassVar[float] = 1.0
    COMBINE_OP: ClassVar[ScalarOpBuilder] = arith.MulfOp
