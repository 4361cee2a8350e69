"""The import graph of lancelot/ (every ``import`` the interpreter may run, module level or inside a
function, and ``importlib.import_module`` of a module named in the code; not those under ``if
TYPE_CHECKING:``) has no cycles but the encodings' own recursive dispatcher.

A cycle makes two modules one: neither can be read, tested or changed without the other, and their
import order matters.  The layers go one way: util/ (arrays, jit, types) below format/ and io/,
below encodings/, below reader/writer, below dataset/, below spark/, sql/ and the CLI.
Inside dataset/, the operations (writing, changes, compaction, the commit wing...) sit below
``LanceDataset`` and ``Fragment``, whose methods call them: an operation that commits returns the
version (writing.Committed) and the class opens it, so no operation imports the class back.
Inside sql/, ``translate.Translator`` sits above the operator and function modules it dispatches
to: each handler is given the translator and recurses through ``t.value``, importing only what lies
below it (values, arguments, conditionals, types, udfs) and the ``Translator`` type for the checker.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lancelot

ROOT = Path(lancelot.__file__).parent

#: groups of modules allowed to import each other.  Each names its reason; a group whose cycle is
#: gone should be deleted from here.
ALLOWED: dict[str, set[str]] = {
    # the 2.0 decoder: ``decode`` dispatches an ArrayEncoding node to its kind's module, which decodes
    # its children through ``decode`` again (the encodings' own recursive dispatcher)
    "v2_0 decode dispatch": {
        "lancelot.encodings.v2_0.decode",
        "lancelot.encodings.v2_0.binary",
        "lancelot.encodings.v2_0.dictionary",
        "lancelot.encodings.v2_0.packed_struct",
    },
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT.parent).with_suffix("")
        if "pb" in rel.parts:  # generated protobuf modules
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def import_graph() -> dict[str, set[str]]:
    """module -> the lancelot modules it imports (``from pkg import name`` is ``pkg.name`` when that
    is a module, else ``pkg``)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        skipped = {
            id(x)
            for n in ast.walk(tree)
            if isinstance(n, ast.If) and _type_checking(n)
            for b in n.body
            for x in ast.walk(b)
        }
        for n in ast.walk(tree):
            if id(n) in skipped:
                continue
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "import_module"
                and n.args
                and isinstance(n.args[0], ast.Constant)
                and n.args[0].value in mods
            ):
                graph[m].add(n.args[0].value)
            elif isinstance(n, ast.Import):
                graph[m].update(a.name for a in n.names if a.name in mods)
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    up = package.split(".")[: len(package.split(".")) - n.level + 1]
                    base = ".".join(up + ([n.module] if n.module else []))
                for a in n.names:
                    target = f"{base}.{a.name}"
                    if target in mods:
                        graph[m].add(target)
                    elif base in mods:
                        graph[m].add(base)
        graph[m].discard(m)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_the_graph_sees_imports_of_every_kind():
    graph = import_graph()
    assert "lancelot.dataset.dataset" in graph["lancelot"]  # from lancelot.dataset import dataset (a function)
    assert "lancelot.encodings.structural" in graph["lancelot.encodings"]  # inside a function
    assert "lancelot.encodings.structural.write_pipeline" in graph["lancelot.encodings"]
    assert not any(m.startswith("lancelot.format.pb") for m in graph)


def test_cycles_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_but_the_allowed():
    bad = [sorted(c) for c in cycles(import_graph()) if not any(c <= group for group in ALLOWED.values())]
    assert not bad, f"import cycles: {bad}"


def test_cycles_are_allowed_in_the_encodings_only():
    """The one kind of cycle the design allows is an encoding's recursive dispatcher: the rooms above
    (dataset/, spark/, sql/, the reader and writer) import one way."""
    assert all(m.startswith("lancelot.encodings.") for group in ALLOWED.values() for m in group)
    graph = import_graph()
    assert "lancelot.dataset.commit" in graph["lancelot.dataset.changes"]  # (importlib.import_module)
    for room in ("lancelot.dataset", "lancelot.spark"):
        inside = {m: {t for t in ts if t.startswith(room)} for m, ts in graph.items() if m.startswith(room)}
        assert len(inside) > 10 and not cycles(inside), room


def test_layers_below_the_encodings_import_nothing_above():
    graph = import_graph()
    for m, targets in graph.items():
        if m.startswith(("lancelot.util", "lancelot.versions", "lancelot.errors", "lancelot._version")):
            above = sorted(t for t in targets if not t.startswith(("lancelot.util", "lancelot.errors")))
            assert not above, f"{m} imports {above}"
    for m in ("lancelot.zonemaps", "lancelot.zonemap_bounds", "lancelot.zonemap_codec"):
        assert not [t for t in graph[m] if t.startswith("lancelot.encodings")], m


#: private names another lancelot module may import, each with its reason (none today: a module that
#: needs a name of another's uses its public name, or the owner gives it a door)
ALLOWED_PRIVATE: dict[str, str] = {}


def private_imports_of(m: str, package: str, source: str, mods: set[str]) -> list[str]:
    """``m: from other import _name`` for each private (single-underscore) name module ``m`` (in
    ``package``) imports from another lancelot module, at module level or inside a function."""
    out = []
    for n in ast.walk(ast.parse(source)):
        if not isinstance(n, ast.ImportFrom):
            continue
        base = n.module or ""
        if n.level:
            up = package.split(".")[: len(package.split(".")) - n.level + 1]
            base = ".".join(up + ([n.module] if n.module else []))
        if base == m or not base.startswith("lancelot") or base.startswith("lancelot.format.pb"):
            continue
        out += [
            f"{m}: from {base} import {a.name}"
            for a in n.names
            if a.name.startswith("_") and not a.name.startswith("__") and f"{base}.{a.name}" not in mods
        ]
    return out


def private_imports() -> list[str]:
    mods = _modules()
    return [
        p
        for m, path in mods.items()
        for p in private_imports_of(
            m, m if path.name == "__init__.py" else m.rpartition(".")[0], path.read_text(encoding="utf-8"), set(mods)
        )
    ]


def test_private_imports_of_finds_them():
    mods = {"lancelot.a.b", "lancelot.a.c", "lancelot.a._private_module"}
    src = (
        "from lancelot.a.c import _x, y, __version__\n"
        "from . import _private_module\n"
        "from lancelot.a.b import _own\n"
        "def f():\n    from .c import _Z\n"
        "from lancelot.format.pb import _g\n"
        "from numpy import _h\n"
    )
    assert private_imports_of("lancelot.a.b", "lancelot.a", src, mods) == [
        "lancelot.a.b: from lancelot.a.c import _x",
        "lancelot.a.b: from lancelot.a.c import _Z",
    ]


def test_no_module_imports_a_private_name_of_another():
    """A module's ``_names`` are its own: what another module needs is public (named, documented,
    kept) or reached through a door its owner provides (issue 34, "rooms without reach-ins")."""
    bad = [p for p in private_imports() if p not in ALLOWED_PRIVATE]
    assert not bad, "private imports:\n" + "\n".join(bad)
