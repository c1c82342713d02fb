# The two commands a researcher needs: `make demo` and `make test`.
# Both create .venv when it is missing; nothing but PyPI packages is downloaded.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DB     ?= truss_lab.duckdb

.PHONY: demo lab docs test test-slow test-browser test-realserver lint bench bench-quick reliability install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# An editable install leaves the package's bytecode to its first import, which a machine
# with PYTHONDONTWRITEBYTECODE set never writes: every command would compile truss_lab
# again (about 0.3 s of each start). So the install compiles it, and make test again
# (only the files changed since); a stale .pyc is never used (Python checks each source).
COMPILE := $(BIN)/python -m compileall -q truss_lab

# Stamps re-run the install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[notebook]'
	$(COMPILE)
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(COMPILE)
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	$(BIN)/python -m truss_lab.faces.demo --db $(DB)

# JupyterLab on the notebooks (the notebook extra brings it). Stop it with Ctrl-C.
# As root (a container's usual user) Jupyter refuses to start without --allow-root.
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(VENV)/.installed
	$(BIN)/jupyter lab notebooks $(LAB_ARGS)

# The suite: ruff, then the tests (slow ones, the browser test and the real-server test
# are separate targets) and every notebook executed top to bottom by nbmake, in one
# pytest run, so the notebooks share the workers with the tests instead of waiting for
# the last of them. One pytest-xdist worker per core (-n auto); --dist loadfile keeps a
# file's tests (a notebook is one) on one worker, so its module fixtures are built once.
# A test of more than about 20 s of CPU whose behaviour a faster test here also checks is
# marked slow (make test-slow, which CI runs): docs/explanation/reliability.md says which.
test: $(VENV)/.installed-dev
	$(BIN)/ruff check truss_lab tests benchmarks scripts
	$(COMPILE)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile --nbmake \
		-m "not slow and not realserver" --ignore=tests/browser --ignore=tests/realserver \
		tests notebooks

# The slow-marked tests (end-to-end grids whose behaviour a faster test in make test
# also checks, and the README's whole CLI quickstart), and every Hypothesis test with
# its full example count (the thorough profile, tests/builders/profiles.py); make test
# runs the same Hypothesis tests on a tenth of the examples. CI runs it (.ci/run).
test-slow: $(VENV)/.installed-dev
	$(COMPILE)
	HYPOTHESIS_PROFILE=thorough $(BIN)/python -m pytest -q -p no:cacheprovider \
		-n auto --dist loadfile -m "(slow or hypothesis) and not realserver" \
		--ignore=tests/browser --ignore=tests/realserver

$(VENV)/.installed-browser: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,browser]'
	@touch $@ $(VENV)/.installed $(VENV)/.installed-dev

# JupyterLab on 127.0.0.1 + Debian's chromium (installed with apt when missing)
# driven by Playwright: run notebook 02, move the threshold slider, check the
# metrics and the plot change. Screenshots go to browser_artifacts/.
test-browser: $(VENV)/.installed-browser
	PYTHON=$(BIN)/python bash scripts/run_browser_test.sh

$(VENV)/.installed-realserver: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,realserver]'
	@touch $@ $(VENV)/.installed $(VENV)/.installed-dev

# The OpenAI-compatible provider against a real third-party server: a LiteLLM
# proxy (the realserver extra, pinned) on 127.0.0.1 answering from mock
# responses, started and stopped by the test (tests/realserver). No network, no key.
test-realserver: $(VENV)/.installed-realserver
	$(BIN)/python -m pytest -q -p no:cacheprovider -m realserver tests/realserver

$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[notebook,docs]'
	@touch $@ $(VENV)/.installed

# The documentation site (docs/, Sphinx) into docs/_build/html: warnings are errors
# (a broken cross-reference, an undocumented parameter of a public name, a notebook
# cell or an example that fails), the four notebooks executed. Nothing is downloaded.
# Not part of `make test`; CI runs it (.ci/run).
docs: $(VENV)/.installed-docs
	rm -rf docs/_build/html
	$(BIN)/python -m sphinx -W --keep-going -n -q -b html docs docs/_build/html

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check truss_lab tests benchmarks scripts

# One table of every benchmark figure against its named baseline and goal, from
# the RESULT lines each benchmark prints; bench_results.json keeps the same rows
# with the load average. bench-quick: every benchmark at small sizes (< 1 min).
bench: $(VENV)/.installed-dev
	$(BIN)/python scripts/bench_all.py

bench-quick: $(VENV)/.installed-dev
	$(BIN)/python scripts/bench_all.py --quick

# One table of tamper detection, SIGKILL survival, bad-input rejection,
# lock errors, secrets and HTML escaping; exits 1 if any row fails.
reliability: $(VENV)/.installed-dev
	$(BIN)/python -m scripts.reliability

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache $(DB) $(DB).wal demo_out
