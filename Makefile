# Every target does its own set-up: a fresh clone needs only python3 (>= 3.10) and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One .venv, two stamps: make demo installs nsightwrap with the [html] extra only (matplotlib, for
# the HTML report), make test the [dev] extra (which holds [html]) on top of it.
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-html

.PHONY: test test-slow test-lowest lint typecheck unit demo gpu-test clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[html]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP) $(DEMO_STAMP)

## test: lint, type-check and run the CPU test suite but its slow tests (well under 5 minutes)
test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check nsightwrap tests benchmarks studies

typecheck: $(STAMP)
	$(BIN)/mypy nsightwrap

# -n auto: one worker per core (pytest-xdist); every test keeps to its own tmp_path.
unit: $(STAMP)
	$(BIN)/pytest -q -n auto -m "not gpu and not slow"

## test-slow: the CPU tests marked slow (tests/slow_tests.txt); CI runs it after make test
test-slow: $(STAMP)
	$(BIN)/pytest -q -n auto -m "slow and not gpu"

## test-lowest: the CPU tests with every direct dependency at the floor pyproject.toml allows
## (a fresh venv; pip cannot resolve to lowest versions, so the floors become == constraints)
LOWEST := .venv-lowest
test-lowest:
	rm -rf $(LOWEST)
	$(PY) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install -q --upgrade pip
	$(LOWEST)/bin/python scripts/lowest_constraints.py pyproject.toml > $(LOWEST)/constraints.txt
	$(LOWEST)/bin/python -m pip install -q -c $(LOWEST)/constraints.txt -e '.[html]' pytest selenium jsonschema
	$(LOWEST)/bin/python scripts/lowest_constraints.py --check pyproject.toml
	$(LOWEST)/bin/pytest -q -m "not gpu" -p no:cacheprovider

# The roofs of the demo report: the ceilings nsightwrap device measured on an H200 (docs/device.md).
DEVICE_FILE := fixtures/device/h200.json

## demo: the main job on a machine with no GPU, on the shipped H200 run directory (installs .[html] only)
demo: $(DEMO_STAMP)
	$(BIN)/nsightwrap report fixtures/runs/h200-example --device-file $(DEVICE_FILE) --format table
	$(BIN)/nsightwrap report fixtures/runs/h200-example --device-file $(DEVICE_FILE) --format md -o nsightwrap-demo-report.md
	$(BIN)/nsightwrap report fixtures/runs/h200-example --device-file $(DEVICE_FILE) --format html -o nsightwrap-demo-report.html
	@echo "Markdown report: nsightwrap-demo-report.md   HTML report: nsightwrap-demo-report.html"
	@echo; echo "An unmodified script (its own do_bench_cuda recipe, then triton.testing.do_bench), profiled as it is:"
	$(BIN)/nsightwrap report fixtures/runs/h200-blog --device-file $(DEVICE_FILE) --format table

## gpu-test: the GPU-only tests (needs an NVIDIA GPU; ncu/nsys where a test names them)
gpu-test: $(STAMP)
	$(BIN)/pytest -q -m gpu

clean:
	rm -rf $(VENV) $(LOWEST) .pytest_cache .mypy_cache .ruff_cache
