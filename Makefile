# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test bench studies clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/assay demo --out demo-out

test: $(STAMP)
	$(PY) -m pytest -q -n 2 tests

bench: $(STAMP)
	$(PY) bench/siren.py

clean:
	rm -rf $(VENV) demo-out .pytest_cache build src/*.egg-info
