"""Spark sessions for the tests: one shared session per mode (the package's tests import these).

* ``local``: ``local[2]``, in this process (``spark_session()``);
* ``local-cluster``: ``local-cluster[2,1,1024]``, a master and two workers in the driver's JVM
  and two executor JVMs, each with its own Python workers: what is pickled to executors and what
  runs where is exercised as on a cluster.  One JVM holds one SparkContext, so switching between
  ``local`` and ``local-cluster`` stops the other (tests are grouped by mode to switch rarely);
* ``connect``: a Spark Connect server (``org.apache.spark.sql.connect.service.SparkConnectServer``
  from pyspark's own jars, ``local[2]``) started once per test session in a child process, and a
  client session in this process: the data source is pickled by the client and runs in the
  server's Python workers.  pyspark routes ``pyspark.sql.functions`` by an environment variable,
  so ``connect_mode()`` sets it only while a Connect test runs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONNECT_ENV = "SPARK_CONNECT_MODE_ENABLED"
_classic: dict = {}  # master -> the running classic session (at most one)
_connect: dict = {}


def _python_env() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers must use this virtualenv
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # workers import benchmarks/ too
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != ROOT]
    )


def classic_session(master: str = "local[2]"):
    """The shared classic session on ``master`` (another classic session running is stopped first)."""
    if master in _classic:
        return _classic[master]
    for other in list(_classic):
        _classic.pop(other).stop()
    _python_env()
    from pyspark.sql import SparkSession

    import lancelot.spark

    builder = (
        SparkSession.builder.master(master)
        .appName("lancelot-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "America/Los_Angeles")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.sql.timeType.enabled", "true")  # TIME columns (Arrow time32/time64)
    )
    if master.startswith("local-cluster"):
        builder = builder.config("spark.executor.memory", "512m").config("spark.task.maxFailures", "2")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lancelot.spark.register(spark, filter_pushdown=False)
    _classic[master] = spark
    return spark


def spark_session():
    """The shared local[2] session, "lance" registered, the pushdown setting left off."""
    return classic_session("local[2]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_connect_server(timeout: float = 120.0) -> tuple[str, subprocess.Popen, str]:
    """A Spark Connect server on a free local port: (``sc://`` URL, its process, its log file)."""
    import pyspark

    _python_env()
    home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    logdir = tempfile.mkdtemp(prefix="lancelot-connect-")
    log = os.path.join(logdir, "server.log")
    env = dict(os.environ, SPARK_HOME=home, SPARK_CONNECT_MODE="0")
    env.pop(CONNECT_ENV, None)
    cmd = [
        os.path.join(home, "bin", "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "lancelot-connect-tests",
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        "spark.sql.ansi.enabled=true",
        "--conf",
        "spark.sql.session.timeZone=America/Los_Angeles",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited ({proc.returncode}); see {log}")
        with open(log, "rb") as f:
            if b"Spark Connect server started" in f.read():
                return f"sc://127.0.0.1:{port}", proc, log
        time.sleep(0.5)
    stop_process(proc)
    raise RuntimeError(f"the Spark Connect server did not start in {timeout:.0f}s; see {log}")


def stop_process(proc: subprocess.Popen) -> None:
    """Stop the server we started (its process group: spark-submit's java and its Python workers)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 15)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(10)


def connect_session():
    """A client session of the shared Connect server (started on first use, stopped at exit)."""
    if "session" in _connect:
        return _connect["session"]
    url, proc, log = start_connect_server()
    _connect["proc"] = proc

    def stop() -> None:
        s = _connect.pop("session", None)
        if s is not None:
            with contextlib.suppress(Exception):
                s.stop()
        stop_process(proc)
        shutil.rmtree(os.path.dirname(log), ignore_errors=True)

    atexit.register(stop)
    _connect["stop"] = stop
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    import lancelot.spark

    had = CONNECT_ENV in os.environ
    spark = RemoteSparkSession.builder.remote(url).getOrCreate()
    if not had:
        os.environ.pop(CONNECT_ENV, None)
    lancelot.spark.register(spark, filter_pushdown=False)
    _connect["session"] = spark
    return spark


def stop_connect() -> None:
    if "stop" in _connect:
        _connect.pop("stop")()


@contextlib.contextmanager
def connect_mode():
    """pyspark.sql.functions and UDFs build Connect expressions while this is active."""
    had = os.environ.get(CONNECT_ENV)
    os.environ[CONNECT_ENV] = "1"
    try:
        yield
    finally:
        if had is None:
            os.environ.pop(CONNECT_ENV, None)
        else:
            os.environ[CONNECT_ENV] = had


atexit.register(lambda: [s.stop() for s in _classic.values()])
