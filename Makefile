# The two commands of the README: `make demo` and `make test`. Each sets everything up first
# (a virtual environment in .venv with albic installed in editable mode, with every extra -- spark,
# traces, plot, stream -- and the test tools), so a fresh clone on a machine with Python 3.11 and
# Java 17 needs nothing else. A user who only plans installs the core: pip install albic.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# A real Flink for the tests that run albic against a running job (tests/engines/test_flink_live.py):
# the apache-flink wheel carries the whole distribution (bin, lib, conf). Its Python pins (apache-beam:
# protobuf < 6) cannot share .venv with OR-Tools (protobuf >= 6.33), and only its scripts and jars are
# used, so it goes without its dependencies into a folder of its own, once.
FLINK_VERSION := 2.3.0
FLINK := .flink
FLINK_INSTALLED := $(FLINK)/.installed

.PHONY: setup flink demo test bench clean

setup: $(INSTALLED)

flink: $(FLINK_INSTALLED)

$(FLINK_INSTALLED): | $(INSTALLED)
	rm -rf $(FLINK)
	$(BIN)/python -m pip install --quiet --no-deps --only-binary=:all: --target $(FLINK) \
		apache-flink==$(FLINK_VERSION) apache-flink-libraries==$(FLINK_VERSION)
	touch $@

# Reinstalls when pyproject.toml changes (new dependencies or entry points). Everything is
# byte-compiled once: where PYTHONDONTWRITEBYTECODE is set (CI images often set it), every command,
# test worker and Spark worker would otherwise compile what it imports again. One compileall on
# every core rather than pip's file by file, and not the dependencies' own test suites, which
# nothing imports. As with pip, a dependency's file that does not compile is left for its import
# to report; albic's own must compile. The venv's own pip (3.11's ensurepip) is recent enough for
# an editable pyproject install, so it is used as it comes.
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	PIP_DISABLE_PIP_VERSION_CHECK=1 $(BIN)/python -m pip install --quiet --no-compile -e '.[all,dev]'
	$(BIN)/python -m compileall -qq -j0 -x '/tests?/' $(VENV)/lib || true
	$(BIN)/python -m compileall -q -j0 albic planners solvers
	touch $@

demo: setup
	$(BIN)/albic demo

# The suite on up to four workers (the tests that share one Flink cluster, one Spark session or one
# planner's conformance run stay on one worker: --dist loadgroup), then the tests that assert
# wall-clock time alone: a neighbour's work would be charged to their clock. Only the files that
# mark tests `timing` are collected for them (tests/conftest.py refuses a mark made otherwise).
TIMING_FILES = $(shell grep -rl --include='test_*.py' 'mark\.timing' tests)
test: setup flink
	$(BIN)/python -m pytest -n auto --maxprocesses=4 --dist loadgroup -m "not timing" --durations=20
	$(BIN)/python -m pytest -m timing $(TIMING_FILES)

bench: setup
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) $(FLINK) build *.egg-info .pytest_cache .hypothesis
