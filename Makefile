# Kafka Retention Operator: every workflow is a target here (see CONTRIBUTING.md).
# `make demo` and `make test` each run `setup` first, so on a fresh machine either one
# alone does everything; downloads and builds are cached under ~/.cache/kafka-retention.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEVSTACK := PYTHONPATH=hack $(PY) -m devstack
PYTEST_ARGS ?=
# Bytecode is written (into __pycache__, which git ignores) even where the environment
# asks Python not to: otherwise every process a run starts (operators, pytest workers,
# CLI runs, Spark's Python workers) compiles each module it imports again, kopf's and
# the Kubernetes client's included: an operator's imports took 1.7 CPU-s, 0.8 with them.
unexport PYTHONDONTWRITEBYTECODE
# The cache every checkout shares (hack/devstack/paths.py), here for mypy's: a clean clone
# checks in 3-13 s rather than 40, since mypy trusts a cached module whose source hash
# matches, whatever its path and mtime.
CACHE := $(shell PYTHONPATH=hack $(PYTHON) -c 'from devstack import paths; print(paths.cache_dir())')

.PHONY: help setup venv dev-up dev-down dev-status lint test test-unit test-compat check test-stack demo bench soak crds docs clean

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

$(VENV)/.installed: pyproject.toml hack/devstack/venv.py
	PYTHONPATH=hack $(PYTHON) -m devstack.venv $(VENV)
	@touch $@

venv: $(VENV)/.installed

setup: venv ## venv + deps, Kafka jars (Maven), etcd/kube-apiserver/kubectl (Go); cached
	$(DEVSTACK) setup

dev-up: setup ## start Kafka x3, etcd, kube-apiserver in the background; writes .dev/env
	$(DEVSTACK) up

dev-down: ## stop everything dev-up started
	@if [ -x $(PY) ]; then $(DEVSTACK) down; fi

dev-status: ## which parts of the local stack are running
	$(DEVSTACK) status

crds: venv ## regenerate crds/ from hack/crd-src/, then the API reference (docs/reference/)
	$(PY) hack/crdgen.py
	$(PY) hack/apidocs.py

CHART := charts/kafka-retention-operator

lint: venv ## ruff, mypy --strict, import-linter, CRDs and API reference up to date, helm lint + template
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy --cache-dir $(CACHE)/mypy operator/kafka_retention spark-jobs/retention_jobs spark-jobs/log_keys_bridge.py hack/devstack hack/spark-daemon hack/crdgen.py hack/apidocs.py hack/demo.py hack/testrun.py bench tests
	$(VENV)/bin/lint-imports
	$(PY) hack/crdgen.py --check
	$(PY) hack/apidocs.py --check
	@# helm from hack/go/helm (built by `make setup`, or here on first use); the chart
	@# with its default values, then with each overlay's profile.
	@helm=$$(PYTHONPATH=hack $(PY) -c 'from devstack import build; print(build.helm())') && \
	for values in "" $(CHART)/ci/*-values.yaml; do \
		echo "helm lint + template $(CHART) $${values:+-f $$values}"; \
		$$helm lint --strict --quiet $(CHART) $${values:+-f $$values} && \
		$$helm template kafka-retention $(CHART) $${values:+-f $$values} >/dev/null || exit 1; \
	done

test-unit: venv ## unit tests only (no stack)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

check: lint ## the inner loop: lint, the docs site (strict), then every test needing no stack and no image (unit, some integration), 2 processes
	$(VENV)/bin/mkdocs build --strict --quiet
	$(PY) -m pytest tests -m "not stack and not image" -n 2 $(PYTEST_ARGS)

docs: venv ## regenerate docs/reference/ from crds/, build the site into site/ (strict: a broken link fails)
	$(PY) hack/apidocs.py
	$(VENV)/bin/mkdocs build --strict

test: venv ## every phase, timed: setup, image, stack, lint, unit, integration + e2e (parallel, then serial), coverage
	PYTHONPATH=hack $(PY) hack/testrun.py -- $(PYTEST_ARGS)

demo: setup ## bring the stack up, apply the CRDs, run the scripted scenario
	$(PY) hack/demo.py

test-compat: setup ## the core scenarios against every supported Kafka release (3.9 to 4.4) -> docs/compatibility.md
	KAFKA_RETENTION_KAFKA_VERSIONS=all KAFKA_RETENTION_COMPAT_TABLE=docs/compatibility.md \
		$(PY) -m pytest tests/e2e/test_kafka_versions.py -n 0 $(PYTEST_ARGS)

soak: setup ## 15 min: 200 policies, 50 purges, moving groups, invariant sampler -> SOAK.md
	SOAK_SECONDS=900 SOAK_POLICIES=200 SOAK_PURGES=50 SOAK_REPORT=SOAK.md \
		$(PY) -m pytest tests/e2e/test_soak.py -s $(PYTEST_ARGS)

bench: setup ## benchmarks beside Kafka's own tools -> BENCHMARKS.md and bench/plots/
	PYTHONPATH=hack:. $(PY) bench/run.py

clean: dev-down ## remove local state (keeps the shared download/build cache)
	rm -rf .dev
