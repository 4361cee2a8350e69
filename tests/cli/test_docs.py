"""The documentation is only as good as what it shows runs: the API reference (docs/api/, generated
from docstrings by `make docs`) needs a docstring on every public name of ``lancelot.__all__`` and every
public method of the user-facing classes, each parameter in ``Args:`` and the result in ``Returns:``
(Google style, as mkdocstrings renders it), and ``>>>`` examples that run; README.md and the user
guide need code that runs against the current library."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import lancelot
from lancelot.dataset import LanceDataset
from lancelot.reader import LanceFile
from lancelot.writer import LanceWriter

ROOT = Path(__file__).resolve().parents[2]


def _classes() -> list[type]:
    """The classes users meet: their public methods and properties are the API reference's pages."""
    from lancelot.dataset.blob_file import BlobFile
    from lancelot.dataset.compact import Optimizer
    from lancelot.dataset.fragment import Fragment, FragmentMetadata
    from lancelot.dataset.merge_insert import MergeInsertBuilder
    from lancelot.dataset.refs import Tags
    from lancelot.dataset.scanner import LanceScanner
    from lancelot.dataset.stats import LanceStats

    return [
        LanceDataset,
        LanceScanner,
        Fragment,
        FragmentMetadata,
        MergeInsertBuilder,
        BlobFile,
        Tags,
        LanceStats,
        Optimizer,
        LanceFile,
        LanceWriter,
    ]


def _public_members(cls: type) -> list[tuple[str, object]]:
    """The class's own public members and those of its mixins (LanceDataset's and Fragment's method
    groups, rendered with the class: ``inherited_members`` in docs/api/dataset.md)."""
    members: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        if klass is cls or klass.__name__.endswith("Mixin"):
            members.update(vars(klass))
    return [
        (name, member)
        for name, member in members.items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property | classmethod | staticmethod))
    ]


def _doc(member: object) -> str | None:
    """The member's own docstring (not one inherited from a base class or from its return type)."""
    if isinstance(member, property):
        member = member.fget
    if isinstance(member, classmethod | staticmethod):
        member = member.__func__
    doc = getattr(member, "__doc__", None)
    return inspect.cleandoc(doc) if doc else None


@pytest.mark.parametrize("name", lancelot.__all__)
def test_every_public_name_has_a_docstring(name):
    obj = getattr(lancelot, name)
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20, f"lancelot.{name} has no docstring"


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_public_methods_have_docstrings(cls):
    missing = []
    for name, member in _public_members(cls):
        if not _doc(member):
            missing.append(name)
    assert not missing, f"{cls.__name__}: no docstring on {missing}"


def _params(fn: object) -> list[str]:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    return [
        p.name
        for p in sig.parameters.values()
        if p.name not in ("self", "cls")
        and not p.name.startswith("_")
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def test_api_pages_name_existing_objects():
    """Every ``::: dotted.name`` of docs/api/ resolves (the docs build checks it too, in `make docs`)."""
    names = [
        line.split(":::", 1)[1].strip()
        for page in sorted((ROOT / "docs" / "api").glob("*.md"))
        for line in page.read_text().splitlines()
        if line.startswith(":::")
    ]
    assert len(names) >= 10
    for dotted in names:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:
            pytest.fail(f"{dotted} does not resolve")


# -- the examples of the docstrings run ---------------------------------------------------------------
# Every ``>>>`` example of the user-facing API runs as a doctest against a fresh ten-row dataset: ``uri``
# ("ex.lance" in a temporary directory, the current directory while it runs), ``ds`` (it, opened),
# ``table`` (its rows: id 0-9, name "n0"-"n9"), ``pa``, ``pc`` and ``lancelot``.


def _documented() -> list[tuple[str, object]]:
    from lancelot.dataset.write import commit, write_dataset, write_fragments

    out: list[tuple[str, object]] = [
        ("dataset", lancelot.dataset),
        ("write_dataset", write_dataset),
        ("write_fragments", write_fragments),
        ("commit", commit),
        ("write_table", lancelot.write_table),
        ("read_table", lancelot.read_table),
    ]
    for cls in _classes():
        out.append((cls.__name__, cls))
        for name, member in _public_members(cls) + [("__init__", vars(cls).get("__init__"))]:
            if member is not None:
                out.append((f"{cls.__name__}.{name}", member))
    return out


def _examples() -> list[tuple[str, str]]:
    out = []
    for name, obj in _documented():
        doc = _doc(obj)
        if doc and ">>>" in doc:
            out.append((name, doc))
    return out


@pytest.mark.parametrize(("name", "doc"), _examples(), ids=[n for n, _ in _examples()])
def test_docstring_examples_run(name, doc, tmp_path, monkeypatch):
    import doctest

    import pyarrow as pa
    import pyarrow.compute as pc

    monkeypatch.chdir(tmp_path)
    table = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
    ds = lancelot.write_dataset(table, "ex.lance")
    globs = {"lancelot": lancelot, "pa": pa, "pc": pc, "table": table, "uri": "ex.lance", "ds": ds}
    test = doctest.DocTestParser().get_doctest(doc, globs, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert not runner.failures, "".join(out)


def _api_with_parameters() -> list[tuple[str, object]]:
    """The user-facing functions and methods that take parameters (``__init__``: documented in the
    class's docstring or its own, as mkdocstrings merges them)."""
    out = []
    for name, obj in _documented():
        if isinstance(obj, type | property):
            continue
        fn = obj.__func__ if isinstance(obj, classmethod | staticmethod) else obj
        if callable(fn) and _params(fn):
            out.append((name, fn))
    try:
        import lancelot.spark as spark
    except ImportError:
        return out
    for name in spark.__all__:
        fn = getattr(spark, name)
        if inspect.isfunction(fn):
            out.append((f"spark.{name}", fn))
    return out


@pytest.mark.parametrize(("name", "fn"), _api_with_parameters(), ids=[n for n, _ in _api_with_parameters()])
def test_api_documents_every_parameter_and_result(name, fn):
    """Google style, as the API reference renders it: each parameter in ``Args:``; a ``Returns:`` (or
    ``Yields:``) section wherever something other than None is returned."""
    doc = _doc(fn) or ""
    if name.endswith(".__init__"):
        doc += "\n" + (inspect.getdoc(inspect.getmodule(fn).__dict__[name.split(".")[0]]) or "")
    assert "Args:" in doc, f"{name}: no Args section"
    args = doc.split("Args:", 1)[1]
    for p in _params(fn):
        assert f"\n    {p}: " in "\n" + args, f"{name}: parameter {p!r} is not documented"
    ret = inspect.signature(fn).return_annotation
    if ret not in (None, "None", inspect.Signature.empty) and not name.endswith(".__init__"):
        assert "Returns:" in doc or "Yields:" in doc, f"{name}: no Returns section"


# -- the code of README.md and the user guide runs ----------------------------------------------------
# Each page's ```python blocks run in order in one namespace, in a temporary directory, after the page's
# prelude below (the data its text assumes: an "events.lance" dataset, ``table``...). Blocks that need
# Spark or an object store are left to the Spark and S3 tests (tests/spark/test_demo.py, the s3 suites).

_EVENTS = """
import datetime as _dt
import pyarrow as pa
import pyarrow.compute as pc
import lancelot

def _rows(lo, hi):
    return pa.table({
        "id": pa.array(range(lo, hi), pa.int64()),
        "name": [("a", "b", f"x{i}", f"n{i}")[i % 4] for i in range(lo, hi)],
        "price": pa.array([None if i % 7 == 0 else i * 0.5 for i in range(lo, hi)], pa.float64()),
        "quantity": pa.array([i % 5 for i in range(lo, hi)], pa.int64()),
        "s": pa.array([{"a": _dt.date(2019 + i % 3, 1, 1)} for i in range(lo, hi)]),
    })

table = _rows(0, 1000)
lancelot.write_dataset(table, "events.lance")
lancelot.write_dataset(_rows(1000, 1100), "events.lance", mode="append")
lancelot.write_dataset(_rows(1100, 1200), "events.lance", mode="append")
more = more_rows = _rows(1200, 1300)
new_rows = _rows(1250, 1350)
other_table = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "score": [0.1, 0.2, 0.3]})
path = "missing.lance"
"""

_PRELUDES = {
    "docs/guide/changing-data.md": _EVENTS,
    "docs/guide/filters.md": _EVENTS + "ds = lancelot.dataset('events.lance')\n",
    "docs/guide/versions.md": _EVENTS,
    "docs/guide/errors.md": _EVENTS,
}


def _pages() -> list[str]:
    guide = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "guide").glob("*.md"))
    return ["README.md", "docs/index.md", *guide]


def _runs_here(code: str) -> bool:
    """False for code that needs Spark or an object store (their tests run it elsewhere)."""
    body = "\n".join(line.split("#", 1)[0] for line in code.splitlines())
    return not any(word in body for word in ("spark", "s3://", "gs://", "az://"))


@pytest.mark.parametrize("page", _pages())
def test_page_code_runs(page, tmp_path, monkeypatch):
    import re

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(_PRELUDES.get(page, ""), f"{page} (prelude)", "exec"), namespace)
    ran = 0
    for i, code in enumerate(blocks):
        if _runs_here(code):
            exec(compile(code, f"{page}, python block {i + 1}", "exec"), namespace)
            ran += 1
    if page in ("README.md", "docs/guide/datasets.md", "docs/guide/files.md"):
        assert ran >= 2, f"{page}: its quickstart blocks were not found"
