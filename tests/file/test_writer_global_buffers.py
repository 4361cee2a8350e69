"""LanceWriter.add_global_buffer (pylance's LanceFileWriter.add_global_buffer) and skip_zone_maps: the numbers
returned are the ones pylance's reader finds the buffers at, as for pylance's own writer."""

import pyarrow as pa
import pytest
from lance.file import LanceFileReader, LanceFileWriter

import lancelot


@pytest.mark.parametrize("skip_zones", [False, True])
def test_added_buffers_read_back_by_pylance_at_the_numbers_returned(tmp_path, skip_zones) -> None:
    table = pa.table({"x": pa.array(range(100), pa.int64())})
    bufs = [b"first", b"\x00\x01second"]
    ours, theirs = str(tmp_path / "ours.lance"), str(tmp_path / "theirs.lance")
    with lancelot.LanceWriter(ours, table.schema) as w:
        if skip_zones:
            w.skip_zone_maps()
        got = [w.add_global_buffer(b) for b in bufs]
        w.write(table)
    with LanceFileWriter(theirs, table.schema) as pw:
        expected = [pw.add_global_buffer(b) for b in bufs]
        pw.write_batch(table)
    assert got == expected
    reader = LanceFileReader(ours)
    assert [reader.read_global_buffer(i) for i in got] == bufs
    f = lancelot.LanceFile(ours)
    assert (f.zone_maps() is None) == skip_zones
    assert f.num_global_buffers == len(bufs) + 1 + (not skip_zones)
    assert reader.read_all().to_table().equals(table)
