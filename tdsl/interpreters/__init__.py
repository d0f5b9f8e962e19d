"""xDSL interpreter implementations of tdsl's ops, on NumPy arrays.

* :mod:`tdsl.interpreters.tensordsl` -- every ``tensordsl`` op (NumPy semantics);
* :mod:`tdsl.interpreters.kernel` -- ``kernel.fused``, ``kernel.tile``, ``kernel.yield``;
* :mod:`tdsl.interpreters.func` -- ``func.func``, ``func.call``, ``func.return``;
* :mod:`tdsl.interpreters.run` -- ``run_function(module, name, *arrays)``.

Nothing is imported here, so that ``import tdsl`` never pays for the interpreter.
"""
