"""tdsl's import graph is layered: no cycle, and no import from a lower layer to a higher one.

The layers are the table in ``docs/architecture.md`` (the one place they are
declared; this test reads it).  Every module under ``tdsl/`` is parsed with
``ast``, and an edge is:

- every ``import`` and ``from ... import`` of a tdsl module, wherever it is: at
  module level, inside a function (a lazy import), or under ``if TYPE_CHECKING:``;
  ``from P import name`` is an edge to ``P.name`` when that is a module, else to ``P``;
- every ``importlib.import_module(...)`` or ``__import__(...)`` call: to the module
  a string literal names; to every module under the prefix an f-string starts with;
  to every tdsl module when the name is computed (such a module may import anything,
  so it must sit at the top).

Type-only imports (under ``if TYPE_CHECKING:``) count for the layer rule, since a
type from a higher layer is a dependency on it too, but not for the cycle rule:
they never run, and two modules of one layer may name each other's types.  The
import of a module's parent packages, which Python makes implicitly, is not an
edge: a package's ``__init__`` is in its modules' layer, except the root's, whose
eager imports are checked by :func:`test_root_imports_little_eagerly`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tdsl"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Layer:
    rank: int
    name: str
    modules: tuple[str, ...]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    type_only: bool
    lazy: bool


def layers() -> list[Layer]:
    """The rows of the layer table in ``docs/architecture.md``: | rank | layer | modules | role |."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("<!-- layers -->", 1)[1].split("<!-- /layers -->", 1)[0]
    found: list[Layer] = []
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].isdigit():
            found.append(Layer(int(cells[0]), cells[1], tuple(re.findall(r"`([\w.]+)`", cells[2]))))
    return found


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer_of(module: str, table: list[Layer]) -> Layer | None:
    """The layer whose entry names ``module`` or its closest package (the root package
    ``tdsl`` names only itself)."""
    best: tuple[int, Layer] | None = None
    for layer in table:
        for entry in layer.modules:
            covers = module == entry or (entry != "tdsl" and module.startswith(entry + "."))
            if covers and (best is None or len(entry) > best[0]):
                best = (len(entry), layer)
    return None if best is None else best[1]


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def edges() -> list[Edge]:
    known = modules()
    return [e for module, path in known.items() for e in _module_edges(module, path, known)]


def _module_edges(module: str, path: Path, known: dict[str, Path]) -> list[Edge]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Edge] = []

    def add(targets: list[str], node: ast.stmt | ast.expr, type_only: bool, lazy: bool) -> None:
        for target in targets:
            resolved = _resolve(target, known) if target.startswith("tdsl") else None
            if resolved is not None and resolved != module:
                found.append(Edge(module, resolved, node.lineno, type_only, lazy))

    def visit(node: ast.AST, type_only: bool, lazy: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True, lazy)
            for child in node.orelse:
                visit(child, type_only, lazy)
            return
        if isinstance(node, ast.Import):
            add([a.name for a in node.names], node, type_only, lazy)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # P.name when that is a module, else P
            add([f"{base}.{a.name}" for a in node.names], node, type_only, lazy)
        elif isinstance(node, ast.Call) and _is_import_call(node.func):
            add(_import_call_targets(node, known), node, type_only, lazy)
        nested = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, type_only, nested)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False, False)
    return found


def _is_import_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _import_call_targets(call: ast.Call, known: dict[str, Path]) -> list[str]:
    if not call.args:
        return []
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    prefix = ""
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        prefix = str(arg.values[0].value)
    if prefix and not prefix.startswith("tdsl"):
        return []  # another package's module
    return [m for m in known if m.startswith(prefix)]  # computed: any module it may name


# --------------------------------------------------------------------------- the tests


def test_the_edges_include_lazy_type_only_and_importlib_imports() -> None:
    found = edges()
    # a lazy import, inside a method
    assert any(
        e.source == "tdsl.jit.compiled" and e.target == "tdsl.jit.calls" and e.lazy for e in found
    )
    # an import under TYPE_CHECKING
    assert any(
        e.source == "tdsl.jit.calls" and e.target == "tdsl.jit.compiled" and e.type_only
        for e in found
    )
    # the root's importlib calls, with a computed name: an edge to every module
    assert {e.target for e in found if e.source == "tdsl"} >= set(modules()) - {"tdsl"}


def test_every_module_has_a_layer() -> None:
    table = layers()
    assert table, f"no layer table in {ARCHITECTURE}"
    missing = [m for m in modules() if layer_of(m, table) is None]
    assert not missing, f"modules in no layer of docs/architecture.md: {missing}"
    stale = [e for layer in table for e in layer.modules if e not in modules()]
    assert not stale, f"docs/architecture.md names modules that do not exist: {stale}"


def test_imports_go_down_only() -> None:
    table = layers()
    upward: list[str] = []
    for e in edges():
        source, target = layer_of(e.source, table), layer_of(e.target, table)
        assert source is not None and target is not None
        if source.name == target.name:
            continue
        if target.rank >= source.rank:
            kind = "type-only " if e.type_only else "lazy " if e.lazy else ""
            upward.append(
                f"{e.source}:{e.line} ({source.name}, rank {source.rank}) {kind}imports "
                f"{e.target} ({target.name}, rank {target.rank})"
            )
    assert not upward, "imports that do not go down a layer:\n" + "\n".join(upward)


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for e in edges():
        if not e.type_only:
            graph[e.source].add(e.target)
    cycles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]
    assert not cycles, f"import cycles (lazy imports included): {cycles}"


def test_root_imports_little_eagerly() -> None:
    """Every import of a tdsl module runs ``tdsl/__init__.py`` first: its eager imports are the
    ground layer and :mod:`tdsl.dask`'s registration, which import neither xDSL nor Dask."""
    table = layers()
    eager = {e.target for e in edges() if e.source == "tdsl" and not e.lazy and not e.type_only}
    allowed = {m for m in eager if (layer_of(m, table) or table[0]).rank == 0} | {"tdsl.dask"}
    assert eager <= allowed, sorted(eager - allowed)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def test_no_assert_statement() -> None:
    """No internal invariant is a bare ``assert``: it vanishes under ``python -O``, and a user
    would see an ``AssertionError`` with no location.  A check raises a tdsl error instead
    (``TdslIRError`` located at its op, or :func:`tdsl.errors.internal_error`)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(modules().values())
        for line in sorted(
            node.lineno
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
            if isinstance(node, ast.Assert)
        )
    ]
    assert not found, "assert statements under tdsl/ (raise a tdsl error instead):\n" + "\n".join(
        found
    )
