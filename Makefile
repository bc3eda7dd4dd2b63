# Two commands set everything up on a fresh machine (Python 3.11 + Java 17): `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUNNER := $(VENV)/bin/runner
STAMP  := $(VENV)/.installed

.PHONY: run test lint venv bench clean-warehouse

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# The main job on the embedded default: local Spark and a demo warehouse on local disk.
# `runner plan` exits 2 when changes are pending, which is expected before apply.
run: $(STAMP)
	$(RUNNER) validate
	$(RUNNER) ls
	$(PY) -m runner.demo .
	$(RUNNER) status
	$(RUNNER) plan --out target/plan.json || [ $$? -eq 2 ]
	$(RUNNER) apply target/plan.json
	@echo "Second pass: the cleaner removes file groups the resize replaced, once the policy allows:"
	$(RUNNER) plan || [ $$? -eq 2 ]
	$(RUNNER) apply --auto-approve
	$(RUNNER) plan

# Lint first: a type or style error fails fast, before minutes of Spark tests. The 30 slowest
# tests are listed at the end, to keep the suite within its 20-minute budget.
test: lint
	$(PY) -m pytest -q --durations=30

lint: $(STAMP)
	$(VENV)/bin/ruff check runner tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/run_all.py

clean-warehouse:
	rm -rf warehouse target
