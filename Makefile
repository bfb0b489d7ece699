# Set-up and entry points. Only Python 3.11+ and make are needed on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install fit test blocks clean

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

blocks: $(STAMP)
	$(BIN)/python -m framework blocks

clean:
	rm -rf $(VENV) runs .pytest_cache
