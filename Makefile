# The two commands of the README: `make demo` (the main job) and `make test`.
# Both set up everything on a fresh machine first (a virtualenv in .venv), Java checked first:
# Spark needs it, and nothing heavy is installed before we know it can run.
# `make test` also proves the declared lower bounds: .venv-min holds exactly the lowest versions
# pyproject.toml declares (scripts/min_constraints.py) and runs the smoke tests there.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VENV_MIN := .venv-min
MIN_STAMP := $(VENV_MIN)/.installed
#: the oracle and test runner installed beside the lowest versions
MIN_EXTRA := pytest pylance==14.0.2

.PHONY: demo test lint bench protos clean java smoke-min

java:
	bash scripts/ensure_java.sh

$(STAMP): pyproject.toml
	bash scripts/ensure_java.sh
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $(STAMP)

# Rebuilt from scratch when pyproject.toml (the declared bounds) or the pin script change.
$(MIN_STAMP): pyproject.toml scripts/min_constraints.py
	rm -rf $(VENV_MIN)
	$(PY) -m venv $(VENV_MIN)
	$(PY) scripts/min_constraints.py spark > $(VENV_MIN)/constraints.txt
	$(VENV_MIN)/bin/python -m pip install -q -c $(VENV_MIN)/constraints.txt -e '.[spark]' $(MIN_EXTRA)
	touch $(MIN_STAMP)

smoke-min: java $(MIN_STAMP)
	$(VENV_MIN)/bin/python scripts/min_constraints.py --check $(VENV_MIN)/constraints.txt
	$(VENV_MIN)/bin/python -m pytest -q -p no:cacheprovider -m smoke tests/test_smoke_min.py

demo: java $(STAMP)
	$(BIN)/python -m examples.demo

test: java $(STAMP)
	$(BIN)/ruff check lancelot tests benchmarks scripts examples
	$(BIN)/ruff format --check lancelot tests benchmarks scripts examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q tests
	$(MAKE) --no-print-directory smoke-min

# ruff check, then mypy on lancelot/ and examples/ ([tool.mypy] in pyproject.toml; the generated
# lancelot/format/pb is excluded): the checks of `make test` without the tests. mypy reports no errors.
lint: $(STAMP)
	$(BIN)/ruff check lancelot tests benchmarks scripts examples
	$(BIN)/ruff format --check lancelot tests benchmarks scripts examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/lancelot bench

protos:
	bash scripts/gen_protos.sh

clean:
	rm -rf $(VENV) $(VENV_MIN) .venv-protoc build *.egg-info
