"""``python -m lancelot.demo``: a small TPC-H pipeline on Spark, stored as Lance and, side by side, as Parquet.

1. generate TPC-H tables (``tpchgen-cli``; a seeded numpy generator if it is missing);
2. transform with Spark in local mode: lineitem joined with orders, customer and
   nation, plus derived columns (revenue, charge, shipping delay, lateness, year);
3. write the result through the "lance" data source, and the same through Parquet;
4. read both back through Spark: a full scan, and an aggregate over one year of
   shipments (the Lance read skips row ranges by zone maps);
5. take random rows: ``lancelot.LanceFile.take`` against ``pyarrow.dataset.take``;
6. print the timings, the sizes, and the layout of one Lance file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ("lineitem", "orders", "customer", "nation")


class Timings:
    """Named wall-clock timings, one column per storage format."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, float]] = {}

    @contextmanager
    def measure(self, step: str, fmt: str):
        t0 = time.perf_counter()
        yield
        self.rows.setdefault(step, {})[fmt] = time.perf_counter() - t0

    def table(self) -> str:
        lines = [f"{'step':<34}{'lance':>10}{'parquet':>10}{'lance/parquet':>15}"]
        for step, t in self.rows.items():
            la, pa_ = t.get("lance"), t.get("parquet")
            ratio = f"{la / pa_:.2f}x" if la and pa_ else ""
            lines.append(f"{step:<34}{_fmt(la):>10}{_fmt(pa_):>10}{ratio:>15}")
        return "\n".join(lines)


def _fmt(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.2f}s"


def _say(msg: str) -> None:
    print(msg, flush=True)


# -- 1. data -----------------------------------------------------------------------------

def generate_tpch(out: str, scale: float) -> str:
    """TPC-H tables as Parquet files in ``out``; says which generator made them."""
    exe = shutil.which("tpchgen-cli") or os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    if os.path.exists(exe):
        subprocess.run([exe, "parquet", "-s", str(scale), f"--tables={','.join(TABLES)}", f"--output-dir={out}",
                        "--overwrite"], check=True, capture_output=True)
        return f"tpchgen-cli, scale factor {scale}"
    seeded_tpch(out, scale)
    return f"seeded numpy generator (tpchgen-cli not found), scale factor {scale}"


def seeded_tpch(out: str, scale: float, seed: int = 42) -> None:
    """A TPC-H-shaped stand-in: the demo's columns with plausible, seeded values."""
    rng = np.random.default_rng(seed)
    n_cust, n_orders = max(10, int(150_000 * scale)), max(10, int(1_500_000 * scale))
    names = ["ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
             "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA",
             "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES"]
    pq.write_table(pa.table({"n_nationkey": pa.array(np.arange(25), pa.int64()), "n_name": names,
                             "n_regionkey": pa.array(np.arange(25) % 5, pa.int64())}), f"{out}/nation.parquet")
    pq.write_table(pa.table({
        "c_custkey": pa.array(np.arange(1, n_cust + 1), pa.int64()),
        "c_nationkey": pa.array(rng.integers(0, 25, n_cust), pa.int64()),
        "c_mktsegment": pa.array(np.array(["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"])[
            rng.integers(0, 5, n_cust)]),
    }), f"{out}/customer.parquet")
    odate = rng.integers(8035, 10591, n_orders).astype("int32")  # 1992-01-01 .. 1998-12-31
    pq.write_table(pa.table({
        "o_orderkey": pa.array(np.arange(1, n_orders + 1), pa.int64()),
        "o_custkey": pa.array(rng.integers(1, n_cust + 1, n_orders), pa.int64()),
        "o_orderdate": pa.array(odate, pa.date32()),
        "o_orderpriority": pa.array(np.array(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"])[
            rng.integers(0, 5, n_orders)]),
    }), f"{out}/orders.parquet")
    lines = rng.integers(1, 8, n_orders)
    okey = np.repeat(np.arange(1, n_orders + 1), lines)
    n = len(okey)
    ship = np.repeat(odate, lines) + rng.integers(1, 122, n).astype("int32")
    dec = pa.decimal128(15, 2)

    def money(x: np.ndarray) -> pa.Array:
        return pa.array(np.round(x, 2)).cast(pa.decimal128(38, 2)).cast(dec)

    pq.write_table(pa.table({
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
        "l_shipmode": pa.array(np.array(["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"])[
            rng.integers(0, 7, n)]),
    }), f"{out}/lineitem.parquet")


# -- 2. the Spark pipeline ---------------------------------------------------------------

def spark_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this interpreter
    from pyspark.sql import SparkSession

    from lancelot.spark import LanceDataSource

    spark = (SparkSession.builder.master("local[2]").appName("lancelot-demo")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(LanceDataSource)
    return spark


def transform(spark, src: str):
    """lineitem x orders x customer x nation, with derived columns, sorted by ship date within each file."""
    from pyspark.sql import functions as F

    def read(name):
        return spark.read.parquet(f"{src}/{name}.parquet")

    li, o, c, n = read("lineitem"), read("orders"), read("customer"), read("nation")
    revenue = F.col("l_extendedprice") * (1 - F.col("l_discount"))
    return (
        li.join(o, li.l_orderkey == o.o_orderkey)
        .join(c, o.o_custkey == c.c_custkey)
        .join(F.broadcast(n), c.c_nationkey == n.n_nationkey)
        .select(
            "l_orderkey", "l_linenumber", "o_orderdate", "o_orderpriority", "c_custkey", "c_mktsegment",
            F.col("n_name").alias("nation"), "l_shipmode", "l_returnflag", "l_quantity", "l_shipdate",
            revenue.cast("decimal(18,4)").alias("revenue"),
            (revenue * (1 + F.col("l_tax"))).cast("decimal(18,4)").alias("charge"),
            F.datediff("l_receiptdate", "l_shipdate").alias("ship_days"),
            (F.col("l_receiptdate") > F.col("l_commitdate")).alias("is_late"),
            F.year("o_orderdate").alias("order_year"),
        )
        .repartition(4)
        .sortWithinPartitions("l_shipdate")
    )


def report_query(df):
    """Revenue and lateness per nation for the shipments of 1995."""
    from pyspark.sql import functions as F

    return (df.filter((F.col("l_shipdate") >= "1995-01-01") & (F.col("l_shipdate") < "1996-01-01"))
            .groupBy("nation")
            .agg(F.sum("revenue").alias("revenue"), F.avg(F.col("is_late").cast("int")).alias("late_share"),
                 F.count("*").alias("lines"))
            .orderBy(F.desc("revenue")))


# -- 5. random access --------------------------------------------------------------------

def lance_take(files: list[str], indices: np.ndarray) -> pa.Table:
    """Rows at global ``indices`` of the files taken in order, with lancelot.LanceFile.take."""
    from lancelot import LanceFile

    opened = [LanceFile(f) for f in files]
    starts = np.cumsum([0] + [f.num_rows for f in opened])
    which = np.searchsorted(starts, indices, side="right") - 1
    parts = [opened[i].take(indices[which == i] - starts[i]) for i in np.unique(which)]
    for f in opened:
        f.close()
    return pa.concat_tables(parts)


def parquet_take(files: list[str], indices: np.ndarray) -> pa.Table:
    import pyarrow.dataset as ds

    return ds.dataset(files, format="parquet").take(pa.array(np.sort(indices)))


def data_files(d: str, suffix: str) -> list[str]:
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(suffix) and not f.startswith(("_", ".")))


def dir_size(d: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))


def print_layout(path: str) -> None:
    try:
        from lancelot import cli
    except ImportError:
        from lancelot import LanceFile

        _say(repr(LanceFile(path)))
        return
    cli.main(["inspect", path, "--pages", "1"])


def planned_rows(path: str) -> tuple[int, int]:
    """Rows the "lance" reader plans for the 1995 filter, asked the way Spark's pushdown planner asks."""
    import datetime as dt

    from pyspark.sql.datasource import GreaterThanOrEqual, LessThan

    from lancelot.spark import LanceDataSource

    source = LanceDataSource({"path": path, "filter_pushdown": "true"})
    reader = source.reader(source.schema())
    everything = sum(p.num_rows for p in reader.partitions())
    reader.pushFilters([GreaterThanOrEqual(("l_shipdate",), dt.date(1995, 1, 1)),
                        LessThan(("l_shipdate",), dt.date(1996, 1, 1))])
    return sum(p.num_rows for p in reader.partitions()), everything


def run(scale: float, workdir: str, take_rows: int, seed: int, version: str | None, spark=None) -> None:
    """The whole demo; with ``spark`` given, that session is used (and left running)."""
    timings = Timings()
    step: Callable[[str, str], object] = timings.measure
    src, out_lance, out_parquet = (os.path.join(workdir, d) for d in ("tpch", "lance", "parquet"))
    os.makedirs(src, exist_ok=True)
    t0 = time.perf_counter()
    how = generate_tpch(src, scale)
    _say(f"1. generated TPC-H ({how}) in {time.perf_counter() - t0:.1f}s: "
         + ", ".join(f"{t} {pq.ParquetFile(f'{src}/{t}.parquet').metadata.num_rows:,} rows" for t in TABLES))

    t0 = time.perf_counter()
    own = spark is None
    spark = spark_session() if own else spark
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    _say(f"2. Spark {spark.version} in local[2] started in {time.perf_counter() - t0:.1f}s; "
         "transform: lineitem x orders x customer x nation + revenue, charge, ship_days, is_late, order_year")
    df = transform(spark, src).cache()
    n_rows = df.count()

    lance_options = {"version": version} if version else {}
    writers = {"lance": lambda p: df.write.format("lance").options(**lance_options).mode("overwrite").save(p),
               "parquet": lambda p: df.write.mode("overwrite").parquet(p)}
    readers = {"lance": lambda p: spark.read.format("lance").load(p), "parquet": lambda p: spark.read.parquet(p)}
    outs = {"lance": out_lance, "parquet": out_parquet}
    results = {}
    for fmt in ("lance", "parquet"):
        with step("write (Spark)", fmt):
            writers[fmt](outs[fmt])
        back = readers[fmt](outs[fmt])
        with step("read all rows (Spark count)", fmt):
            assert back.count() == n_rows
        with step("scan + sum of revenue (Spark)", fmt):
            total = back.agg({"revenue": "sum"}).first()[0]
        with step("1995 report (filter + group by)", fmt):
            results[fmt] = [tuple(r) for r in report_query(back).collect()]
        results[fmt + "_total"] = total
    _say(f"3. wrote {n_rows:,} rows: lance {len(data_files(out_lance, '.lance'))} files "
         f"{dir_size(out_lance) / 2**20:.1f} MiB, parquet {len(data_files(out_parquet, '.parquet'))} files "
         f"{dir_size(out_parquet) / 2**20:.1f} MiB")
    planned, total_rows = planned_rows(out_lance)
    _say(f"4. read back through Spark: same results from both formats: "
         f"{results['lance'] == results['parquet'] and results['lance_total'] == results['parquet_total']}; "
         f"for the 1995 filter the Lance scan plans {planned:,} of {total_rows:,} rows (zone maps)")
    for nation, revenue, late, lines in results["lance"][:3]:
        _say(f"     {nation:<15} revenue {revenue:>18,.2f}  late {late:.1%}  lines {lines:,}")

    rng = np.random.default_rng(seed)
    idx = rng.choice(n_rows, size=min(take_rows, n_rows), replace=False)
    lance_files, parquet_files = data_files(out_lance, ".lance"), data_files(out_parquet, ".parquet")
    with step(f"take {len(idx):,} random rows", "lance"):
        got_l = lance_take(lance_files, idx)
    with step(f"take {len(idx):,} random rows", "parquet"):
        got_p = parquet_take(parquet_files, idx)
    same = sorted(got_l.column("l_orderkey").to_pylist()) == sorted(got_p.column("l_orderkey").to_pylist())
    _say(f"5. took {len(idx):,} random rows with lancelot.LanceFile.take and pyarrow.dataset take; "
         f"same rows: {same}")
    _say("\ntimings (wall clock, this machine):\n" + timings.table())
    _say(f"\n6. layout of {os.path.basename(lance_files[0])}:")
    print_layout(lance_files[0])
    df.unpersist()
    if own:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lancelot.demo", description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (0.1: 600k lineitems)")
    p.add_argument("--workdir", default=None, help="where data goes (default: a temporary directory)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--take", type=int, default=1000, help="random rows to take")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--version", default=None, help="Lance file version to write (default: lancelot's)")
    args = p.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="lancelot-demo-")
    try:
        run(args.scale, workdir, args.take, args.seed, args.version)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            _say(f"data kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
