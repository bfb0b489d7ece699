# Set-up and entry points. Only Python 3.11+ and make are needed on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install fit test test-quick lint format docs test-gpu gpu-bundle blocks clean

# (Re)install into .venv whenever the declared dependencies change.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	touch $(STAMP)

install: $(STAMP)

fit: $(STAMP)
	$(BIN)/python -m framework fit --config domains/vision/ccnet.yaml

# The whole suite, after the lint and format checks (ruff, configured in pyproject.toml), in two test
# processes of one thread each (pytest-xdist: a test file at a time to whichever process is free,
# the files of most tests first, so that a module's fixtures, some of a minute, are built once;
# TEST_PROCESSES=N for another count, 0 for one process).
TEST_PROCESSES ?= 2
test: lint
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile

# The inner loop: the suite without the tests marked slow.
test-quick: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Rewrites the code: imports sorted, lint fixes that are safe, the format.
format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The documentation site (mkdocs.yml): README.md, docs/ and the API reference, into site/;
# tests/test_docs.py builds it too.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

# On a machine with a GPU: the CUDA lane of the suite, one batch of every config with the GPU
# preset, evaluate with the standard measures, a 2-cell compare and a 2-trial search, parity of the
# demo, probe rows, the overhead and criss-cross benchmarks and a DDP fit, as concurrent sections
# each within its time cap, ending with one table (tools/gpu_check.py; ARGS='--quick --out FILE':
# within 270 s on one H100 or H200). With a bundle (`make gpu-bundle` beforehand, for a GPU
# machine without a network) the machine's own Python runs it with the bundle's wheels and data;
# otherwise the project's .venv does.
GPU_PYTHON ?= python3
test-gpu:
ifneq ($(wildcard .whl/*.whl),)
	$(GPU_PYTHON) -m pip install -q --no-index --no-deps --no-compile --upgrade --target .gpu/site .whl/*.whl
	PYTHONPATH=$(CURDIR)/.gpu/site FRAMEWORK_DATA_DIR=$(CURDIR)/.gpu/data $(GPU_PYTHON) -m tools.gpu_check $(ARGS)
else
	$(MAKE) install
	$(BIN)/python -m tools.gpu_check $(ARGS)
endif

gpu-bundle: $(STAMP)
	$(BIN)/python -m tools.gpu_bundle

blocks: $(STAMP)
	$(BIN)/python -m framework blocks

clean:
	rm -rf $(VENV) runs site .pytest_cache
