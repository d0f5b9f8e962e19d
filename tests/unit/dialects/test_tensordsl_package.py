"""The ``tensordsl`` package: the dialect is made of the op classes its family modules
define, every module of the package is a family, and each op is reachable by name from
the package (``td.ExpOp``)."""

from __future__ import annotations

import pkgutil

from tdsl.dialects import tensordsl as td


def test_every_module_of_the_package_is_a_family() -> None:
    modules = {m.name for m in pkgutil.iter_modules(td.__path__)}
    assert modules == {m.__name__.rsplit(".", 1)[1] for m in td.FAMILY_MODULES}


def test_the_dialect_is_the_ops_the_families_define() -> None:
    defined = [
        v
        for module in td.FAMILY_MODULES
        for v in vars(module).values()
        if isinstance(v, type) and v.__module__ == module.__name__ and "name" in v.__dict__
    ]
    assert tuple(td.TensorDSL.operations) == td.OPS == tuple(defined)
    assert len({op.name for op in td.OPS}) == len(td.OPS)


def test_each_op_is_exported_by_its_class_name() -> None:
    for op in td.OPS:
        assert getattr(td, op.__name__) is op
