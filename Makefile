# make book   build the book (installs into .venv, runs the notebooks that are not up to date except the held ones, renders HTML)
# make test   run the tests (installs into .venv first)
# Variables: PROFILE=quick|paper|smoke  FORCE=1 (recompute even up-to-date results)  PYTHON=python3.11
PYTHON ?= python3
VENV ?= .venv
PROFILE ?= quick
TORCH_SPEC ?= torch==2.13.0
# PyTorch's CPU wheels (torch==2.13.0+cpu outranks PyPI's CUDA build of the same version, so the pin takes the CPU
# build on any machine); where the index is unreachable pip warns and goes on with the other indexes. TORCH_INDEX= skips it.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: book test install clean-book

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

book: $(STAMP)
	$(PY) -m bertsent.book run --profile $(PROFILE) $(if $(FORCE),--force,)
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going
	@echo "The book: _build/html/index.html"

# one test process per core (at most 4), each taking the next test as it finishes one
test: $(STAMP)
	$(PY) -m pytest -n auto --maxprocesses 4 --dist worksteal

clean-book:
	rm -rf _build
