# The two commands of the README: `make demo` and `make test`. Each bootstraps what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.agentfsm-installed

.PHONY: demo test lint typecheck unit bench dot docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

dot:
	@scripts/ensure-dot.sh

demo: $(STAMP) dot
	$(BIN)/agentfsm demo

lint: $(STAMP)
	$(BIN)/ruff check agentfsm tests benchmarks scripts
	$(BIN)/ruff format --check agentfsm tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy --strict agentfsm

unit: $(STAMP) dot
	$(BIN)/coverage run -m pytest
	$(BIN)/coverage report

test: lint typecheck unit

# The generated docs: diagrams (DOT, and SVG via dot), the lifecycle tables, the API reference.
docs: $(STAMP) dot
	$(BIN)/python scripts/gen_docs.py

bench: $(STAMP)
	for bench in benchmarks/bench_*.py; do $(BIN)/python $$bench || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .hypothesis
