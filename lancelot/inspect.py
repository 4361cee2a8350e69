"""``lancelot inspect``: what a Lance file holds, for people.

``inspect_path`` picks the view for a path; today the one view is a file's (``FileView``): a header (version, rows,
size), then one table row per physical column — column path (struct children and list items by their own names), type,
pages, rows, stored bytes, bytes per value, the encoding in a few words and the compression ratio (Arrow bytes / stored
bytes) — and the bytes outside the columns (schema, zone maps, metadata, padding).  ``verbose`` adds every column's full
encoding tree per page (seed 002 "Encodings": the protobuf messages of encodings_v2_0/v2_1.proto).  A view for another
kind of path is one more entry of ``VIEWS`` (the dataset view: lancelot/dataset/describe.py)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from google.protobuf import any_pb2, text_format
from google.protobuf.message import Message

from lancelot import field_metadata
from lancelot.errors import LanceError
from lancelot.format.pb import encodings_v2_0_pb2, encodings_v2_1_pb2, file2_pb2
from lancelot.reader import LanceFile

_MESSAGES = {
    "lance.encodings.ArrayEncoding": encodings_v2_0_pb2.ArrayEncoding,
    "lance.encodings.ColumnEncoding": encodings_v2_0_pb2.ColumnEncoding,
    "lance.encodings21.PageLayout": encodings_v2_1_pb2.PageLayout,
}
#: message fields that only wrap the part that matters (skipped in the few-words summary)
_WRAPPERS = {
    "nullable",
    "no_nulls",
    "some_nulls",
    "values",
    "validity",
    "indices",
    "items",
    "offsets",
    "bytes",
    "buffer",
    "inner",
    "layers",
    "direct",
    "value",
}
#: 2.1+ sub-trees that are not the values' encoding
_SKIP = {"rep_compression", "def_compression", "dictionary"}
_WORDS = {
    "mini_block_layout": "miniblock",
    "full_zip_layout": "fullzip",
    "all_null_layout": "all-null",
    "constant_layout": "constant",
    "blob_layout": "blob",
    "inline_bitpacking": "bitpack",
    "out_of_line_bitpacking": "bitpack",
    "dictionary": "dict",
    "fixed_size_list": "fsl",
    "packed_struct": "packed",
    "fixed_size_binary": "fixed-binary",
    "byte_stream_split": "bss",
}
#: files with more rows than this get their compression ratio estimated from their first rows
RATIO_SAMPLE_ROWS = 1 << 20


def _decode(f: LanceFile, enc: file2_pb2.Encoding) -> tuple[Message | None, str]:
    """The encoding's message (or None) and its type name."""
    kind = enc.WhichOneof("location")
    if kind is None or kind == "none":
        return None, "none"
    if kind == "indirect":
        raw = f.read_bytes(enc.indirect.buffer_location, enc.indirect.buffer_length)
    else:
        raw = enc.direct.encoding
    a = any_pb2.Any()
    a.ParseFromString(raw)
    name = a.type_url.rsplit("/", 1)[-1]
    cls = _MESSAGES.get(name)
    if cls is None:
        return None, name
    msg = cls()
    a.Unpack(msg)
    return msg, name


def describe_encoding(f: LanceFile, enc: file2_pb2.Encoding) -> str:
    """One line: the encoding message's type and its text form."""
    msg, name = _decode(f, enc)
    if msg is None:
        return name
    return f"{name.rsplit('.', 1)[-1]} {text_format.MessageToString(msg, as_one_line=True)}"


def encoding_tree(f: LanceFile, enc: file2_pb2.Encoding, indent: str = "", label: str = "") -> list[str]:
    """The encoding message as an indented tree (``--verbose``)."""
    msg, name = _decode(f, enc)
    if msg is None:
        return [indent + label + name]
    body = text_format.MessageToString(msg).rstrip("\n").splitlines() or [""]
    return [f"{indent}{label}{name.rsplit('.', 1)[-1]} {body[0]}".rstrip()] + [indent + ln for ln in body[1:]]


def encoding_words(msg: Message) -> str:
    """An encoding in a few words: the kinds chosen in its tree, wrappers left out (e.g. ``miniblock bitpack+dict``,
    ``dictionary binary``)."""
    words: list[str] = []
    extra: list[str] = []

    def walk(m: Message) -> None:
        for fd, v in m.ListFields():
            if fd.message_type is None:
                continue
            if fd.name in _SKIP:
                if fd.name == "dictionary":
                    extra.append("dict")
                continue
            if fd.containing_oneof is not None and fd.name not in _WRAPPERS:
                w = _WORDS.get(fd.name, fd.name)
                if w not in words:
                    words.append(w)
            for item in [v] if hasattr(v, "ListFields") else v:  # a message or a repeated field
                walk(item)

    walk(msg)
    layout = words[:1] if words and words[0] in ("miniblock", "fullzip", "all-null", "constant", "blob") else []
    rest = words[len(layout) :]
    if len(rest) > 1 and "flat" in rest:
        rest.remove("flat")
    rest = rest[:3] + extra
    return " ".join(layout + (["+".join(rest)] if rest else [])) or "-"


def column_paths(field: pa.Field, version: str, prefix: str | None = None) -> Iterator[tuple[str, pa.Field]]:
    """(path, field) of every column ``field`` owns, in file order: a 2.0 struct or list first owns a column of its own,
    then its children's (``s.a``, ``l.item``, ``m.key``)."""
    path = prefix or field.name
    if field_metadata.owns_column(field, version):
        yield path, field
        return
    if not field_metadata.is_structural(version):
        yield path, field
    for c in field_metadata.children(field):
        yield from column_paths(c, version, f"{path}.{c.name}")


def _child_arrays(arr: pa.Array) -> list[pa.Array]:
    """The child arrays of a nested array, in ``field_metadata.children`` order (a list's: its items)."""
    t = arr.type
    if pa.types.is_struct(t):
        return [arr.field(i) for i in range(t.num_fields)]
    return [arr.keys, arr.items] if pa.types.is_map(t) else [arr.flatten()]


def _logical_bytes(field: pa.Field, arr: pa.Array, version: str) -> Iterator[int | None]:
    """Arrow bytes of each of the field's columns (None for a 2.0 struct/list's own column)."""
    if field_metadata.owns_column(field, version):
        yield arr.nbytes
        return
    if not field_metadata.is_structural(version):
        yield None
    kids = field_metadata.children(field)
    for c, a in zip(kids, _child_arrays(arr) if kids else []):
        yield from _logical_bytes(c, a, version)


@dataclass
class ColumnRow:
    path: str
    type: str
    pages: int
    rows: int
    stored: int
    encoding: str
    logical: int | None

    def ratio(self, estimated: bool) -> str:
        if self.logical is None or not self.stored:
            return "-"
        return f"{'~' if estimated else ''}{self.logical / self.stored:.2f}x"


def _human(n: int) -> str:
    x: float = n  # still the int when it is printed in bytes
    for unit in ("B", "KiB", "MiB", "GiB"):
        if x < 1024 or unit == "GiB":
            return f"{x} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return str(x)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)]


class FileView:
    """The view of one Lance file."""

    def __init__(self, f: LanceFile) -> None:
        self.f = f

    def columns(self) -> tuple[list[ColumnRow], bool]:
        """One ColumnRow per physical column, and whether the ratios are estimates."""
        f = self.f
        sample = min(f.num_rows, RATIO_SAMPLE_ROWS)
        scale = f.num_rows / sample if sample else 0.0
        data = f.read_range(0, sample) if sample else None
        out = []
        for field in f.schema:
            infos = f.columns[field.name]
            paths = list(column_paths(field, f.version))
            if data is not None:
                arr = data.column(field.name).combine_chunks()
                logical = [None if b is None else int(b * scale) for b in _logical_bytes(field, arr, f.version)]
            else:
                logical = [0] * len(infos)
            if len(paths) != len(infos) or len(logical) != len(infos):  # a layout this view does not know
                paths = [(f"{field.name}#{i}", field) for i in range(len(infos))]
                logical = [None] * len(infos)
            for (path, fld), info, lb in zip(paths, infos, logical):
                cm = info.meta
                stored = sum(sum(p.buffer_sizes) for p in cm.pages) + sum(cm.buffer_sizes)
                words = Counter(self._page_words(p.encoding) for p in cm.pages)
                enc = words.most_common(1)[0][0] if words else "-"
                if len(words) > 1:
                    enc += f" (+{len(words) - 1} other)"
                out.append(
                    ColumnRow(path, str(fld.type), len(cm.pages), sum(p.length for p in cm.pages), stored, enc, lb)
                )
        return out, sample < f.num_rows

    def overhead(self, rows: list[ColumnRow]) -> dict[str, int]:
        """The file's bytes that belong to no column: the schema, lancelot's zone maps (and any other global buffer),
        the column metadata with the offset tables and footer, and the rest (alignment padding, deferred encodings)."""
        from lancelot.format.container import FOOTER_SIZE
        from lancelot.zonemaps import MAGIC_PREFIX

        f, md = self.f, self.f.metadata
        out = {"schema": md.global_buffers[0][1] if md.global_buffers else 0}
        for i, (pos, size) in enumerate(md.global_buffers[1:], 1):
            zones = size > len(MAGIC_PREFIX) and f.read_bytes(pos, len(MAGIC_PREFIX)) == MAGIC_PREFIX
            out["zone maps" if zones else f"global buffer {i}"] = size
        out["metadata"] = (
            sum(cm.ByteSize() for cm in md.columns) + 16 * (len(md.columns) + len(md.global_buffers)) + FOOTER_SIZE
        )
        out["padding"] = md.file_size - sum(out.values()) - sum(r.stored for r in rows)
        return out

    def _page_words(self, enc: file2_pb2.Encoding) -> str:
        msg, name = _decode(self.f, enc)
        return encoding_words(msg) if msg is not None else name

    def render(self, *, verbose: bool = False, max_pages: int = 5, one_line: bool = False) -> str:
        """The header and column table; ``verbose`` adds the schema and encoding trees (``one_line``: each tree on one
        line, as protobuf's text format prints it)."""
        f, md = self.f, self.f.metadata
        lines = [
            f"file: {f.path}",
            f"version {f.version} (on disk {md.major}.{md.minor}), {f.num_rows:,} rows, {_human(md.file_size)}, "
            f"{len(f.schema)} fields in {len(md.columns)} columns, {len(md.global_buffers)} global buffers",
        ]
        rows, estimated = self.columns()
        lines.append("")
        lines += _table(
            ["column", "type", "pages", "rows", "bytes", "B/value", "encoding", "ratio"],
            [
                [
                    r.path,
                    r.type,
                    f"{r.pages:,}",
                    f"{r.rows:,}",
                    _human(r.stored),
                    f"{r.stored / r.rows:.2f}" if r.rows else "-",
                    r.encoding,
                    r.ratio(estimated),
                ]
                for r in rows
            ],
            right={2, 3, 4, 5, 7},
        )
        if estimated:
            lines.append(f"(~ ratios estimated from the first {RATIO_SAMPLE_ROWS:,} rows)")
        lines.append("outside the columns: " + ", ".join(f"{k} {_human(v)}" for k, v in self.overhead(rows).items()))
        if verbose:
            lines += ["", "schema:", *("  " + ln for ln in f.schema.to_string(show_schema_metadata=True).splitlines())]
            lines += self._trees(rows, max_pages, one_line)
        return "\n".join(lines)

    def _trees(self, rows: list[ColumnRow], max_pages: int, one_line: bool = False) -> list[str]:
        f = self.f
        lines: list[str] = []
        infos = [info for field in f.schema for info in f.columns[field.name]]
        for row, info in zip(rows, infos):
            cm = info.meta
            lines += ["", f"column {info.index} ({row.path}): {len(cm.pages)} pages, {_human(row.stored)}"]
            if cm.encoding.WhichOneof("location") not in (None, "none"):
                lines += (
                    [f"  column encoding {describe_encoding(f, cm.encoding)}"]
                    if one_line
                    else encoding_tree(f, cm.encoding, "  ", "column encoding: ")
                )
            shown = cm.pages if max_pages < 0 else cm.pages[:max_pages]
            for j, p in enumerate(shown):
                lines.append(f"  page {j}: {p.length:,} rows, priority {p.priority}, buffers {list(p.buffer_sizes)}")
                lines += (
                    [f"    {describe_encoding(f, p.encoding)}"] if one_line else encoding_tree(f, p.encoding, "    ")
                )
            if len(cm.pages) > len(shown):
                lines.append(f"  ({len(cm.pages) - len(shown)} more pages not shown; --pages -1 shows all)")
        return lines


def inspect_path(path: str, *, verbose: bool = False, max_pages: int = 5) -> str:
    """The description of what is at ``path``: a dataset (lancelot/dataset/describe.py) or a file (``max_pages`` < 0:
    every page in ``verbose`` trees)."""
    from lancelot.dataset.describe import describe_dataset, is_dataset

    if is_dataset(path):
        return describe_dataset(path)
    if "://" not in path and os.path.isdir(path):
        raise LanceError("is a directory, neither a Lance file nor a Lance dataset", path=path)
    with LanceFile(path) as f:
        return FileView(f).render(verbose=verbose, max_pages=max_pages)


def inspect_file(path: str, *, max_pages: int = 5, verbose: bool = True) -> str:
    """A file's description for programs and tests: the table, then every page's encoding on one line (``ArrayEncoding
    dictionary { ... }``), which tests can search."""
    with LanceFile(path) as f:
        return FileView(f).render(verbose=verbose, max_pages=max_pages, one_line=True)
