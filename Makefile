# Two entry points for a fresh machine: `make demo` and `make test` (`make lint`: ruff and mypy, run by CI first).
# Both create/refresh the local virtualenv first (only when pyproject or constraints change).
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv clean

$(STAMP): pyproject.toml constraints/cpu.txt
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -c constraints/cpu.txt -e '.[model,test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m pipeline.demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	# Enabled by the integrator once the whole tree has been through `ruff format` once:
	# $(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) draftset-home
