# The two commands of the README: `make demo` and `make test`. Each bootstraps what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.agentfsm-installed
# The peers the benchmarks measure (the `bench` extra) are never needed by the tests.
BENCH_STAMP := $(VENV)/.agentfsm-bench-installed

.PHONY: demo test nightly lint typecheck unit bench bench-quick dot chromium postgres docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

dot:
	@scripts/ensure-dot.sh

# The live view's tests drive Debian's chromium headless (Playwright never downloads one).
chromium:
	@scripts/ensure-chromium.sh

# The PostgreSQL server binaries: the tests and benchmarks start a throwaway server with them.
postgres:
	@scripts/ensure-postgres.sh

demo: $(STAMP) dot
	$(BIN)/agentfsm demo

lint: $(STAMP)
	$(BIN)/ruff check agentfsm tests benchmarks scripts examples
	$(BIN)/ruff format --check agentfsm tests benchmarks scripts examples

typecheck: $(STAMP)
	$(BIN)/mypy --strict agentfsm

unit: $(STAMP) dot chromium postgres
	$(BIN)/coverage run -m pytest
	$(BIN)/coverage report

test: lint typecheck unit

# The nightly job: hypothesis's nightly profile (2,000 examples each), the simulation's
# nightly seeds (a thousand more per store) and the tests marked nightly (long simulations).
nightly: $(STAMP) dot chromium postgres
	HYPOTHESIS_PROFILE=nightly $(BIN)/python -m pytest

# The docs site: regenerate the generated parts (diagrams as DOT and SVG, the lifecycle
# tables), then build the site into site/ with MkDocs; --strict makes any warning (a broken
# link, a page left out of the nav, a docstring mkdocstrings cannot read) an error.
docs: $(STAMP) dot
	$(BIN)/python scripts/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# Every benchmark, side by side with the peers: writes benchmarks/RESULTS.md and overhead.png.
bench: $(BENCH_STAMP) postgres
	$(BIN)/python benchmarks/report.py

# The same, with fewer repetitions and 1,000 concurrent runs: a smoke run of the harness.
bench-quick: $(BENCH_STAMP) postgres
	$(BIN)/python benchmarks/report.py --quick

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .coverage .hypothesis
