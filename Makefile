# praha — `make run` starts the showcase (examples/showcase.py), `make test` runs the tests. Needs Python 3.11+ and Java 17.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: docs bytecode wire wire-check lint run test test-setup fuzz test-unit test-integration tools test-kafka-tools test-consumer-protocol test-share-groups test-bench test-registry test-zk-security test-spark test-spark-cluster bench bench-groups chaos chaos-secure-short chaos-share clean cluster-down help

help:
	@echo "make run    set up .venv, start ZooKeeper and a 3-broker local cluster, run the main job"
	@echo "make test   set up .venv, install the Debian tools the tests drive, run the test suite"
	@echo "make tools  only install the Debian tools the tests drive (apt-get; sudo when not root)"
	@echo "make lint   ruff and mypy (CI runs it before the tests)"
	@echo "make fuzz   every property test with all its examples (make test draws a third)"
	@echo "make docs   write docs/configuration.md from the settings tables (praha/config/)"
	@echo "make test-zk-security  the slow ZooKeeper-security tests (rolling migration under load, forged writes)"
	@echo "make test-spark  the slow Spark tests: secure cluster with a leader kill, standalone cluster, Spark Connect"
	@echo "make test-spark-cluster  every pipeline test on a Spark standalone cluster (master + 2 workers)"
	@echo "make chaos-secure-short  one short secure chaos campaign (--netns --secure --workload txn, 6 faults; root)"
	@echo "make chaos-share  one short chaos campaign with the share-group workload (--workload share, 6 faults)"
	@echo "make bench  run the benchmarks in bench/ (slow)"
	@echo "make bench-groups  only the consumer-group benchmarks (issue 11)"
	@echo "make test-registry  the Schema Registry tests, slow ones included"
	@echo "make test-consumer-protocol  KIP-848 consumer groups with confluent-kafka (group.protocol=consumer), slow"
	@echo "make test-share-groups  KIP-932 share groups with confluent-kafka's ShareConsumer, slow"
	@echo "make test-bench  every bench script's --help and tiny real runs, the controller benches' rig included (slow)"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "praha needs Python 3.11+")'
	@command -v java >/dev/null || { echo "praha needs Java 17 (java on PATH) for the embedded ZooKeeper"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Quix Streams in a venv of its own (its confluent-kafka pin differs from the test one);
# the pins are pyproject.toml's `quix` extra, installed without praha itself
QUIX_STAMP := .venv-quix/.installed
$(QUIX_STAMP): pyproject.toml
	$(PYTHON) -m venv .venv-quix
	.venv-quix/bin/python -m pip install --quiet --upgrade pip
	.venv-quix/bin/python -m pip install --quiet $$($(PYTHON) -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["quix"]))')
	@touch $(QUIX_STAMP)

# praha's bytecode, compiled once: every broker, tool and client a test starts is a fresh
# Python process, and where PYTHONDONTWRITEBYTECODE is set (as on some CI images) each would
# otherwise compile praha's source again (about 0.7 CPU-seconds per process); compileall
# writes the caches regardless and skips what is current
bytecode: $(STAMP)
	@$(PY) -m compileall -q -j 0 praha tests bench examples

# docs/configuration.md is generated from the settings tables; a unit test keeps it in sync
docs: $(STAMP)
	$(PY) -m praha.config.docs docs/configuration.md

run: bytecode
	$(PY) examples/showcase.py

# praha's message definitions (praha/protocol/messages/*.wire): `wire` regenerates the codecs
# in praha/protocol/messages/gen/ (committed); `wire-check` compares the definitions with
# Apache Kafka's JSON (kafka-python's bundle of Kafka 4.1, and the apache/kafka mirror if present)
wire: $(STAMP)
	$(PY) -m praha.protocol.messages.generate
wire-check: $(STAMP)
	$(PY) tools/wire_check.py

# ruff (pyflakes, import order, bugbear) and mypy (strict on all of praha and the showcase)
lint: $(STAMP)
	$(VENV)/bin/ruff check praha tests bench tools examples
	$(VENV)/bin/mypy praha examples

# Debian packages the tests drive (kcat; chromium and its driver for the console's browser
# tests; nftables for the network faults), as PACKAGE:COMMAND (the command that shows it is there);
# `make tools` apt-gets the missing ones (with sudo when not root), `make test` and CI run it first
TEST_TOOLS := kcat:kcat chromium:chromium chromium-driver:chromedriver nftables:nft
# wait for another apt-get's lock (shared machines, CI images) instead of failing
APT_WAIT := -o DPkg::Lock::Timeout=600
tools:
	@missing=""; for tool in $(TEST_TOOLS); do \
	  command -v "$${tool#*:}" >/dev/null || missing="$$missing $${tool%%:*}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  command -v apt-get >/dev/null || { echo "the tests need these Debian packages (no apt-get here):$$missing"; exit 1; }; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing the Debian packages the tests need:$$missing"; \
	  $$sudo apt-get $(APT_WAIT) update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get $(APT_WAIT) install -y -qq $$missing >/dev/null; \
	fi

# the test files run in parallel (pytest-xdist), one worker per core; a file's tests stay
# together in one worker, longest files first (tests/conftest.py). PYTEST_WORKERS=0: serially
PYTEST_WORKERS ?= auto
PARALLEL = -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=60
# what the test runs need set up first: the test venv and praha's bytecode, Quix's venv, the
# Debian tools. They do not depend on one another, and pip and apt-get each keep about one
# core busy, so a sub-make runs them at once (on a fresh clone, about half the setup's time)
TEST_SETUP := bytecode $(QUIX_STAMP) tools
test-setup:
	@$(MAKE) --no-print-directory -j3 $(TEST_SETUP)
# property tests (hypothesis) draw a third of their examples here; `make fuzz` draws them all
test: test-setup
	PRAHA_FUZZ_SCALE=0.33 $(PY) -m pytest -q -m "not slow" $(PARALLEL) tests

# every property test (hypothesis) with its full count of examples (praha/testing/fuzz.py)
FUZZ_TESTS := $(shell grep -rl "from praha.testing.fuzz import" tests --include=*.py)
fuzz: bytecode
	PRAHA_FUZZ_SCALE=1 $(PY) -m pytest -q $(PARALLEL) $(FUZZ_TESTS)

test-unit: bytecode
	$(PY) -m pytest -q tests/unit

test-integration: test-setup
	$(PY) -m pytest -q -m "integration and not slow" $(PARALLEL) tests

# Kafka's tools by name (kafka-topics.sh, ...) with every form run as a process of its own;
# `make test` runs each tool once as a process and the other forms in-process
test-kafka-tools: bytecode
	PRAHA_TOOLS_AS_PROCESSES=1 $(PY) -m pytest -q tests/integration/test_kafka_tools.py

# Kafka 4's consumer group protocol (KIP-848, issue 22) with unmodified confluent-kafka consumers
# on a 3-broker cluster: leave/SIGKILL/join, coordinator failover, regex, admin, bad input (~4-5 min)
test-consumer-protocol: bytecode
	$(PY) -m pytest -q -m slow tests/integration/test_consumer_group_protocol.py

# KIP-932 share groups against a real cluster (ShareConsumer processes, a leader SIGKILLed): minutes
test-share-groups: bytecode
	$(PY) -m pytest -q -m slow tests/integration/test_share_groups.py

# every bench script starts (--help) and two run tiny real measurements, one on the controller
# benches' rig (embedded ZooKeeper, stand-ins, a real broker): under a minute
test-bench: bytecode
	$(PY) -m pytest -q tests/test_bench_scripts.py

# the Schema Registry's tests, the slow ones too (a secure cluster; Quix Streams with a registry serializer)
test-registry: bytecode $(QUIX_STAMP)
	$(PY) -m pytest -q tests/unit/test_registry_rules.py tests/unit/test_registry_state.py \
	  tests/integration/test_schema_registry.py tests/integration/test_schema_registry_secure.py

# ZooKeeper security's slow tests: a running 3-broker cluster secured by a rolling restart under
# load (nothing lost), and a chaos campaign of forged ZooKeeper writes (docs/security.md)
test-zk-security: bytecode
	$(PY) -m pytest -q -m slow tests/integration/test_zookeeper_security_migration.py tests/chaos/test_chaos_secure_zookeeper.py

# the long Spark runs (issue 24): exactly-once through a leader kill on a --secure cluster,
# a job on a standalone cluster with praha shipped as --py-files, a Spark Connect client
test-spark: bytecode
	$(PY) -m pytest -q -m slow tests/pipeline

# every pipeline test with the shared SparkSession on a standalone cluster (two 1-core
# workers started from the pyspark wheel on loopback) instead of local[2]; 30 minutes a
# test (tests/pipeline/conftest.py); ~45 min on the shared 2-core machine at load 13-39
test-spark-cluster: bytecode
	PRAHA_SPARK_MASTER=standalone $(PY) -m pytest -q -m "not slow" tests/pipeline

# every benchmark; each prints its figures and updates its section of bench/RESULTS.md
GROUP_BENCHES := rebalance offset_commit coordinator_failover
BENCHES := console failover topic_create controlled_shutdown broker_failure preferred_election reassignment produce consume spark log_append compaction connections registry $(GROUP_BENCHES)
bench: bytecode
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

# only the consumer-group benchmarks of issue 11 (a few minutes)
bench-groups: bytecode
	@for b in $(GROUP_BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

# chaos: at least 1,000 faults, every one with the transactional workload (transactional
# producers of both libraries, read_committed/read_uncommitted readers, consume-transform-produce,
# the history judged by Jepsen's anomaly checker), over the seeded campaigns of praha/chaos/suite.py
# (several hours): 4 on loopback (200 faults), 20 with every node on a host of its own (--netns,
# root only: 800 faults, the network faults among them; even seeds on a 3-node ZooKeeper ensemble,
# seeds 203, 207, ... --secure), every fault kind among them (tests/chaos/test_chaos_suite.py);
# then the slow regression replays and the secure cluster on hosts of their own. Every campaign
# runs even if one fails; the target fails if any did. Seeds, counts and plots: bench/RESULTS.md
chaos: bytecode tools
	@status=0; $(PY) -m praha.chaos.suite --dir .praha/chaos || status=1; \
	$(PY) -m pytest -q -m slow tests/chaos tests/integration/test_netns_cluster.py || status=1; exit $$status

# one short secure campaign (issue 20): --netns --secure --workload txn, 6 faults, every client
# on SASL_SSL/SCRAM as a principal of its own with ACLs on (a few minutes; root for the namespaces)
chaos-secure-short: bytecode tools
	$(PY) -m pytest -q -m slow tests/chaos/test_chaos_secure_short.py

# one short campaign with the share-group workload (issue 23): 3 brokers, 6 faults, ShareConsumer
# members SIGKILLed, every share invariant checked (about 4 minutes)
chaos-share: bytecode tools
	$(PY) -m pytest -q -m slow tests/chaos/test_chaos_share.py

cluster-down: $(STAMP)
	$(PY) -m praha cluster down

clean:
	rm -rf $(VENV) .venv-quix .praha build *.egg-info .pytest_cache
