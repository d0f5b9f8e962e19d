"""The ``.tdsl`` input format for ``tdsl-opt`` and ``xdsl-opt``.

Registered in :mod:`tdsl.universe` under the file extension ``tdsl``, so that
``tdsl-opt kernel.tdsl`` prints the kernels' ``tensordsl`` IR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from tdsl.errors import TdslSyntaxError
from tdsl.frontend.ir_gen import to_tensordsl


@dataclass(frozen=True)
class TdslFrontend(Frontend):
    """Parses a ``.tdsl`` program (``def`` kernels with typed signatures) into tensordsl IR.

    Errors are :class:`~tdsl.errors.TdslError` subclasses naming the input file.
    """

    name = "tdsl"

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "<stdin>") -> ModuleOp:
        data = input.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise TdslSyntaxError(
                f"{input_name}: the input is not valid UTF-8 (byte {err.start})"
            ) from None
        return to_tensordsl(text, filename=input_name)


__all__ = ["TdslFrontend"]
