// The memory budget is recorded on every group and bounds what fuses: a merge
// whose smallest legal tile needs more scratch than the budget is refused. A
// row-normalizing op (softmax) whose whole rows do not fit runs decomposed
// into passes over row tiles, so it still fuses while that fits.
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=4096}' | filecheck %s --check-prefix=BIG
// RUN: tdsl-opt %s --fuse=memory-budget=8 | filecheck %s --check-prefix=DECOMPOSED
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=8}' --explain-fusion 2>&1 >/dev/null | filecheck %s --check-prefix=DECOMPOSED-WHY
// RUN: tdsl-opt %s --fuse=memory-budget=2 | filecheck %s --check-prefix=SMALL
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=2}' --explain-fusion 2>&1 >/dev/null | filecheck %s --check-prefix=WHY
// RUN: not tdsl-opt %s -p 'tdsl-fuse{memory-budget=0}' 2>&1 | filecheck %s --check-prefix=ZERO

func.func @prologue(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %0 = tensordsl.softmax %x : tensor<8x16xf32>
  %1 = tensordsl.matmul %0, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = tensordsl.tanh %1 : tensor<8x32xf32>
  func.return %2 : tensor<8x32xf32>
}

// BIG-LABEL: func.func @prologue(
// BIG-NEXT:    kernel.fused(%x, %w) group "g0" budget 4096 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> {
// BIG-NEXT:    ^bb0(
// BIG-NEXT:      tensordsl.softmax
// BIG-NEXT:      tensordsl.matmul
// BIG-NEXT:      tensordsl.tanh
// BIG-NEXT:      kernel.yield

// A whole row of softmax(x) is 16 elements, over a budget of 8: softmax runs
// decomposed (max, sub, exp, sum, div over row tiles) inside the group.
// DECOMPOSED-LABEL: func.func @prologue(
// DECOMPOSED-NEXT:    kernel.fused(%x, %w) group "g0" budget 8 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> {
// DECOMPOSED-NEXT:    ^bb0(
// DECOMPOSED-NEXT:      tensordsl.softmax
// DECOMPOSED-NEXT:      tensordsl.matmul
// DECOMPOSED-NEXT:      tensordsl.tanh
// DECOMPOSED-NEXT:      kernel.yield

// DECOMPOSED-WHY: remark: group g0 in @prologue: 3 ops (tensordsl.softmax, tensordsl.matmul, tensordsl.tanh) over 32x8x16 (d0 parallel, d1 parallel, d2 reduction); inputs: %x, %w; results: %2; smallest tile scratch: 5 elements; rows whole do not fit the budget: row-normalizing ops run decomposed
// DECOMPOSED-WHY: remark: @prologue: 1 fusion group; nothing materialized between groups

// At a budget of 2 no plan fits.  Materializing softmax(x) would hold 128
// elements; the decomposed group needs 5 of scratch and nothing between
// groups, so it is the plan of least memory: it runs, recorded with the
// scratch its tiles may use, and a warning and the report say what it needs.
// SMALL-LABEL: func.func @prologue(
// SMALL-NEXT:    kernel.fused(%x, %w) group "g0" budget 2 scratch 5 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> {
// SMALL-NEXT:    ^bb0(
// SMALL-NEXT:      tensordsl.softmax
// SMALL-NEXT:      tensordsl.matmul
// SMALL-NEXT:      tensordsl.tanh
// SMALL-NEXT:      kernel.yield

// WHY: warning: @prologue: no fusion plan fits the memory budget of 2 elements; the plan of least memory runs instead, and it needs 5 elements (5 of scratch at the smallest tiles, 0 materialized between groups)
// WHY: remark: group g0 in @prologue: 3 ops (tensordsl.softmax, tensordsl.matmul, tensordsl.tanh) {{.*}} smallest tile scratch: 5 elements; rows whole do not fit the budget: row-normalizing ops run decomposed
// WHY: remark: @prologue: 1 fusion group; nothing materialized between groups; no plan fits the memory budget of 2: the plan of least memory runs, and it needs 5 elements (5 of scratch at the smallest tiles, 0 materialized between groups)

// ZERO: error: memory-budget must be a positive number of elements, not 0

// A fallback budget (the JIT's default sets one: the elements of the inputs) is
// where a function no plan of memory-budget fits is planned instead: the group is
// the one of budget 4096, recorded with that budget, and no warning. Below the
// least need (5) the fallback gets the plan of least memory, and the warning.
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=2 fallback-budget=4096}' 2>&1 | filecheck %s --check-prefix=FALLBACK
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=2 fallback-budget=4096}' --explain-fusion 2>&1 >/dev/null | filecheck %s --check-prefix=FALLBACK-WHY
// RUN: tdsl-opt %s -p 'tdsl-fuse{memory-budget=2 fallback-budget=4}' 2>&1 | filecheck %s --check-prefix=FALLBACK-SMALL
// FALLBACK-NOT: warning
// FALLBACK: func.func @prologue(
// FALLBACK-NEXT:    kernel.fused(%x, %w) group "g0" budget 4096 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> {
// FALLBACK-WHY: remark: @prologue: 1 fusion group; nothing materialized between groups; no plan fits the memory budget of 2: planned at the fallback budget of 4096
// FALLBACK-SMALL: warning: @prologue: no fusion plan fits the memory budget of 4 elements; the plan of least memory runs instead, and it needs 5 elements
// FALLBACK-SMALL: kernel.fused(%x, %w) group "g0" budget 4 scratch 5
