"""The fusion rules of ``tdsl-fuse``: which ops run together, and why not.

This module decides; :mod:`tdsl.transforms.fuse` rewrites the IR and renders the
report.  Both the pass and the report call :func:`plan_block`, so the rules
exist once.  The rules read nothing but the structured-op interface (and the
small interfaces of :mod:`tdsl.dialects.op_interfaces`: a contraction's
materialized operands), through the iteration-space analysis that ``tdsl-tile``
uses too (:mod:`tdsl.transforms.iteration_space`).

The model
---------

A fusion group is a set of ops that runs as one kernel over **one iteration
space** (see :mod:`tdsl.transforms.iteration_space`): every dimension of every
value is a variable, and ops equate variables as their indexing maps line the
values up.  Reductions tile (their results accumulate over tiles of the
reduced dims) and row-normalizing ops run over tiles of their rows in passes,
so almost everything fuses with its producers and consumers.  A set of ops is
a legal group when

1. its iteration space is consistent: no value runs along one space dim with
   two of its dims.  A value computed in the group has one layout, so
   ``exp(x) + transpose(exp(x))`` cannot be one group (``exp(x)`` would be
   needed in two layouts), while ``x + transpose(x)`` can (an input is read
   along as many maps as its readers need);
2. an operand an op needs from memory (a contraction's
   ``materialized_operands()``: a matmul's right operand) is not computed in the group, except through views
   (``transpose`` of an input reads the input);
3. its smallest legal tile needs no more scratch than the memory budget (in
   the scratch model of :mod:`tdsl.dialects.kernel_plan`; rows whole for
   row-normalizing ops).  Legal means the schedule's rules hold: a parallel
   dim that a never-recomputed op (a matmul) does not run along stays whole,
   for one, and the passes over tiled reduction dims compute at most
   ``4 * ops + 256`` ops again in all (``RECOMPUTE_FACTOR``, ``RECOMPUTE_MIN``:
   each pass of a long chain with a reduction every few ops would compute the
   whole chain before it again, quadratic in its length);
4. merging it creates no cycle between groups: no path leaves the group and
   comes back;
5. its ops' results all have zero elements, or none of them has: a group iterates
   over its space, and over a zero-size extent it runs no iteration, so a 0-d value
   that also feeds an op over an empty axis would not be computed.

Planning is greedy and deterministic, in program order: each op joins the
groups of its operands' producers (first operand first) when the union is
legal, else it records why not for each producer-consumer edge and keeps the
groups apart.  The dimension variables live in one union-find with an undo
log; each group keeps only what the rules look at (the pairs of variables that
must stay apart, its inputs, its materialized operands, its outside users and a
bound of its scratch), updated by each union rather than recomputed, and a
merge moves the smaller group into the larger one.  So a merge costs about
the size of the smaller group plus the unions it makes, and planning stays
about linear in the number of ops.  The exact scratch of rule 3 is computed
only when the bound exceeds the budget and so does a second bound that
counts the reuse of buffers.

Constants with at most one element are cloned into each group that uses them
(they cost nothing); larger ones stay outside and are group inputs.

The code is in four modules, re-exported here: :mod:`tdsl.transforms.fusion_parts`
(the parts and their iteration space), :mod:`tdsl.transforms.fusion_scratch` (the
bounds of rule 3), :mod:`tdsl.transforms.fusion_planner` (the greedy planner) and
:mod:`tdsl.transforms.fusion_choice` (the plan of a budget and its memory).
"""

from __future__ import annotations

from tdsl.transforms.fusion_choice import (
    PLAN_BUDGETS,
    PlanMemory,
    choose_plans,
    held_for_views,
    plans_memory,
    plural_elements,
)
from tdsl.transforms.fusion_parts import (
    FusionPart,
    PartMerge,
    PartSpaces,
    groupable,
    is_cloned_constant,
)
from tdsl.transforms.fusion_planner import (
    BlockPlan,
    FusionGroup,
    FusionPlanner,
    UnfusedEdge,
    describe_space,
    plan_block,
    plan_function,
    walk_functions,
)
from tdsl.transforms.fusion_scratch import (
    LiveBound,
    SegmentNode,
    group_min_scratch,
    max_into,
    merge_nodes,
    range_add,
    tree_peak,
)

# the names the tests of the bounds used before the split
_Node = SegmentNode
_peak = tree_peak
_range_add = range_add
_merge_nodes = merge_nodes
_Spaces = PartSpaces
_Planner = FusionPlanner

__all__ = [
    "PLAN_BUDGETS",
    "BlockPlan",
    "FusionGroup",
    "FusionPart",
    "FusionPlanner",
    "LiveBound",
    "PartMerge",
    "PartSpaces",
    "PlanMemory",
    "SegmentNode",
    "UnfusedEdge",
    "choose_plans",
    "describe_space",
    "group_min_scratch",
    "groupable",
    "held_for_views",
    "is_cloned_constant",
    "max_into",
    "merge_nodes",
    "plan_block",
    "plan_function",
    "plans_memory",
    "plural_elements",
    "range_add",
    "tree_peak",
    "walk_functions",
]
