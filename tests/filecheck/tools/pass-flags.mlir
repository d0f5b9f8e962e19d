// mlir-opt style pass flags and -p run in command-line order, with options.
// arith-add-fastmath{flags=...} overwrites the fastmath flags, so the last of
// two runs decides what is printed.

// RUN: tdsl-opt %s --arith-add-fastmath=flags=none -p 'arith-add-fastmath{flags=fast}' \
// RUN:   | filecheck %s --check-prefix=FAST
// RUN: tdsl-opt %s -p 'arith-add-fastmath{flags=fast}' --arith-add-fastmath=flags=none \
// RUN:   | filecheck %s --check-prefix=NONE
// RUN: tdsl-opt %s -p 'arith-add-fastmath{flags=none}' '--arith-add-fastmath=flags=nnan,ninf' \
// RUN:   | filecheck %s --check-prefix=TWO-FLAGS
// RUN: tdsl-opt %s '--arith-add-fastmath{flags=nnan}' | filecheck %s --check-prefix=BRACES

// FAST:      arith.addf %{{.*}}, %{{.*}} fastmath<fast> : f32
// NONE:      arith.addf %{{.*}}, %{{.*}} : f32
// TWO-FLAGS: arith.addf %{{.*}}, %{{.*}} fastmath<nnan,ninf> : f32
// BRACES:    arith.addf %{{.*}}, %{{.*}} fastmath<nnan> : f32

// The order of flags and -p is kept, repeated passes run each time (the
// time report lists them in the order they ran, on stderr).
// RUN: tdsl-opt %s --canonicalize -p 'cse,dce' --dce --cse --time-passes 2>&1 >/dev/null \
// RUN:   | filecheck %s --check-prefix=ORDER
// ORDER:      canonicalize
// ORDER-NEXT: cse
// ORDER-NEXT: dce
// ORDER-NEXT: dce (run 2)
// ORDER-NEXT: cse (run 2)
// ORDER-NEXT: target (mlir)

func.func @add(%a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  func.return %0 : f32
}
