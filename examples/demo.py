"""``python -m examples.demo``: one Spark pipeline, stored as a Lance dataset and as Parquet, side by side.

1. generate TPC-H tables (``tpchgen-cli``; a seeded numpy generator if it is missing);
2. transform with Spark in local mode: lineitem joined with orders, customer and
   nation, plus derived columns, range-partitioned and sorted by ``l_orderkey``;
3. write the result as a Lance dataset (the "lance" data source) and as Parquet;
4. the workloads where Lance costs more (Spark scans through a Python data source)
   beside those it is for (point lookups by key, random rows, vectors), each timed on
   both formats with a one-line reason;
5. a summary of the written dataset: versions, fragments, and per column its
   encoding and size.

numba compiles lancelot's encoders once per Python process: a warm-up write and
read in the driver and in every Spark Python worker runs before any clock starts.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from lancelot.testing import tpch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TABLES = ("lineitem", "orders", "customer", "nation")
KEY = "l_orderkey"


class Timings:
    """Named wall-clock timings, one column per storage format, each with a one-line reason."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, float]] = {}
        self.why: dict[str, str] = {}

    @contextmanager
    def measure(self, step: str, fmt: str, repeat: int = 1) -> Iterator[None]:
        """Time the block; with ``repeat``, the time per repetition is recorded."""
        t0 = time.perf_counter()
        yield
        self.rows.setdefault(step, {})[fmt] = (time.perf_counter() - t0) / repeat

    def explain(self, step: str, why: str) -> None:
        self.why[step] = why

    def table(self) -> str:
        lines = [f"{'workload':<52}{'lance':>10}{'parquet':>10}{'lance/parquet':>15}"]
        for step, t in self.rows.items():
            la, pa_ = t.get("lance"), t.get("parquet")
            ratio = f"{la / pa_:.2f}x" if la and pa_ else ""
            lines.append(f"{step:<52}{_fmt(la):>10}{_fmt(pa_):>10}{ratio:>15}")
            if step in self.why:
                lines.append(f"    {self.why[step]}")
        return "\n".join(lines)


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.1f}ms" if seconds < 1 else f"{seconds:.2f}s"


def _say(msg: str) -> None:
    print(msg, flush=True)


# -- 1. data -----------------------------------------------------------------------------


def generate_tpch(out: str, scale: float) -> str:
    """TPC-H tables as Parquet files in ``out``; says which generator made them."""
    if tpch.tpchgen_cli() is not None:
        tpch.generate(out, scale, TABLES)
        return f"tpchgen-cli, scale factor {scale}"
    seeded_tpch(out, scale)
    return f"seeded numpy generator (tpchgen-cli not found), scale factor {scale}"


def seeded_tpch(out: str, scale: float, seed: int = 42) -> None:
    """A TPC-H-shaped stand-in: the demo's columns with plausible, seeded values."""
    rng = np.random.default_rng(seed)
    n_cust, n_orders = max(10, int(150_000 * scale)), max(10, int(1_500_000 * scale))
    names = [
        "ALGERIA",
        "ARGENTINA",
        "BRAZIL",
        "CANADA",
        "EGYPT",
        "ETHIOPIA",
        "FRANCE",
        "GERMANY",
        "INDIA",
        "INDONESIA",
        "IRAN",
        "IRAQ",
        "JAPAN",
        "JORDAN",
        "KENYA",
        "MOROCCO",
        "MOZAMBIQUE",
        "PERU",
        "CHINA",
        "ROMANIA",
        "SAUDI ARABIA",
        "VIETNAM",
        "RUSSIA",
        "UNITED KINGDOM",
        "UNITED STATES",
    ]
    pq.write_table(
        pa.table(
            {
                "n_nationkey": pa.array(np.arange(25), pa.int64()),
                "n_name": names,
                "n_regionkey": pa.array(np.arange(25) % 5, pa.int64()),
            }
        ),
        f"{out}/nation.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "c_custkey": pa.array(np.arange(1, n_cust + 1), pa.int64()),
                "c_nationkey": pa.array(rng.integers(0, 25, n_cust), pa.int64()),
                "c_mktsegment": pa.array(
                    np.array(["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"])[
                        rng.integers(0, 5, n_cust)
                    ]
                ),
            }
        ),
        f"{out}/customer.parquet",
    )
    odate = rng.integers(8035, 10591, n_orders).astype("int32")  # 1992-01-01 .. 1998-12-31
    pq.write_table(
        pa.table(
            {
                "o_orderkey": pa.array(np.arange(1, n_orders + 1), pa.int64()),
                "o_custkey": pa.array(rng.integers(1, n_cust + 1, n_orders), pa.int64()),
                "o_orderdate": pa.array(odate, pa.date32()),
                "o_orderpriority": pa.array(
                    np.array(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"])[
                        rng.integers(0, 5, n_orders)
                    ]
                ),
            }
        ),
        f"{out}/orders.parquet",
    )
    lines = rng.integers(1, 8, n_orders)
    okey = np.repeat(np.arange(1, n_orders + 1), lines)
    n = len(okey)
    ship = np.repeat(odate, lines) + rng.integers(1, 122, n).astype("int32")
    dec = pa.decimal128(15, 2)

    def money(x: np.ndarray) -> pa.Array:
        return pa.array(np.round(x, 2)).cast(pa.decimal128(38, 2)).cast(dec)

    pq.write_table(
        pa.table(
            {
                "l_orderkey": pa.array(okey, pa.int64()),
                "l_linenumber": pa.array(np.concatenate([np.arange(1, k + 1) for k in lines]), pa.int32()),
                "l_quantity": money(rng.integers(1, 51, n).astype("float64")),
                "l_extendedprice": money(rng.uniform(900, 105_000, n)),
                "l_discount": money(rng.integers(0, 11, n) / 100),
                "l_tax": money(rng.integers(0, 9, n) / 100),
                "l_returnflag": pa.array(np.array(["A", "N", "R"])[rng.integers(0, 3, n)]),
                "l_shipdate": pa.array(ship, pa.date32()),
                "l_commitdate": pa.array(ship + rng.integers(-30, 60, n).astype("int32"), pa.date32()),
                "l_receiptdate": pa.array(ship + rng.integers(1, 31, n).astype("int32"), pa.date32()),
                "l_shipmode": pa.array(
                    np.array(["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"])[rng.integers(0, 7, n)]
                ),
            }
        ),
        f"{out}/lineitem.parquet",
    )


# -- 2. the Spark pipeline ---------------------------------------------------------------


def spark_session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this interpreter
    from pyspark.sql import SparkSession

    import lancelot.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lancelot-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "true")  # Spark's progress bar on stderr
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lancelot.spark.register(spark)  # the "lance" format (filter pushdown is asked for per read below)
    return spark


def warm_up(spark: SparkSession, workdir: str) -> float:
    """Untimed: numba compiles lancelot's encoders on first use in each process (driver and workers)."""
    import lancelot

    t0 = time.perf_counter()
    n = 20_000
    t = pa.table(
        {
            "k": pa.array(np.arange(n), pa.int64()),
            "s": [f"warm{i % 977}" for i in range(n)],
            "x": pa.array(np.linspace(0, 1, n)),
        }
    )
    lancelot.write_dataset(t, os.path.join(workdir, "warm-driver"), mode="overwrite")
    warm = lancelot.dataset(os.path.join(workdir, "warm-driver"))
    warm.to_table()
    warm.take(np.arange(0, n, 20))  # a 1,000-row take runs the point kernel (small ones run numpy)
    from lancelot.util.jit import wait_for_warm_ups

    wait_for_warm_ups()  # kernels a numpy path asked for in the background are ready before the clock
    parts = 2 * max(2, spark.sparkContext.defaultParallelism)  # every Python worker gets a task
    df = spark.range(0, n * parts, 1, parts).selectExpr("id", "concat('warm', id % 977) as s", "id * 0.5 as x")
    df.write.format("lance").mode("overwrite").save(os.path.join(workdir, "warm-spark"))
    spark.read.format("lance").option("rows_per_partition", n).load(os.path.join(workdir, "warm-spark")).filter(
        "id = 7"
    ).collect()
    shutil.rmtree(os.path.join(workdir, "warm-driver"), ignore_errors=True)
    shutil.rmtree(os.path.join(workdir, "warm-spark"), ignore_errors=True)
    return time.perf_counter() - t0


#: rows of the demo's own data written and read back, untimed, before the timed steps
WARM_ROWS = 200_000


def warm_up_on(spark: SparkSession, df: DataFrame, workdir: str, options: dict[str, str]) -> float:
    """Untimed: a slice of the data itself written as Lance and read back (counted, filtered) in
    every Spark Python worker, then each worker waits for the kernels its reads and writes asked for.

    lancelot runs a path in numpy until it is hot and then compiles (or loads from numba's cache)
    its kernel on a background thread: the warm-up above is too small and has other column types
    than the demo's data, so without this the first timed write and count compiled kernels (bit
    packing, RLE, miniblock headers) in each worker inside the clock, on a fresh clone's empty
    numba cache (a later run loads them from the cache instead: faster, but still timed)."""
    t0 = time.perf_counter()
    parts = 2 * max(2, spark.sparkContext.defaultParallelism)  # every Python worker gets tasks
    path = os.path.join(workdir, "warm-data")
    df.limit(WARM_ROWS).repartition(parts).write.format("lance").options(**options).mode("overwrite").save(path)
    reader = (
        spark.read.format("lance")
        .option("filter_pushdown", "true")
        .option("rows_per_partition", WARM_ROWS // parts + 1)
    )
    read = reader.load(path)
    read.count()
    read.filter("l_orderkey = 1").collect()

    def wait_for_kernels(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from lancelot.util.jit import wait_for_warm_ups

        for b in batches:
            wait_for_warm_ups()
            time.sleep(0.2)  # long enough that every worker takes one of the tasks
            yield b

    spark.range(0, parts, 1, parts).mapInArrow(wait_for_kernels, "id long").collect()
    shutil.rmtree(path, ignore_errors=True)
    return time.perf_counter() - t0


def transform(spark: SparkSession, src: str) -> DataFrame:
    """lineitem x orders x customer x nation with derived columns, range-partitioned and sorted by key."""
    from pyspark.sql import functions as F

    def read(name: str) -> DataFrame:
        return spark.read.parquet(f"{src}/{name}.parquet")

    li, o, c, n = read("lineitem"), read("orders"), read("customer"), read("nation")
    revenue = F.col("l_extendedprice") * (1 - F.col("l_discount"))
    return (
        li.join(o, li.l_orderkey == o.o_orderkey)
        .join(c, o.o_custkey == c.c_custkey)
        .join(F.broadcast(n), c.c_nationkey == n.n_nationkey)
        .select(
            "l_orderkey",
            "l_linenumber",
            "o_orderdate",
            "o_orderpriority",
            "c_custkey",
            "c_mktsegment",
            F.col("n_name").alias("nation"),
            "l_shipmode",
            "l_returnflag",
            "l_quantity",
            "l_shipdate",
            revenue.cast("decimal(18,4)").alias("revenue"),
            (revenue * (1 + F.col("l_tax"))).cast("decimal(18,4)").alias("charge"),
            F.datediff("l_receiptdate", "l_shipdate").alias("ship_days"),
            (F.col("l_receiptdate") > F.col("l_commitdate")).alias("is_late"),
            F.year("o_orderdate").alias("order_year"),
        )
        .repartitionByRange(4, KEY)
        .sortWithinPartitions(KEY, "l_linenumber")
    )


def report_query(df: DataFrame) -> DataFrame:
    """Revenue and lateness per nation for the shipments of 1995."""
    from pyspark.sql import functions as F

    return (
        df.filter((F.col("l_shipdate") >= "1995-01-01") & (F.col("l_shipdate") < "1996-01-01"))
        .groupBy("nation")
        .agg(
            F.sum("revenue").alias("revenue"),
            F.avg(F.col("is_late").cast("int")).alias("late_share"),
            F.count("*").alias("lines"),
        )
        .orderBy(F.desc("revenue"))
    )


# -- 5. the dataset's summary ------------------------------------------------------------

_LAYOUTS = {
    "mini_block_layout": "mini-block",
    "full_zip_layout": "full-zip",
    "constant_layout": "constant",
    "all_null_layout": "all-null",
    "blob_layout": "blob",
}
_TECHNIQUES = {
    "inline_bitpacking": "bitpacked",
    "out_of_line_bitpacking": "bitpacked",
    "bitpacking": "bitpacked",
    "bitpacked": "bitpacked",
    "dictionary": "dictionary",
    "fsst": "FSST",
    "rle": "RLE",
    "byte_stream_split": "byte-stream-split",
    "fixed_size_list": "fixed-size list",
    "constant": "constant",
    "packed_struct": "packed struct",
    "variable": "variable-width",
    "flat": "flat",
}


def encoding_words(text: str) -> str:
    """An encoding tree's one-line text form (lancelot.inspect) in a few words."""
    words: list[str] = []
    for token in re.findall(r"(\w+) \{", text) + [
        f"general:{m.lower()}" for m in re.findall(r"COMPRESSION_ALGORITHM_(\w+)", text)
    ]:
        w = _LAYOUTS.get(token) or _TECHNIQUES.get(token) or (token.split(":")[1] if ":" in token else None)
        if w and w not in words:
            words.append(w)
    if "bitpacked" in words and "flat" in words:
        words.remove("flat")
    return ", ".join(words[:4]) or text.split(" ", 1)[0]


def dataset_summary(uri: str) -> str:
    """Versions, fragments, and per column: type, pages, bytes on disk, encoding of its first page."""
    import lancelot
    from lancelot import LanceFile
    from lancelot.inspect import describe_encoding

    ds = lancelot.dataset(uri)
    frags = ds.get_fragments()
    lines = [
        f"dataset {uri}: version {ds.version}, {ds.count_rows():,} rows in {len(frags)} fragments, "
        f"files in Lance format {ds.data_storage_version}"
    ]
    for v in ds.versions():
        rows = ds.checkout_version(v["version"]).count_rows()
        lines.append(f"  version {v['version']}: committed {v['timestamp']:%Y-%m-%d %H:%M:%S}, {rows:,} rows")
    stats: dict[str, list[Any]] = {}
    for frag in frags:
        for df in frag.metadata.files:
            with LanceFile(os.path.join(uri, "data", df.path)) as f:
                for name, cols in f._columns.items():
                    for info in cols:
                        pages = info.meta.pages
                        s = stats.setdefault(name, [0, 0, None])
                        s[0] += len(pages)
                        s[1] += sum(sum(p.buffer_sizes) for p in pages)
                        if s[2] is None and pages:
                            s[2] = encoding_words(describe_encoding(f, pages[0].encoding))
    lines.append(f"  {'column':<16}{'type':<20}{'pages':>6}{'bytes':>12}  encoding (first page)")
    for field in ds.schema:
        pages, nbytes, enc = stats.get(field.name, [0, 0, None])
        kind = str(field.type).replace("decimal128", "decimal").replace("[day]", "")
        lines.append(f"  {field.name:<16}{kind[:19]:<20}{pages:>6}{nbytes:>12,}  {enc or '-'}")
    return "\n".join(lines)


def dir_size(d: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


# -- the run -----------------------------------------------------------------------------


def vectors(n: int, dim: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    flat = pa.array(rng.standard_normal(n * dim, dtype=np.float32))
    return pa.table({"id": pa.array(np.arange(n), pa.int64()), "vector": pa.FixedSizeListArray.from_arrays(flat, dim)})


def run(
    scale: float,
    workdir: str,
    take_rows: int,
    seed: int,
    version: str | None,
    spark: SparkSession | None = None,
    lookups: int = 5,
) -> None:
    """The whole demo; with ``spark`` given, that session is used (and left running)."""
    import lancelot

    timings = Timings()
    step, why = timings.measure, timings.explain
    src, out_lance, out_parquet = (os.path.join(workdir, d) for d in ("tpch", "lance", "parquet"))
    os.makedirs(src, exist_ok=True)
    t0 = time.perf_counter()
    _say(f"generating TPC-H tables at scale factor {scale} in {src} ...")
    how = generate_tpch(src, scale)
    _say(
        f"1. generated TPC-H ({how}) in {time.perf_counter() - t0:.1f}s: "
        + ", ".join(f"{t} {pq.ParquetFile(f'{src}/{t}.parquet').metadata.num_rows:,} rows" for t in TABLES)
    )

    t0 = time.perf_counter()
    own = spark is None
    if own:
        _say("starting Spark (local[2]) and warming up lancelot's kernels in its workers ...")
    spark = spark_session() if spark is None else spark
    pushdown_before = spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    started = time.perf_counter() - t0
    warm = warm_up(spark, workdir)
    _say(
        f"2. Spark {spark.version} in local[2] started in {started:.1f}s; warm-up (not timed, {warm:.1f}s): "
        "numba compiles lancelot's encoders once per Python process, so a small write and read ran first "
        "in the driver and in Spark's Python workers"
    )
    _say("joining lineitem, orders, customer and nation on Spark, then writing Lance and Parquet ...")
    df = transform(spark, src).cache()
    n_rows = df.count()

    lance_options = {"data_storage_version": version} if version else {}
    warm = warm_up_on(spark, df, workdir, lance_options)
    _say(
        f"   warm-up on {min(n_rows, WARM_ROWS):,} of its rows (not timed, {warm:.1f}s): written as Lance and read "
        "back in every worker, so the kernels the timed steps use are compiled or loaded first"
    )
    with step("write (Spark)", "lance"):
        df.write.format("lance").options(**lance_options).mode("overwrite").save(out_lance)
    with step("write (Spark)", "parquet"):
        df.write.mode("overwrite").parquet(out_parquet)
    why(
        "write (Spark)",
        "Lance: rows cross to Python workers as Arrow and lancelot encodes them; Parquet's writer runs inside the JVM",
    )
    # a new DataFrame per query, so pushdown is safe (docs/SPARK.md, correctness): asked for per read
    readers: dict[str, Callable[[], DataFrame]] = {
        "lance": lambda: spark.read.format("lance").option("filter_pushdown", "true").load(out_lance),
        "parquet": lambda: spark.read.parquet(out_parquet),
    }
    from pyspark.sql.types import StructType

    no_columns: dict[str, Callable[[], DataFrame]] = {
        "lance": lambda: spark.read.format("lance").schema(StructType()).load(out_lance),
        "parquet": lambda: spark.read.schema(StructType()).parquet(out_parquet),
    }
    results = {}
    for fmt, read in readers.items():
        with step("count rows (Spark)", fmt):
            assert read().count() == n_rows
        with step("count rows, no column asked (Spark, empty schema)", fmt):
            assert no_columns[fmt]().count() == n_rows
        with step("1995 report: filter + group by (Spark)", fmt):
            results[fmt] = [tuple(r) for r in report_query(read()).collect()]
    why(
        "count rows (Spark)",
        "Parquet counts rows from its footers; a Python source gets no column pruning "
        "(pyspark passes it the full schema for a count), so every column is decoded and handed to the JVM",
    )
    why(
        "count rows, no column asked (Spark, empty schema)",
        "with .schema(StructType()) the lance source reads "
        "no column: row counts from the manifest's fragments; what is left is a Python source's fixed cost",
    )
    why(
        "1995 report: filter + group by (Spark)",
        "a scan: sorted by key, zone maps cannot skip dates; every "
        "column crosses from Python to the JVM (no pruning for Python sources up to pyspark 4.3)",
    )
    _say(
        f"3. wrote {n_rows:,} rows: lance dataset {dir_size(out_lance) / 2**20:.1f} MiB, parquet "
        f"{dir_size(out_parquet) / 2**20:.1f} MiB; the 1995 report is the same from both formats: "
        f"{results['lance'] == results['parquet']}"
    )
    for nation, revenue, late, lines in results["lance"][:3]:
        _say(f"     {nation:<15} revenue {revenue:>18,.2f}  late {late:.1%}  lines {lines:,}")

    _say("timing key lookups, random rows and vectors on both formats ...")
    rng = np.random.default_rng(seed)
    keys = [
        int(k)
        for k in rng.choice(pq.read_table(out_parquet, columns=[KEY]).column(KEY).to_numpy(), lookups, replace=False)
    ]
    found = {}
    for fmt, read in readers.items():
        with step(f"lookup {KEY} = k (Spark, pushdown), per key", fmt, repeat=lookups):
            found[fmt] = [sorted(tuple(r) for r in read().filter(f"{KEY} = {k}").collect()) for k in keys]
    why(
        f"lookup {KEY} = k (Spark, pushdown), per key",
        "Lance: zone maps leave one 4,096-row zone to read; "
        "most of the time is Spark's fixed cost of a query with a Python source; Parquet reads a row group",
    )
    ds = lancelot.dataset(out_lance)
    pq_ds = pads.dataset(out_parquet, format="parquet")
    direct = {}
    with step(f"lookup {KEY} = k (lancelot / pyarrow), per key", "lance", repeat=lookups):
        direct["lance"] = [ds.to_table(filter=pc.field(KEY) == k).num_rows for k in keys]
    with step(f"lookup {KEY} = k (lancelot / pyarrow), per key", "parquet", repeat=lookups):
        direct["parquet"] = [pq_ds.to_table(filter=pc.field(KEY) == k).num_rows for k in keys]
    why(
        f"lookup {KEY} = k (lancelot / pyarrow), per key",
        "Lance decodes one zone of one fragment; pyarrow "
        "decodes every row group whose min/max admits the key (here a whole file's)",
    )
    idx = np.sort(rng.choice(n_rows, size=min(take_rows, n_rows), replace=False))
    with step(f"take {len(idx):,} random rows (lancelot / pyarrow)", "lance"):
        got_l = ds.take(idx)
    with step(f"take {len(idx):,} random rows (lancelot / pyarrow)", "parquet"):
        got_p = pq_ds.take(pa.array(idx))
    why(
        f"take {len(idx):,} random rows (lancelot / pyarrow)",
        "Lance reads only the bytes of the rows asked "
        "for; Parquet must decode whole pages (and row groups) around each one",
    )
    nvec = min(100_000, max(10_000, n_rows // 4))
    vec = vectors(nvec, 128, seed)
    lancelot.write_dataset(vec, os.path.join(workdir, "vectors.lance"), mode="overwrite")
    pq.write_table(vec, os.path.join(workdir, "vectors.parquet"))
    vidx = np.sort(rng.choice(nvec, size=min(take_rows, nvec), replace=False))
    vds, vpq = (
        lancelot.dataset(os.path.join(workdir, "vectors.lance")),
        pads.dataset(os.path.join(workdir, "vectors.parquet")),
    )
    with step(f"read {len(vidx):,} of {nvec:,} 128-d vectors", "lance"):
        v_l = vds.take(vidx, columns=["vector"])
    with step(f"read {len(vidx):,} of {nvec:,} 128-d vectors", "parquet"):
        v_p = vpq.take(pa.array(vidx), columns=["vector"])
    why(
        f"read {len(vidx):,} of {nvec:,} 128-d vectors",
        "a vector is 512 contiguous bytes in Lance (one "
        "read each); Parquet stores list items in pages that are decoded whole",
    )
    same = (
        found["lance"] == found["parquet"]
        and direct["lance"] == direct["parquet"]
        and got_l.column(KEY).to_pylist() == got_p.column(KEY).to_pylist()
        and v_l.column("vector").equals(v_p.column("vector"))
    )
    _say(
        f"4. {lookups} key lookups (through Spark and directly), {len(idx):,} random rows and {len(vidx):,} "
        f"vectors read from both formats; same results: {same}"
    )
    _say("\ntimings (wall clock, this machine, after the warm-up):\n" + timings.table())
    late = df.limit(1000)
    late.write.format("lance").mode("append").save(out_lance)
    before = spark.read.format("lance").option("version", 1).load(out_lance).count()
    _say(
        f"\n5. appended {late.count():,} more rows (one Spark job: version 2); Spark still reads version 1 "
        f"by time travel: {before:,} rows"
    )
    _say(dataset_summary(out_lance))
    df.unpersist()
    if pushdown_before is not None:  # (always: get returns the default when the setting is unset)
        spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown_before)
    if own:
        spark.stop()


def explore_hint(workdir: str) -> str:
    """Where the demo's data is, and commands to look at it (run from the current directory)."""
    lance_dir = os.path.join(workdir, "lance")
    data = os.path.join(lance_dir, "data")
    largest = max(sorted(os.listdir(data)), key=lambda name: os.path.getsize(os.path.join(data, name)))
    bin_dir = os.path.relpath(os.path.dirname(sys.executable))
    import lancelot

    rows = [0, lancelot.dataset(lance_dir).count_rows() // 2]
    take = (
        f"import lancelot; ds = lancelot.dataset({lance_dir!r}); "
        f"print(ds.take({rows}, columns=['l_orderkey', 'nation', 'revenue']).to_pylist())"
    )
    return "\n".join(
        [
            f"\nthe demo's data is in {workdir}/ (Lance dataset: {lance_dir}, Parquet: {workdir}/parquet,"
            f" TPC-H input: {workdir}/tpch). Explore it: the dataset's versions and files, one file's"
            " columns and encodings, two rows taken in Python:",
            f"  {bin_dir}/lancelot inspect {lance_dir}",
            f"  {bin_dir}/lancelot inspect {os.path.join(data, largest)}",
            f'  {bin_dir}/python -c "{take}"',
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1: 600k lineitems)")
    p.add_argument(
        "--workdir", default=None, help="where data goes, kept afterwards (default: a temporary directory, removed)"
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary work directory")
    p.add_argument("--take", type=int, default=1000, help="random rows to take (default 1000)")
    p.add_argument("--lookups", type=int, default=5, help="key lookups to time (default 5)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--version", default=None, help="Lance file version to write (default: lancelot's)")
    args = p.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="lancelot-demo-")
    t0 = time.perf_counter()
    ok = False
    try:
        run(args.scale, workdir, args.take, args.seed, args.version, lookups=args.lookups)
        ok = True
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        elif ok:
            _say(explore_hint(workdir))
    _say(f"\nthe demo took {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
