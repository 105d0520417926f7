# Two entry points for a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
# CPU wheel of torch, pinned (a local file on the project's machines makes this fast).
TORCH_PIN ?= torch==2.13.0

.PHONY: demo bench-demo test lint install clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_PIN)"
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

## The CPU test suite (Triton interpreter); GPU tests are under the `gpu` marker.
test: install
	$(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
