"""A Spark job run as its own process, as a user's would be (by test_connect.py and
test_standalone.py): registers the praha data source, reads a topic in batch and as a
stream, writes what it read, upper-cased, to another topic; prints what it read as JSON.

`sc://HOST:PORT`: a Spark Connect client. `spark://HOST:PORT`: a driver on a standalone
cluster, praha shipped to the executors as a zip (`spark.submit.pyFiles`, what
`--py-files` sets). `submitted`: started by `spark-submit --master ... --py-files ...`,
as a user runs a job. Both report where the driver and the executors imported praha from.

Usage: python pipeline_job.py URL BOOTSTRAP SOURCE_TOPIC TARGET_TOPIC WORK_DIR
"""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from praha.spark import PrahaDataSource


def main(url: str, bootstrap: str, source: str, target: str, work: str) -> None:
    report: dict[str, object] = {}
    if url.startswith("sc://"):
        spark = SparkSession.builder.remote(url).getOrCreate()
        assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
        spark.dataSource.register(PrahaDataSource)
    else:
        if url == "submitted":  # by spark-submit, which gave the master, the conf and --py-files
            spark = SparkSession.builder.getOrCreate()
            spark.dataSource.register(PrahaDataSource)
        else:
            from praha.spark import package_zip, session, worker_python

            spark = session(url, "praha-pipeline-job", py_files=[package_zip(work)],
                            python=worker_python(sys.executable),  # the cluster is on this machine
                            conf={"spark.cores.max": "2", "spark.executor.memory": "512m"})
        sc = spark.sparkContext
        report["driver_praha"] = __import__("praha").__file__
        import time

        deadline = time.monotonic() + 300  # both workers' executors registered (they start in parallel)
        while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        report["executor_praha"] = sorted(set(sc.parallelize(range(4), 4).map(
            lambda _: __import__("praha").__file__).collect()))
        report["executors"] = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
    checkpoint = f"{work}/ck"
    df = spark.read.format("praha").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source).load()
    rows = sorted(r.value.decode() for r in df.select("value").collect())
    (df.selectExpr("key", "upper(cast(value as string)) as value").write.format("praha").mode("append")
     .option("kafka.bootstrap.servers", bootstrap).option("topic", target).save())
    q = (spark.readStream.format("praha").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source)
         .option("startingOffsets", "earliest").load().selectExpr("key", "concat('s-', cast(value as string)) as value")
         .writeStream.format("praha").option("kafka.bootstrap.servers", bootstrap).option("topic", target)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()
    print(json.dumps({"read": rows, **report}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
