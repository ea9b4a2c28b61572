"""PySpark data source for praha topics: `praha.spark.register(spark)`, then `format("praha")`.

Same schema and options as Spark's own Kafka source (see docs/spark.md), pure Python
(PySpark's Python Data Source API), batch and streaming, read and write. Writes are
at-least-once.
"""
from __future__ import annotations

from typing import Any

from praha.spark.source import PrahaDataSource

__all__ = ["PrahaDataSource", "register", "local_session", "session", "package_zip"]


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
            conf: dict[str, str] | None = None) -> Any:
    """A SparkSession on `master` (`local[...]`, `spark://HOST:PORT`) with the praha source
    registered. `py_files` (a praha wheel or zip) are shipped to the executors, as
    `spark-submit --py-files` does, for clusters whose Python lacks praha."""
    import os
    import sys
    import tempfile

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
