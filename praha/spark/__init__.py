"""PySpark data source for praha topics: `praha.spark.register(spark)`, then `format("praha")`.

Same schema and options as Spark's own Kafka source (see docs/spark.md), pure Python
(PySpark's Python Data Source API), batch and streaming, read and write. Writes are
at-least-once.
"""
from __future__ import annotations

from typing import Any

from praha.spark.source import PrahaDataSource

__all__ = ["PrahaDataSource", "register", "local_session", "session", "package_zip", "worker_python"]


def register(spark: Any) -> None:
    """Make `format("praha")` available in this SparkSession."""
    spark.dataSource.register(PrahaDataSource)


_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = spark %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = {level}
"""


def local_session(app_name: str = "praha", cores: int = 2, task_retries: int = 4, quiet: bool = False,
                  **conf: str) -> Any:
    """A local SparkSession on loopback with the praha source registered.

    `local[cores,task_retries]`: plain `local[N]` never retries a failed task, and the
    praha sink relies on task retries to be at-least-once. Workers run this interpreter
    (PYSPARK_PYTHON), so they can import praha. `quiet` keeps Spark's JVM to fatal
    messages and hides the progress bar (for commands whose output is a report)."""
    return session(f"local[{cores},{task_retries}]", app_name, quiet=quiet,
                   conf={"spark.sql.shuffle.partitions": str(cores),
                         "spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS, **conf})


#: the local JVM compiles with the quick JIT tier only: praha's local jobs (the analytics on
#: state-change logs, the pipeline's small batches) are short, and the optimising tier's
#: compiler threads cost more CPU than they return (the analytics command: 53 CPU-seconds
#: instead of 91, measured side by side); a long job on a real cluster keeps the JVM's default
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def session(master: str, app_name: str = "praha", quiet: bool = False, py_files: list[str] | None = None,
            conf: dict[str, str] | None = None, python: str | None = None) -> Any:
    """A SparkSession on `master` (`local[...]`, `spark://HOST:PORT`) with the praha source
    registered. `py_files` (a praha wheel or zip) are shipped to the executors, as
    `spark-submit --py-files` does, for clusters whose Python lacks praha. `python` is the
    workers' interpreter (PYSPARK_PYTHON, unless set): by default, for a local master,
    this one through `worker_python`; for a cluster, this interpreter's path."""
    import os
    import sys
    import tempfile

    if python is None:
        python = worker_python(sys.executable) if master.startswith("local") else sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", python)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )
    if py_files:
        builder = builder.config("spark.submit.pyFiles", ",".join(py_files))
    if quiet:
        fd, path = tempfile.mkstemp(prefix="praha-log4j2-", suffix=".properties")
        with os.fdopen(fd, "w") as f:
            f.write(_QUIET_LOG4J.replace("{level}", "fatal"))
        import atexit

        atexit.register(_remove_if_there, path)
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{path}") \
            .config("spark.ui.showConsoleProgress", "false")
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL" if quiet else "ERROR")
    register(spark)
    return spark


#: Python processes Spark may start directly (`python -m MODULE`) and then wait a fixed 10 s
#: for (not configurable in Spark 4.3: `PythonWorkerFactory.createSimpleWorker`): in 4.3
#: the streaming source's runner (`...python_streaming_source_runner`, at a query's start);
#: the data source planners (`pyspark.sql.worker.*`) come from `pyspark.daemon`, whose
#: forks get 60 s, unless a configuration turns the daemon off.
PLANNER_MODULES = ("pyspark.sql.worker.", "pyspark.sql.streaming.python_streaming_")

#: how much CPU priority the planners get over the machine's other processes (`nice -n`)
PLANNER_NICENESS = -10

_LAUNCHER = """#!/bin/sh
# praha's PYSPARK_PYTHON for {python}. Spark puts its wheel's python/lib/pyspark.zip first
# on a worker's path: it holds no compiled bytecode, so every worker compiled pyspark's
# sources again (2 CPU-s; 16 s at a load of 30 on 2 cores, past Spark's 10 s connect-back
# wait). The same wheel is installed for this interpreter, compiled, so its zips are
# dropped from the path. Spark's planner workers also start at a higher CPU priority
# (without the right to raise it, nice warns and runs the command unchanged).
set -f
kept=""
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    {zips}) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
export PYTHONPATH="$kept"
case "$*" in
  {cases}) exec nice -n {niceness} "{python}" "$@" ;;
esac
exec "{python}" "$@"
"""


def worker_python(python: str) -> str:
    """A launcher to use as PYSPARK_PYTHON on this machine: runs `python` (which must have
    this pyspark installed) with pyspark imported from its installed, compiled copy instead
    of the wheel's zip, and Spark's planner workers (PLANNER_MODULES) at PLANNER_NICENESS.
    Without it, a Python worker on a loaded 2-core machine can take more than the 10 s
    Spark gives it, which fails a streaming query at its start ("Python worker failed to
    connect back"). Written once per interpreter and pyspark; returns its path."""
    import hashlib
    import os
    import tempfile

    import pyspark

    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    libs = sorted({lib, os.path.realpath(lib)})  # Spark may name it by its real path
    text = _LAUNCHER.format(cases="|".join(f"*-m\\ {m}*" for m in PLANNER_MODULES), niceness=PLANNER_NICENESS,
                            python=python, zips="|".join(f'"{d}/pyspark.zip"|"{d}"/py4j-*-src.zip' for d in libs))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"praha-spark-python-{digest}")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".praha-spark-python-")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)  # atomic: concurrent sessions see a whole file or none
    return path


def package_zip(directory: str) -> str:
    """praha's Python package as a zip for `--py-files` / `spark.submit.pyFiles` (the same
    layout as praha's wheel: the `praha` folder at the root). Returns its path."""
    import os
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = os.path.join(directory, "praha.zip")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                z.write(path, str(path.relative_to(root.parent)))
    return out


def _remove_if_there(path: str) -> None:
    import os

    if os.path.exists(path):
        os.remove(path)
