# Every target sets up what it needs from nothing: Python 3.11+, pip, make, npm and Go.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the real coding-agent CLIs the tests drive, pinned in tests/clients (npm, cached in the venv)
CLIENTS := $(VENV)/clients/.installed
# the headless browser the HTML report is tested in: Debian's chromium, installed only when
# missing (needs root or sudo on a fresh Debian machine; nothing is downloaded at test time)
BROWSER := $(VENV)/.chromium
# the tracing backends `build --from` is tested against, each in a venv of its own (their
# dependencies are not the project's): Arize Phoenix, chDB (ClickHouse in process) and the
# MLflow tracking server (installed without byte code: a test session compiles the part of
# each that its server imports, writing it, instead of the install compiling them whole)
PHOENIX_VERSION := 20.26.1
CHDB_VERSION := 4.4.0
MLFLOW_VERSION := 3.17.2
BACKENDS := $(VENV)/phoenix/.installed $(VENV)/chdb/.installed $(VENV)/mlflow/.installed
# the real Go programs the tests run, built from pinned Go modules (the Go module registry
# on a fresh machine, then Go's module and build caches): the OpenTelemetry Collector of
# collector/otelcol (core and contrib components of one release) and Jaeger v2 (tests/jaeger);
# with them, the Collector ClickHouse exporter's table DDL from its module's source
GO_BIN := $(VENV)/go/bin
GO_ENV := GOTOOLCHAIN=local GOFLAGS='-trimpath -mod=readonly -buildvcs=false'
CLICKHOUSE_EXPORTER := github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter
GO_PROGRAMS := $(GO_BIN)/otelcol $(GO_BIN)/jaeger
# frameworks of the conformance suite whose pins the `test` extra excludes, each in a venv
# of its own with this project and pyproject.toml's extra of its name: LlamaIndex
# (llama-index-llms-openai takes openai<3; openai-agents and pydantic-ai openai>=3)
FRAMEWORKS := $(VENV)/llamaindex/.installed
# the npm package in js/ (its Vitest suite runs the engine from this tree): npm ci, cached;
# its build, js/dist, is committed (`npm run build` in js/; a test holds it to src/)
JS := js/node_modules/.installed
# the TypeScript example, installed against js/ (npm ci, cached)
JS_EXAMPLE := examples/typescript/node_modules/.installed
# AI SDK 7 and its OpenTelemetry integration, pinned apart from js/'s AI SDK 6 (npm ci, cached)
JS_AI7 := js/test-ai7/node_modules/.installed

.PHONY: demo test bytecode test-py test-py-needs test-js docs lint typecheck bench soak clients browser backends \
	frameworks js go clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

$(CLIENTS): tests/clients/package.json tests/clients/package-lock.json
	mkdir -p $(VENV)/clients
	cp tests/clients/package.json tests/clients/package-lock.json $(VENV)/clients/
	cd $(VENV)/clients && npm ci --no-audit --no-fund --loglevel=error
	touch $(CLIENTS)

clients: $(CLIENTS)

$(BROWSER): | $(BIN)/python
	command -v chromium >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get install -y --no-install-recommends chromium || \
		{ $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; }; }
	touch $(BROWSER)

browser: $(BROWSER)

$(VENV)/phoenix/.installed: | $(BIN)/python
	$(PYTHON) -m venv $(VENV)/phoenix
	$(VENV)/phoenix/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/phoenix/bin/python -m pip install --quiet --no-compile 'arize-phoenix==$(PHOENIX_VERSION)'
	touch $@

$(VENV)/chdb/.installed: | $(BIN)/python
	$(PYTHON) -m venv $(VENV)/chdb
	$(VENV)/chdb/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/chdb/bin/python -m pip install --quiet --no-compile 'chdb==$(CHDB_VERSION)'
	touch $@

$(VENV)/mlflow/.installed: | $(BIN)/python
	$(PYTHON) -m venv $(VENV)/mlflow
	$(VENV)/mlflow/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/mlflow/bin/python -m pip install --quiet --no-compile 'mlflow==$(MLFLOW_VERSION)'
	# its database made once (migrations take half of a server's start); each test session copies it
	rm -f $(VENV)/mlflow/template.db
	cd $(VENV)/mlflow && MLFLOW_DISABLE_TELEMETRY=true bin/python -m mlflow db upgrade \
		sqlite:///$(CURDIR)/$(VENV)/mlflow/template.db >/dev/null
	touch $@

backends: $(BACKENDS)

$(GO_BIN)/otelcol: collector/otelcol/go.mod collector/otelcol/go.sum collector/otelcol/*.go
	rm -rf $(VENV)/go/clickhouseexporter && mkdir -p $(VENV)/go/clickhouseexporter
	cd collector/otelcol && $(GO_ENV) go mod download $(CLICKHOUSE_EXPORTER)
	cp "$$(cd collector/otelcol && $(GO_ENV) go list -m -f '{{.Dir}}' $(CLICKHOUSE_EXPORTER))"/internal/sqltemplates/traces_*.sql \
		$(VENV)/go/clickhouseexporter/
	cd collector/otelcol && $(GO_ENV) nice -n 10 go build -o $(CURDIR)/$@ .

$(GO_BIN)/jaeger: tests/jaeger/go.mod tests/jaeger/go.sum
	cd tests/jaeger && $(GO_ENV) nice -n 10 go build -o $(CURDIR)/$@ github.com/jaegertracing/jaeger/cmd/jaeger

go: $(GO_PROGRAMS)

$(VENV)/llamaindex/.installed: pyproject.toml | $(BIN)/python
	$(PYTHON) -m venv $(VENV)/llamaindex
	$(VENV)/llamaindex/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/llamaindex/bin/python -m pip install --quiet --no-compile -e '.[llamaindex]'
	touch $@

frameworks: $(FRAMEWORKS)

demo: $(STAMP)
	$(BIN)/otel-replay demo

# Vitest beside what pytest needs first (lint, type checks, the docs, installs and Go
# builds: mostly one core's work on a fresh machine), then pytest alone on both cores:
# pytest beside Vitest took ~3 minutes longer than alone (both use every core they get)
test: bytecode
	$(MAKE) -j2 test-js test-py-needs
	$(PYTEST)

# Byte code is written during the tests, and the package compiled once before them: where
# PYTHONDONTWRITEBYTECODE is set, every engine, CLI and agent a test starts compiled the
# package at its start (~0.35 s a process) and each pytest worker its test modules (~12 s)
test test-py test-js bytecode: export PYTHONDONTWRITEBYTECODE =
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q otel_replay

PYTEST = $(BIN)/python -m pytest -q -n 2
test-py-needs: lint typecheck docs $(CLIENTS) $(BROWSER) $(BACKENDS) $(FRAMEWORKS) $(GO_PROGRAMS)
test-py: test-py-needs
	$(PYTEST)

$(JS): js/package.json js/package-lock.json
	cd js && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS)

js: $(JS)

$(JS_EXAMPLE): $(JS) examples/typescript/package.json examples/typescript/package-lock.json
	cd examples/typescript && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_EXAMPLE)

$(JS_AI7): $(JS) js/test-ai7/package.json js/test-ai7/package-lock.json
	cd js/test-ai7 && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_AI7)

test-js: $(STAMP) $(JS) $(JS_EXAMPLE) $(JS_AI7)
	cd js && npx tsc -p . --noEmit && npx tsc -p tsconfig.test.json && npx tsc -p test-ai7
	cd js && OTEL_REPLAY_PYTHON=$(CURDIR)/$(BIN)/python npx vitest run
	cd js/test-ai7 && OTEL_REPLAY_PYTHON=$(CURDIR)/$(BIN)/python npx vitest run
	cd examples/typescript && CI=1 OTEL_REPLAY_BIN="$(CURDIR)/$(BIN)/python -m otel_replay" \
		npx vitest run

# the documentation site (docs/, mkdocs.yml) into build/site: strict (a broken link, an
# anchor that is not there or a page left out of the navigation fails it), nothing fetched;
# the reference pages are made from the code as it builds (docs/hooks.py, docs/gen_ref.py)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

lint: $(STAMP)
	$(BIN)/ruff check otel_replay tests benchmarks examples fuzz docs
	$(BIN)/ruff format --check otel_replay tests benchmarks examples fuzz docs

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP) $(BACKENDS) $(GO_BIN)/otelcol
	$(BIN)/python -m benchmarks

# the soak test of `make test` (20 s), run for 20 minutes
soak: $(STAMP)
	SOAK_SECONDS=1200 $(BIN)/python -m pytest -q tests/test_soak.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache \
		js/node_modules js/test-ai7/node_modules examples/typescript/node_modules
