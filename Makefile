# Every target does its own set-up: a fresh clone needs only python3 (>= 3.10) and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck unit demo gpu-test clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## test: lint, type-check and run the CPU test suite (what CI runs)
test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check nsightwrap tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy nsightwrap

unit: $(STAMP)
	$(BIN)/pytest -q -m "not gpu"

## demo: the main job on a machine with no GPU, on the shipped H200 run directory
demo: $(STAMP)
	$(BIN)/nsightwrap report fixtures/runs/h200-example --format table
	$(BIN)/nsightwrap report fixtures/runs/h200-example --format md -o nsightwrap-demo-report.md
	$(BIN)/nsightwrap report fixtures/runs/h200-example --format html -o nsightwrap-demo-report.html
	@echo "Markdown report: nsightwrap-demo-report.md   HTML report: nsightwrap-demo-report.html"

## gpu-test: the GPU-only tests (needs an NVIDIA GPU; ncu/nsys where a test names them)
gpu-test: $(STAMP)
	$(BIN)/pytest -q -m gpu

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
