# The two commands of the README: `make demo` and `make test`. Each sets everything up first
# (a virtual environment in .venv with albic installed in editable mode, with every extra -- spark,
# traces, plot, stream -- and the test tools), so a fresh clone on a machine with Python 3.11 and
# Java 17 needs nothing else. A user who only plans installs the core: pip install albic.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: setup demo test bench clean

setup: $(INSTALLED)

# Reinstalls when pyproject.toml changes (new dependencies or entry points).
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $@

demo: setup
	$(BIN)/albic demo

test: setup
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
