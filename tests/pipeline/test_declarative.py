"""A declarative pipeline (`spark-pipelines run`, from the pyspark wheel) over a praha
topic: the example in docs/examples/praha-pipeline reads the topic into a streaming table
and counts pages in a materialized view; a second run picks up only what is new."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from praha.spark import worker_python
from praha.spark.standalone import spark_home

# a Spark job in a process of its own: its bounds are longer than the suite's 300 s default
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "praha-pipeline"


def _table(project: Path, name: str) -> list[dict]:
    import pyarrow.parquet as pq

    paths = [p for p in (project / "spark-warehouse" / name).rglob("*.parquet")]
    assert paths, f"no data files for {name} under {project / 'spark-warehouse'}"
    return [r for p in paths for r in pq.read_table(p).to_pylist()]


@pytest.mark.skip(reason=(
    "pyspark 4.3's `spark-pipelines run` fails in its own client: the server streams the Python data "
    "source's accumulator updates back as observed metrics (`__python_accumulator__`), and "
    "SparkConnectClient.execute_command_as_iterator raises UNKNOWN_RESPONSE on any response that is "
    "not a dict (seen 26 Nov 2026 on the first run; see docs/spark.md)"))
def test_streaming_table_and_materialized_view_from_a_topic(pipeline, topic_name, tmp_path):
    pipeline.create_topic(topic_name, 2, 3)
    pages = [f"page-{i % 4}" for i in range(200)]
    pipeline.produce(topic_name, [{"key": p.encode(), "value": b"v%d" % i} for i, p in enumerate(pages)])
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    spec = (project / "spark-pipeline.yml").read_text()
    spec = (spec.replace("file:///tmp/praha-pipeline-storage", f"file://{tmp_path / 'storage'}")
            .replace("127.0.0.1:9092", pipeline.bootstrap).replace("praha.topic: pageviews",
                                                                   f"praha.topic: {topic_name}"))
    (project / "spark-pipeline.yml").write_text(spec)
    home = spark_home()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": worker_python(sys.executable),
           "PYTHONPATH": str(ROOT)}

    def run() -> None:
        done = subprocess.run([str(home / "bin" / "spark-pipelines"), "run"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]

    run()
    assert len(_table(project, "pageviews_raw")) == 200
    assert {r["page"]: r["count"] for r in _table(project, "pageviews_per_page")} == dict(Counter(pages))
    more = [f"page-{i % 2}" for i in range(50)]
    pipeline.produce(topic_name, [{"key": p.encode(), "value": b"w%d" % i} for i, p in enumerate(more)])
    run()
    raw = _table(project, "pageviews_raw")
    assert len(raw) == 250
    assert len({(r["partition"], r["offset"]) for r in raw}) == 250
    assert {r["page"]: r["count"] for r in _table(project, "pageviews_per_page")} == dict(Counter(pages + more))
