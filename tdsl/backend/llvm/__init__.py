"""The LLVM backend: tiled IR to loops (:mod:`.lower_to_loops`), loops to xDSL's ``llvm``
dialect (:mod:`.convert_to_llvm`), and the ``llvm`` target (:mod:`.target`).

The rewrite patterns (one module per source dialect) need only xDSL and are
meant to be reusable by any xDSL project that lowers ``func``/``scf``/``cf``/
``arith``/``math``/``memref`` to LLVM:

- :mod:`tdsl.backend.llvm.llvm_types`: the type mapping and the casts patterns use;
- :mod:`tdsl.backend.llvm.arith_to_llvm`, :mod:`tdsl.backend.llvm.math_to_llvm`,
  :mod:`tdsl.backend.llvm.memref_to_llvm`, :mod:`tdsl.backend.llvm.func_to_llvm`:
  one-to-one lowerings;
- :mod:`tdsl.backend.llvm.f16`: f16 arithmetic computed in f32;
- :mod:`tdsl.backend.llvm.math_approx`: ``exp``, ``log``, ``tanh`` and their
  relatives as branch-free polynomial ``arith`` code LLVM vectorizes, and
  :mod:`tdsl.backend.llvm.math_erf`: ``erf`` likewise, and
  :mod:`tdsl.backend.llvm.math_trig`: ``sin`` and ``cos``, with a C library call for
  arguments beyond the expansion's domain.

The pass that strings them together is
:class:`tdsl.backend.llvm.convert_to_llvm.ConvertToLLVMPass`, whose docstring
states the ABI.  Compiling and running the result is :mod:`tdsl.runtime`'s, which
imports llvmlite (only there, so ``import tdsl`` never needs it).
"""
