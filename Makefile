# Set-up and entry points. Only Python 3.11+ and make are needed on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install fit test test-gpu blocks clean

# (Re)install into .venv whenever the declared dependencies change.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

fit: $(STAMP)
	$(BIN)/python -m framework fit --config domains/vision/ccnet.yaml

test: $(STAMP)
	$(BIN)/python -m pytest

# On a machine with a GPU: the CUDA lane of the suite, one batch of every config with the GPU
# preset (the config sweep, tests/test_configs.py), the GPU benchmarks and a DDP fit, ending with
# one table (python -m tools.gpu_check).
test-gpu: $(STAMP)
	$(BIN)/python -m tools.gpu_check

blocks: $(STAMP)
	$(BIN)/python -m framework blocks

clean:
	rm -rf $(VENV) runs .pytest_cache
