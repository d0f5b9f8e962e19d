// `--help` lists tdsl's options, its passes as pass flags (read from the
// universe, with their options), xDSL's canonicalize/cse/dce, tdsl's targets,
// and points to --help-all, which lists every registered pass under -p.

// RUN: env COLUMNS=100000 tdsl-opt --help | filecheck %s
// RUN: env COLUMNS=100000 tdsl-opt --help-all | filecheck %s --check-prefix=ALL

// CHECK: usage: tdsl-opt [options] [input_file | -]
// CHECK: -p PASSES, --passes PASSES
// CHECK: --pass-pipeline 'builtin.module(PASSES)'
// CHECK: --expr EXPRESSION
// CHECK: --shape NAME=DIMSxDTYPE
// CHECK: --explain-fusion
// CHECK: --print-ir-after-all
// CHECK: --print-ir-after PASS
// CHECK: --time-passes
// CHECK: pass flags:
// CHECK: --fuse, --tdsl-fuse {{.*}}options: memory-budget=1000000
// CHECK: --tile, --tdsl-tile {{.*}}options: memory-budget=None tile-size=None tile-sizes=''
// CHECK: --canonicalize
// CHECK: --cse
// CHECK: --dce
// CHECK: targets:
// CHECK: mlir {{.*}}the default
// CHECK: numpy {{.*}}options: threads=1
// CHECK: dot {{.*}}options: memory-budget=None
// CHECK: `tdsl-opt --help-all` lists every option, and the {{[0-9]+}} other passes
// CHECK-NOT: convert-arith-to-riscv

// ALL: -p PASSES, --passes PASSES
// ALL: Available passes are:{{.*}}tdsl-fuse{{.*}}convert-arith-to-riscv
// ALL: --print-no-properties
// ALL: pass flags:
// ALL: --fuse, --tdsl-fuse
