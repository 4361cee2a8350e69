# The two commands of the README: `make demo` (the main job) and `make test`.
# Both set up everything on a fresh machine first (a virtualenv in .venv).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench protos clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $(STAMP)

demo: $(STAMP)
	bash scripts/ensure_java.sh
	$(BIN)/python -m lancelot.demo

test: $(STAMP)
	bash scripts/ensure_java.sh
	$(BIN)/ruff check lancelot tests benchmarks
	$(BIN)/python -m pytest -q tests

bench: $(STAMP)
	$(BIN)/lancelot bench

protos:
	bash scripts/gen_protos.sh

clean:
	rm -rf $(VENV) build *.egg-info
