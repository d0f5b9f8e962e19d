"""Native code: lowering loops-stage IR to xDSL's ``llvm`` dialect, and running it.

The rewrite patterns (one module per source dialect) need only xDSL and are
meant to be reusable by any xDSL project that lowers ``func``/``scf``/``cf``/
``arith``/``math``/``memref`` to LLVM:

- :mod:`tdsl.native.llvm_types`: the type mapping and the casts patterns use;
- :mod:`tdsl.native.arith_to_llvm`, :mod:`tdsl.native.math_to_llvm`,
  :mod:`tdsl.native.memref_to_llvm`, :mod:`tdsl.native.func_to_llvm`:
  one-to-one lowerings;
- :mod:`tdsl.native.f16`: f16 arithmetic computed in f32;
- :mod:`tdsl.native.math_approx`: ``exp``, ``log``, ``tanh`` and their
  relatives as branch-free polynomial ``arith`` code LLVM vectorizes.

The pass that strings them together is
:class:`tdsl.lowering.convert_to_llvm.ConvertToLLVMPass`, whose docstring
states the ABI.  :mod:`tdsl.native.compile` compiles the result with llvmlite
(imported only there, so ``import tdsl`` never needs it).
"""
