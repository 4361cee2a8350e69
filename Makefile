# The two commands of the README: `make demo` (the main job) and `make test`.
# Both set up what they need on a fresh machine first (a virtualenv in .venv), Java checked first:
# Spark needs it, and nothing heavy is installed before we know it can run.
# `make demo` installs only the demo extra (pyspark, pandas, tpchgen-cli); `make test` the dev, bench
# and docs extras.  `make test` also proves the declared lower bounds: .venv-min holds exactly the
# lowest versions pyproject.toml declares with the spark extra, .venv-min-core the core dependencies
# alone (no pandas, no pyspark) (scripts/min_constraints.py); the smoke tests run in both.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
#: where `make demo` leaves its data for the user to inspect
DEMO_DIR := demo-output
VENV_MIN := .venv-min
MIN_STAMP := $(VENV_MIN)/.installed
VENV_MIN_CORE := .venv-min-core
MIN_CORE_STAMP := $(VENV_MIN_CORE)/.installed
#: the oracle and test runner installed beside the lowest versions
MIN_EXTRA := pytest pylance==14.0.2
#: every install goes through it: retried downloads, then retried installs (a flaky network broke CI once)
PIP_INSTALL := bash scripts/pip_install.sh

.PHONY: demo test lint docs bench protos clean java smoke-min

java:
	bash scripts/ensure_java.sh

# pandas 3 goes to a directory of its own (<venv>/pandas3): tests/file/test_write_inputs.py writes a pandas 3
# DataFrame in a subprocess with it on PYTHONPATH, while the suite itself keeps pandas 2 (pyspark's).
$(STAMP): pyproject.toml
	bash scripts/ensure_java.sh
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "installing lancelot with its dev, bench and docs extras into $(VENV) ..."
	$(PIP_INSTALL) $(BIN)/python -q --upgrade pip
	$(PIP_INSTALL) $(BIN)/python -q -e '.[dev,bench,docs]'
	$(PIP_INSTALL) $(BIN)/python -q --no-deps --upgrade --target $(VENV)/pandas3 'pandas>=3'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	bash scripts/ensure_java.sh
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "installing lancelot with the demo extra (pyspark, pandas, tpchgen-cli) into $(VENV) ..."
	$(PIP_INSTALL) $(BIN)/python --upgrade pip
	$(PIP_INSTALL) $(BIN)/python -e '.[demo]'
	touch $(DEMO_STAMP)

# Rebuilt from scratch when pyproject.toml (the declared bounds) or the pin script change.
$(MIN_STAMP): pyproject.toml scripts/min_constraints.py
	rm -rf $(VENV_MIN)
	$(PY) -m venv $(VENV_MIN)
	$(PY) scripts/min_constraints.py spark > $(VENV_MIN)/constraints.txt
	$(PIP_INSTALL) $(VENV_MIN)/bin/python -q --upgrade pip  # a pip that resumes broken downloads
	$(PIP_INSTALL) $(VENV_MIN)/bin/python -q -c $(VENV_MIN)/constraints.txt -e '.[spark]' $(MIN_EXTRA)
	touch $(MIN_STAMP)

# The core alone, as `pip install lancelot` gives it: no pandas (removed should a test tool bring it).
$(MIN_CORE_STAMP): pyproject.toml scripts/min_constraints.py
	rm -rf $(VENV_MIN_CORE)
	$(PY) -m venv $(VENV_MIN_CORE)
	$(PY) scripts/min_constraints.py > $(VENV_MIN_CORE)/constraints.txt
	$(PIP_INSTALL) $(VENV_MIN_CORE)/bin/python -q --upgrade pip  # a pip that resumes broken downloads
	$(PIP_INSTALL) $(VENV_MIN_CORE)/bin/python -q -c $(VENV_MIN_CORE)/constraints.txt -e . $(MIN_EXTRA)
	$(VENV_MIN_CORE)/bin/python -m pip uninstall -q -y pandas
	touch $(MIN_CORE_STAMP)

smoke-min: java $(MIN_STAMP) $(MIN_CORE_STAMP)
	$(VENV_MIN)/bin/python scripts/min_constraints.py --check $(VENV_MIN)/constraints.txt
	$(VENV_MIN)/bin/python -m pytest -q -p no:cacheprovider -m smoke tests/cli/test_smoke_min.py
	$(VENV_MIN_CORE)/bin/python scripts/min_constraints.py --check $(VENV_MIN_CORE)/constraints.txt --absent pandas pyspark
	$(VENV_MIN_CORE)/bin/python -m pytest -q -p no:cacheprovider -m smoke tests/cli/test_smoke_min.py

# The demo's data stays in $(DEMO_DIR)/ (replaced by the next run) for `lancelot inspect` and Python.
demo: java $(DEMO_STAMP)
	rm -rf $(DEMO_DIR)
	$(BIN)/python -m examples.demo --workdir $(DEMO_DIR)

test: java $(STAMP)
	$(BIN)/ruff check lancelot pyspark_lancelot tests benchmarks scripts examples
	$(BIN)/ruff format --check lancelot pyspark_lancelot tests benchmarks scripts examples
	$(BIN)/mypy
	$(MAKE) --no-print-directory docs
	@# the lowest-versions venvs are built (mostly downloads and unpacking) while the suite runs; by `make`,
	@# not $$(MAKE): make runs a line naming $$(MAKE) even when `make -n` asks it only to print it
	make --no-print-directory $(MIN_STAMP) $(MIN_CORE_STAMP) > min-venvs.log 2>&1 & venvs=$$!; \
	$(BIN)/python -m pytest -q --durations=40 -n 2 tests; rc=$$?; \
	wait $$venvs || { cat min-venvs.log; echo "building the lowest-versions venvs failed"; exit 1; }; exit $$rc
	$(MAKE) --no-print-directory smoke-min

# The documentation site (mkdocs.yml, docs/): into site/; --strict turns every warning (a broken link,
# a reference to a name that does not exist) into an error.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# ruff check, then mypy on lancelot/ and examples/ ([tool.mypy] in pyproject.toml; the generated
# lancelot/format/pb is excluded): the checks of `make test` without the tests. mypy reports no errors.
lint: $(STAMP)
	$(BIN)/ruff check lancelot pyspark_lancelot tests benchmarks scripts examples
	$(BIN)/ruff format --check lancelot pyspark_lancelot tests benchmarks scripts examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/lancelot bench

protos:
	bash scripts/gen_protos.sh

clean:
	rm -rf $(VENV) $(VENV_MIN) $(VENV_MIN_CORE) .venv-protoc build site $(DEMO_DIR) *.egg-info min-venvs.log
