"""The praha source and sink from a Spark Connect client: a Connect server started from the
pyspark wheel (the class `sbin/start-connect-server.sh` starts, from
`jars/spark-connect_2.13-4.3.0.jar`), a client process that registers the data source
and reads and writes topics through the server."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praha.spark import worker_python
from praha.spark.standalone import spark_home
from praha.testing.cluster import wait_for

# a Spark job in a process of its own: its bounds are longer than the suite's 300 s default
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

CLIENT = Path(__file__).with_name("pipeline_job.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory) -> Iterator[str]:
    home = spark_home()
    assert (home / "jars" / "spark-connect_2.13-4.3.0.jar").is_file()
    port = _free_port()
    root = tmp_path_factory.mktemp("spark-connect")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": worker_python(sys.executable), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    log = open(root / "server.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--name", "Spark Connect server", "--master", "local[2,4]",
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=2"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=root)
    try:
        wait_for(lambda: server.poll() is not None or _listening(port), 180, interval=0.5,
                 what="the Spark Connect server to listen")
        assert server.poll() is None, (root / "server.log").read_text()[-3000:]
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(server.pid, signal.SIGKILL)  # the group it leads: its Python workers
        except ProcessLookupError:
            pass
        server.wait(10)
        log.close()


def test_a_connect_client_reads_and_writes_topics(connect_server, pipeline, topic_name, tmp_path):
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    pipeline.create_topic(src, 2, 3)
    pipeline.create_topic(dst, 2, 3)
    values = [f"c-{i:03d}" for i in range(120)]
    pipeline.produce(src, [{"value": v.encode(), "key": b"k%d" % (i % 3)} for i, v in enumerate(values)])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, str(CLIENT), connect_server, pipeline.bootstrap, src, dst,
                           str(tmp_path)], capture_output=True, text=True, timeout=1800, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["read"] == values
    got = pipeline.values(dst, 2 * len(values))
    assert sorted(got) == sorted([v.upper() for v in values] + [f"s-{v}" for v in values])
