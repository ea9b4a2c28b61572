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
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from praha.spark import package_zip, worker_python
from praha.spark.standalone import StandaloneCluster, spark_home, standalone_cluster

# a Spark job in a process of its own: its bounds are longer than the suite's 300 s default
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]

JOB = Path(__file__).with_name("pipeline_job.py")
ROOT = Path(__file__).resolve().parents[2]
#: what praha's reader and writer import on an executor (docs/spark.md, "Running on a Spark
#: cluster"); pyspark itself is not among them: Spark puts its own zip on the worker's path
EXECUTOR_DEPENDENCIES = ("confluent-kafka", "pyarrow", "numpy", "crc32c", "kafka-python", "cryptography")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g",
                            timeout=240) as c:
        yield c


def test_a_job_submitted_with_praha_as_py_files_reads_and_writes(cluster, pipeline, topic_name, tmp_path):
    """`spark-submit --py-files praha.zip job.py`, the wheel's own launcher, as docs/spark.md says."""
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    values = _fill(pipeline, src, dst)
    shipped = package_zip(str(tmp_path))
    # neither the driver nor the workers have praha on their path: only the --py-files zip
    report = _submit(cluster, ["--py-files", shipped], sys.executable, worker_python(sys.executable),
                     pipeline.bootstrap, src, dst, tmp_path)
    assert report["read"] == values
    assert report["executors"] == 2
    assert "praha.zip" in report["driver_praha"], report
    assert report["executor_praha"], report
    assert all("praha.zip" in f for f in report["executor_praha"]), report
    _check_output(pipeline, dst, values)


def test_a_job_submitted_with_a_packed_environment_in_spark_archives(cluster, pipeline, topic_name, tmp_path):
    """docs/spark.md's second route, for executors whose Python lacks the dependencies: a virtual
    environment with praha's wheel and the executors' dependencies, packed with venv-pack and
    shipped with `--archives praha-env.tar.gz#env`; every executor unpacks it and runs
    `./env/bin/python`. No --py-files: the executors find praha only in the archive."""
    src, dst = f"{topic_name}-in", f"{topic_name}-out"
    values = _fill(pipeline, src, dst)
    venv = _environment_with_praha(tmp_path / "praha-env")
    packed = tmp_path / "praha-env.tar.gz"
    subprocess.run([str(Path(sys.executable).with_name("venv-pack")), "--prefix", str(venv), "--output", str(packed),
                    "--quiet"], check=True, timeout=900)
    # client mode: the driver runs the environment as built here, the executors the unpacked archive;
    # Spark also starts the data source's planner on the driver with spark.pyspark.python, so
    # `./env` must name the environment where spark-submit runs too (docs/spark.md)
    python = str(venv / "bin" / "python")
    (tmp_path / "env").symlink_to(venv)
    report = _submit(cluster, ["--archives", f"{packed}#env", "--conf", "spark.pyspark.python=./env/bin/python",
                               "--conf", f"spark.pyspark.driver.python={python}"],
                     python, None, pipeline.bootstrap, src, dst, tmp_path)
    assert report["read"] == values
    assert report["executors"] == 2
    # the executors imported praha from the archive unpacked in their own work directories
    assert report["executor_praha"], report
    assert all("/env/lib/" in f and not f.startswith(str(tmp_path)) for f in report["executor_praha"]), report
    _check_output(pipeline, dst, values)


def _fill(pipeline, src: str, dst: str) -> list[str]:
    pipeline.create_topic(src, 2, 3)
    pipeline.create_topic(dst, 2, 3)
    values = [f"w-{i:03d}" for i in range(300)]
    pipeline.produce(src, [{"value": v.encode()} for v in values])
    return values


def _check_output(pipeline, dst: str, values: list[str]) -> None:
    got = pipeline.values(dst, 2 * len(values))
    assert sorted(got) == sorted([v.upper() for v in values] + [f"s-{v}" for v in values])


def _submit(cluster: StandaloneCluster, shipping: list[str], driver_python: str, executor_python: str | None,
            bootstrap: str, src: str, dst: str, work: Path) -> dict:
    """pipeline_job.py through the wheel's `spark-submit`, as a user runs a job; its report."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update({"PYSPARK_DRIVER_PYTHON": driver_python, "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_HOME": str(spark_home())})
    if executor_python:
        env["PYSPARK_PYTHON"] = executor_python
    done = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url, *shipping,
         "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.cores.max=2", "--conf", "spark.executor.memory=512m",
         "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.python.authenticate.socketTimeout=120s",
         str(JOB), "submitted", bootstrap, src, dst, str(work)],
        capture_output=True, text=True, timeout=1800, env=env, cwd=work)
    (work / "spark-submit.out").write_text(done.stdout)
    (work / "spark-submit.err").write_text(done.stderr)
    errors = [line for line in done.stderr.splitlines() if "Error" in line and not line.lstrip().startswith("at ")]
    assert done.returncode == 0, "\n".join([done.stdout[-1500:], *errors[:20]])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _environment_with_praha(venv: Path) -> Path:
    """A fresh virtual environment with praha's wheel (built from this checkout, as docs/spark.md
    says) and the executors' dependencies at the versions pyproject.toml pins. pip runs away from
    the checkout and its PYTHONPATH, which would make it find praha "already installed"."""
    pins = {re.split(r"[=<>\[ ]", d, maxsplit=1)[0]: d
            for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    wheels = venv.parent / "dist"
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(*cmd: str) -> None:
        subprocess.run(cmd, check=True, timeout=1800, env=clean, cwd=venv.parent)

    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT))
    run(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    run(python, "-m", "pip", "install", "--quiet", "--no-deps", *map(str, wheels.glob("praha-*.whl")))
    run(python, "-m", "pip", "install", "--quiet", "--no-warn-conflicts",
        *(pins[name] for name in EXECUTOR_DEPENDENCIES))
    run(python, "-c", f"import praha; assert praha.__file__.startswith({str(venv)!r}), praha.__file__")
    return venv
