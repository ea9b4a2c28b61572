# praha — `make run` starts the showcase, `make test` runs the tests. Needs Python 3.11+ and Java 17.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: net-tools lint run test test-unit test-integration bench bench-groups chaos clean cluster-down help

help:
	@echo "make run    set up .venv, start ZooKeeper and a 3-broker local cluster, run the main job"
	@echo "make test   set up .venv and run the test suite"
	@echo "make lint   ruff and mypy (CI runs it before the tests)"
	@echo "make bench  run the benchmarks in bench/ (slow)"
	@echo "make bench-groups  only the consumer-group benchmarks (issue 11)"

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

run: $(STAMP)
	$(PY) -m praha.showcase

# ruff (pyflakes, import order, bugbear) and mypy (strict on controller, log, protocol, zk)
lint: $(STAMP)
	$(VENV)/bin/ruff check praha tests bench
	$(VENV)/bin/mypy praha

# Debian tools the network-fault tests drive: nftables (iproute2 is in Debian's base). Only as
# root: without it the namespace tests skip, saying so
net-tools:
	@command -v nft >/dev/null || [ "$$(id -u)" != 0 ] || { apt-get update -qq && apt-get install -y -qq nftables >/dev/null; }

test: $(STAMP) $(QUIX_STAMP) net-tools
	$(PY) -m pytest -q -m "not slow" tests

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

test-integration: $(STAMP) $(QUIX_STAMP)
	$(PY) -m pytest -q -m "integration and not slow" tests

# every benchmark; each prints its figures and updates its section of bench/RESULTS.md
GROUP_BENCHES := rebalance offset_commit coordinator_failover
BENCHES := failover topic_create controlled_shutdown broker_failure preferred_election reassignment produce consume spark log_append compaction connections $(GROUP_BENCHES)
bench: $(STAMP)
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

# only the consumer-group benchmarks of issue 11 (a few minutes)
bench-groups: $(STAMP)
	@for b in $(GROUP_BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

# chaos: 1,000 faults over seeded campaigns (several hours): 4 on loopback (200 faults, one on a
# 3-node ZooKeeper ensemble), then 20 with every node on a host of its own (--netns, root only:
# 800 faults mixing partition, one_way and flaky_link with the process and disk faults; every
# other one on an ensemble), then the slow regression replays; every campaign runs even if one
# fails, the target fails if any did. Seeds, counts and plots: bench/RESULTS.md
CHAOS_CAMPAIGNS := "5 50 101 1" "5 50 102 3" "3 50 103 1" "5 50 104 1"
CHAOS_NETNS_SEEDS := 201 202 203 204 205 206 207 208 209 210 211 212 213 214 215 216 217 218 219 220
chaos: $(STAMP) net-tools
	@status=0; for spec in $(CHAOS_CAMPAIGNS); do set -- $$spec; \
	  $(PY) -m praha chaos --brokers $$1 --faults $$2 --seed $$3 --zk-ensemble $$4 --dir .praha/chaos --json \
	    || status=1; \
	done; for seed in $(CHAOS_NETNS_SEEDS); do \
	  $(PY) -m praha chaos --netns --brokers 5 --faults 40 --seed $$seed --zk-ensemble $$((1 + 2 * (seed % 2 == 0))) \
	    --dir .praha/chaos --json || status=1; \
	done; $(PY) -m pytest -q -m slow tests/chaos || status=1; exit $$status

cluster-down: $(STAMP)
	$(PY) -m praha cluster down

clean:
	rm -rf $(VENV) .venv-quix .praha build *.egg-info .pytest_cache
