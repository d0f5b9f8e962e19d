"""The tdsl frontend: expression text and ``.tdsl`` programs to ``tensordsl`` IR.

``parse`` gives the AST (every node with its source span); ``to_tensordsl``
gives a verified ``ModuleOp``.  Both raise :class:`~tdsl.errors.TdslError`
subclasses that point at the culprit in the source.
"""

from tdsl.frontend.ast import Expression, Program
from tdsl.frontend.ir_gen import lower, lower_expression_cli, to_tensordsl
from tdsl.frontend.parser import parse

__all__ = ["Expression", "Program", "lower", "lower_expression_cli", "parse", "to_tensordsl"]
