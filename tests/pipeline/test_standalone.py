"""The praha source and sink on a real Spark standalone cluster: a master and two workers
started from the pyspark wheel's launcher on loopback (`praha.spark.standalone`),
executors in their own JVMs with their own Python workers. The driver is a process of its
own, started by the wheel's `spark-submit` with praha as a zip in `--py-files`; neither
the driver's nor the executors' environment has a path to praha, so the read and the
write work only if the shipping does.

The whole pipeline suite runs on such a cluster with `make test-spark-cluster`
(PRAHA_SPARK_MASTER=standalone)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praha.spark import package_zip, worker_python
from praha.spark.standalone import StandaloneCluster, spark_home, standalone_cluster

# a Spark job in a process of its own: its bounds are longer than the suite's 300 s default
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

JOB = Path(__file__).with_name("pipeline_job.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g",
                            timeout=240) as c:
        yield c


def test_a_job_submitted_with_praha_as_py_files_reads_and_writes(cluster, pipeline, topic_name, tmp_path):
    """`spark-submit --py-files praha.zip job.py`, the wheel's own launcher, as docs/spark.md says."""
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    pipeline.create_topic(src, 2, 3)
    pipeline.create_topic(dst, 2, 3)
    values = [f"w-{i:03d}" for i in range(300)]
    pipeline.produce(src, [{"value": v.encode()} for v in values])
    shipped = package_zip(str(tmp_path))
    # neither the driver nor the workers have praha on their path: only the --py-files zip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"PYSPARK_PYTHON": worker_python(sys.executable), "PYSPARK_DRIVER_PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(spark_home())})
    done = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url, "--py-files", shipped,
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.cores.max=2", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.python.authenticate.socketTimeout=120s",
         str(JOB), "submitted", pipeline.bootstrap, src, dst, str(tmp_path)],
        capture_output=True, text=True, timeout=1800, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["read"] == values
    assert report["executors"] == 2
    assert "praha.zip" in report["driver_praha"], report
    assert report["executor_praha"], report
    assert all("praha.zip" in f for f in report["executor_praha"]), report
    got = pipeline.values(dst, 2 * len(values))
    assert sorted(got) == sorted([v.upper() for v in values] + [f"s-{v}" for v in values])
