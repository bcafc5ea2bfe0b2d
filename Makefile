# kafka-eos: `make run` (demo on a local broker) and `make test` (unit + integration suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# STAMP: the package with its test and bench extras (make test, check, lint, chaos, bench, ...);
# RUN_STAMP: the package alone (make run). Installing the extras installs the package too.
STAMP     := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: setup setup-run broker-jars run test check unit lint chaos matrix bench kafka-up kafka-down clean engine images compose jvm-archive

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test,bench]"
	touch $(STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(RUN_STAMP)

# Everything the tests and benchmarks use: the extras, Java, the broker jars, the schema registry.
setup: $(STAMP)
	$(BIN)/python -c "from kafka_eos.connectors.dev.java_env import java_binary, broker_classpath; java_binary(); broker_classpath()"
	$(BIN)/python -c "from kafka_eos.connectors.dev.registry_dist import registry_home; registry_home()"

# Only what the demo needs: the package without extras, Java, the broker jars (no schema registry).
# broker-jars needs no venv (connectors/dev/java_env.py as a script), so make run runs it beside pip
# (each takes about one core; 2026-11-28, fresh, under another job's load of 3-5: 50-68 s side by
# side, 53-65 s one after the other, 4 runs each; on an idle machine the jars' 7-13 s should hide
# behind pip: not measured, there was no idle window).
broker-jars:
	PYTHONPATH=. $(PYTHON) connectors/dev/java_env.py

setup-run: $(RUN_STAMP) broker-jars

# What a fresh machine's make run fetches and how long each part takes: README.md, "Two commands".
run:
	$(MAKE) --no-print-directory -j2 setup-run
	$(BIN)/kafka-eos demo

# A container engine (Docker, or podman's Docker API set up on demand) and the broker image built
# here, for the testcontainers tests; either may fail: those tests then skip and the JVM broker runs.
engine:
	-docker/engine.sh

images: setup engine
	-$(BIN)/python docker/images/build.py broker

# Where the time goes: each test's seconds (setup + call + teardown) in build/test-results/<run>.xml
# (pytest's JUnit XML), and printed before pytest's closing line: the 20 slowest tests and the
# seconds per test module (--timing-summary, conftest.py).
TIMING = --junitxml=build/test-results/$(1).xml --timing-summary=20

# Three pytest workers (pytest-xdist), whole modules each (--dist loadfile): a test's own processes
# wait on brokers and timeouts much of the time (2 cores, 2026-11-27: pytest 22 min 43 s on 3
# workers, 1.83 cores busy; 24 min 11 s on 2, 1.66 busy); TEST_WORKERS=1 runs them one at a time.
TEST_WORKERS ?= 3
test: setup engine images
	$(MAKE) --no-print-directory -j2 lint jvm-archive  # side by side: mypy and the archive builds
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not chaos and not long" --ignore=integration_tests/containers/test_compose.py \
		$(call TIMING,test)

# The end-to-end scenarios of minutes each (marked `long`: make test's short case of a kind whose
# longer cases are in make chaos, a user's first run, ten automatic restarts, the alerts at their
# defaults): CI runs them after make test, on the same workers (.ci/run).
long: setup engine images jvm-archive
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile -m "long and not chaos" integration_tests $(call TIMING,long)

# The suite's Spark drivers and brokers map class-data archives of their classes, built once into
# build/jvm (integration_tests/fast_jvms.py; ~40 s, then a spark-submit's driver takes ~5 core-s
# less and a broker ~1.5), and Spark's Python processes import pyspark compiled (a Spark home built
# there first, ~5 s: ~4.5 core-s less a job).
jvm-archive: $(STAMP)
	$(BIN)/python -m integration_tests.fast_jvms

# The inner edit-test loop: lint, then the unit tests (no broker, no Spark job). Measured on 2 cores,
# 2026-11-27: 31.6-33.4 s over 4 runs (1,356 tests), 61 s once later (1,383 tests).
check: lint
	$(BIN)/pytest -q tests

# docker/compose.yaml end to end with podman-compose on the images built here (broker, job,
# prometheus): ~5 min of image builds when cold, then 137 s (quiet) to 11 min (load 30+) with 5
# JVMs at once: over make test's 45 min budget, so a target of its own (docker/README.md).
compose: setup engine
	$(BIN)/pytest -q integration_tests/containers/test_compose.py

# ruff and mypy on the production packages; mypy reads them as the installed namespace
# kafka_eos.<folder> through a tree of links under build/lint.
PACKAGES := txn offsets config connectors serde
lint: $(STAMP)
	$(BIN)/ruff check kafka_eos $(PACKAGES)
	rm -rf build/lint && mkdir -p build/lint/kafka_eos
	for f in kafka_eos/*.py; do ln -s ../../../$$f build/lint/kafka_eos/; done
	for p in $(PACKAGES); do ln -s ../../../$$p build/lint/kafka_eos/$$p; done
	cd build/lint && ../../$(BIN)/mypy --config-file ../../pyproject.toml -p kafka_eos

unit: $(STAMP)
	$(BIN)/pytest -q tests

# One kind at a time: make chaos KIND=network (kinds: conftest.py KINDS, integration_tests/README.md;
# a marker expression works too: KIND="network or broker").
chaos: setup engine images jvm-archive
	$(BIN)/pytest -q -m "chaos$(if $(KIND), and ($(KIND)))" integration_tests $(call TIMING,chaos$(if $(KIND),-$(subst $() ,-,$(KIND))))

# The version matrix (issue 57): pyspark 4.0.x, 4.1.x and 4.2.x, each in build/matrix/venv-<version>,
# installed once: the unit suite and the integration cells marked `matrix` (crash cell, windows with
# late records, DLQ with run --once, a capped backlog across a driver kill, verify --recompute, the
# demo, Spark Connect, a windowed count on RocksDB with a refused backend change) on real brokers and Spark (integration_tests/matrix.py; results and figures in
# build/matrix/results.json). make test runs 4.3 whole. MATRIX_VERSIONS="4.1.4": one version.
MATRIX_VERSIONS ?=
matrix: setup jvm-archive
	$(BIN)/python -m integration_tests.matrix $(MATRIX_VERSIONS)

# Full figures: run on a quiet machine (3 interleaved rounds, 31 min on 2 cores on 2026-11-24). BENCH_ARGS=--quick: smoke run.
bench: setup
	$(BIN)/python -m bench.run $(BENCH_ARGS)

kafka-up: setup-run
	$(BIN)/kafka-eos dev kafka up

kafka-down:
	$(BIN)/kafka-eos dev kafka down

clean:
	rm -rf $(VENV) .pytest_cache
