"""A human-readable description of a Lance file: version, schema, and per column
its pages with row counts, buffer sizes and encoding tree (``lancelot inspect``)."""

from __future__ import annotations

from google.protobuf import any_pb2, text_format

from lancelot.format.pb import encodings_v2_0_pb2, encodings_v2_1_pb2
from lancelot.reader import LanceFile

_MESSAGES = {
    "lance.encodings.ArrayEncoding": encodings_v2_0_pb2.ArrayEncoding,
    "lance.encodings.ColumnEncoding": encodings_v2_0_pb2.ColumnEncoding,
    "lance.encodings21.PageLayout": encodings_v2_1_pb2.PageLayout,
}


def describe_encoding(f: LanceFile, enc) -> str:
    """One line: the encoding message's type and its text form."""
    kind = enc.WhichOneof("location")
    if kind is None or kind == "none":
        return "none"
    if kind == "indirect":
        raw = f.read_bytes(enc.indirect.buffer_location, enc.indirect.buffer_length)
    else:
        raw = enc.direct.encoding
    a = any_pb2.Any()
    a.ParseFromString(raw)
    name = a.type_url.rsplit("/", 1)[-1]
    cls = _MESSAGES.get(name)
    if cls is None:
        return f"{name} ({len(a.value)} bytes)"
    msg = cls()
    a.Unpack(msg)
    return f"{name.rsplit('.', 1)[-1]} {text_format.MessageToString(msg, as_one_line=True)}"


def inspect_file(path: str, *, max_pages: int = 5) -> str:
    """The description of the file at ``path`` as text."""
    f = LanceFile(path)
    md = f.metadata
    lines = [
        f"file: {path}",
        f"version: {f.version} (on disk {md.major}.{md.minor}), {f.num_rows} rows, {md.file_size} bytes, "
        f"{len(md.columns)} columns, {len(md.global_buffers)} global buffers",
        "schema:",
        *("  " + ln for ln in f.schema.to_string(show_schema_metadata=True).splitlines()),
    ]
    for name, cols in f._columns.items():
        for info in cols:
            cm = info.meta
            nbytes = sum(sum(p.buffer_sizes) for p in cm.pages)
            lines.append(f"column {info.index} ({name}): {len(cm.pages)} pages, {nbytes} bytes; "
                         f"column encoding {describe_encoding(f, cm.encoding)}")
            for j, p in enumerate(cm.pages[:max_pages]):
                lines.append(f"  page {j}: rows {p.length} at {p.priority}, buffers {list(p.buffer_sizes)}")
                lines.append(f"    {describe_encoding(f, p.encoding)}")
            if len(cm.pages) > max_pages:
                lines.append(f"  ... {len(cm.pages) - max_pages} more pages")
    f.close()
    return "\n".join(lines)
