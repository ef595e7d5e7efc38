# Quickstart:  make demo   (a real ablation in minutes on a local Ray + MLflow: a finding of the paper,
#                           its verdict, the HTML report and the MLflow UI view)
#              make test   (the whole test suite, as CI runs it)
#              make screenshots (after make demo: README's pictures retaken in headless Chromium)
VENV   ?= .venv
PY     := $(VENV)/bin/python
GRID   ?= demo
SCALE  ?= cpu
SEEDS  ?= 3
REPORT ?= reports/$(GRID)

.PHONY: install test test-fast lint demo ui screenshots reproduce-cpu results clean

$(VENV)/.installed: pyproject.toml scripts/install.sh
	bash scripts/install.sh
	touch $@

install: $(VENV)/.installed

# Two test processes, each test file whole on one (its module fixtures run once): the unit tests train on
# one thread, so a second process fills the other core; Ray's sweeps overlap their start-up waits.
XDIST  ?= -n 2 --dist loadfile

test: install                    ## everything, slow end-to-end tests included (what CI runs)
	$(PY) -m pytest $(XDIST)

test-fast: install               ## the fast unit tests only
	$(PY) -m pytest $(XDIST) -m "not slow"

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# the sweep ends with its trials' table, the verdicts, the HTML report (reports/<grid>, beside mlflow.db) and
# the link to its MLflow view
demo: install                    ## make demo GRID=mul_format SCALE=cpu SEEDS=1 (default: the demo grid, 3 seeds)
	$(PY) sweeps/run.py --grid $(GRID) --scale $(SCALE) --seeds $(SEEDS)

reproduce-cpu: install          ## every cpu sweep of docs/RESULTS.md in sequence (hours on 2 cores), then the report
	$(PY) -m lab.reproduce

results: install                 ## only rewrite docs/RESULTS.md from the store in runs/cpu and the archived sweeps
	$(PY) -m lab.results

ui: install                      ## the MLflow UI over the local store
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5000

screenshots: install              ## retake README's pictures (docs/img/) of the last make demo, in headless Chromium
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "screenshots: chromium missing, installing it (apt-get install chromium)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	$(PY) scripts/screenshots.py --grid $(GRID) --report $(REPORT)

clean:
	rm -rf ray_results mlflow.db mlartifacts outputs reports
