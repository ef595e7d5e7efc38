# Quickstart:  make demo   (a small sweep on a local Ray + MLflow, ending with the comparison table)
#              make test   (the whole test suite, as CI runs it)
VENV   ?= .venv
PY     := $(VENV)/bin/python
GRID   ?= nl_mix
SCALE  ?= smoke

.PHONY: install test test-fast lint demo ui reproduce-cpu results clean

$(VENV)/.installed: pyproject.toml scripts/install.sh
	bash scripts/install.sh
	touch $@

install: $(VENV)/.installed

test: install                    ## everything, slow end-to-end tests included (what CI runs)
	$(PY) -m pytest

test-fast: install               ## the fast unit tests only
	$(PY) -m pytest -m "not slow"

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

demo: install                    ## make demo GRID=mul_format SCALE=cpu
	$(PY) sweeps/run.py --grid $(GRID) --scale $(SCALE)

reproduce-cpu: install          ## every cpu sweep of docs/RESULTS.md in sequence (hours on 2 cores), then the report
	$(PY) scripts/reproduce_cpu.py

results: install                 ## only rewrite docs/RESULTS.md from the store in runs/cpu
	$(PY) scripts/reproduce_cpu.py --report-only

ui: install                      ## the MLflow UI over the local store
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5000

clean:
	rm -rf ray_results mlflow.db mlartifacts outputs
