# Two commands set everything up on a fresh machine (Python 3.11 + Java 17): `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUNNER := $(VENV)/bin/runner
STAMP  := $(VENV)/.installed

.PHONY: run test venv bench clean-warehouse

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(RUNNER) validate
	$(RUNNER) ls

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/run_all.py

clean-warehouse:
	rm -rf warehouse target
