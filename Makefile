# Two entry points for a fresh machine: `make demo` and `make test` (then `make bench-demo`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch, pinned. Without an NVIDIA GPU the CPU build is installed explicitly (from PyTorch's CPU
# index, or a local wheel that pip's find-links provide); with one, the default CUDA build.
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# Test processes: many tests wait on a sandbox's subprocesses, so two keep two cores busy.
TEST_WORKERS ?= 2

.PHONY: demo bench-demo test lint install check-python clean

check-python:
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else \
		f"tritongym needs Python >= 3.11, but $(PYTHON) is {v.major}.{v.minor}: run make PYTHON=python3.11 (or newer)")'

$(VENV)/.installed: pyproject.toml | check-python
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@if nvidia-smi -L >/dev/null 2>&1; then \
		echo "NVIDIA GPU found: installing torch $(TORCH_VERSION) (CUDA build)"; \
		$(PY) -m pip install -q "torch==$(TORCH_VERSION)"; \
	else \
		echo "No NVIDIA GPU found: installing the CPU build of torch $(TORCH_VERSION)"; \
		$(PY) -m pip install -q "torch==$(TORCH_VERSION)+cpu" --extra-index-url "$(TORCH_CPU_INDEX)"; \
	fi
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed

## Evaluate the bundled reference solutions on the bundled problems and print a table.
demo: install
	$(VENV)/bin/tritongym demo

## A multi-turn benchmark against a scripted model server on loopback: 3 bundled problems,
## 2 samples, 2 turns (a broken kernel first, the known solution after feedback); report in runs/.
bench-demo: install
	$(VENV)/bin/tritongym bench --policy scripted --ids 1-3 --samples 2 --turns 2 --out runs/bench-demo

## The CPU test suite (Triton interpreter); GPU tests are under the `gpu` marker. TEST_WORKERS pytest-xdist
## processes share the test files, a whole file per worker (its module fixtures stay shared).
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
