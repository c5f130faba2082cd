# One-command workflows. Every target installs what it needs into .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench gate install clean

SRC := packages/graymatter/src packages/tinyagent/src

# Installs show one line per package, so a first run (about a minute) is never silent.
PIP_PROGRESS := $(PYTHON) -u -c "import sys; [print('  ' + line.split(' (')[0].strip(), flush=True) for line in sys.stdin if line.startswith(('Collecting', 'ERROR'))]"

$(STAMP): pyproject.toml packages/graymatter/pyproject.toml packages/tinyagent/pyproject.toml
	@echo "==> creating $(VENV) and installing graymatter (with its postgres and embed extras) + tinyagent (a minute or two the first time)"
	@$(PYTHON) -m venv $(VENV)
	@set -o pipefail; $(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 | $(PIP_PROGRESS)
	@set -o pipefail; $(PY) -m pip install --disable-pip-version-check -e './packages/graymatter[postgres,embed]' -e './packages/tinyagent[mcp]' --group dev 2>&1 | $(PIP_PROGRESS)
	@touch $(STAMP)
	@echo "==> installed; the commands are in $(VENV)/bin (source $(VENV)/bin/activate to put them on PATH)"

install: $(STAMP)

## Run the main job on the embedded default store (offline, temp dir).
demo: $(STAMP)
	@$(VENV)/bin/graymatter demo
	@[ "$$(command -v graymatter)" = "$(CURDIR)/$(VENV)/bin/graymatter" ] || \
		echo "(graymatter is not on your PATH yet: run 'source $(VENV)/bin/activate', or see README.md for pipx / uv)"

## Run every test: lint, the unit/integration suite, and the real-client release gate.
test: $(STAMP)
	$(VENV)/bin/ruff check $(SRC) tests benchmarks
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -m "not gate"
	$(MAKE) gate

## Real-client gate (docs/gate.md): Claude Code, Codex, Gemini CLI, Qwen Code and OpenCode from pinned npm
## installs (cached in .gate/), wired by graymatter init, offline in a loopback-only netns (needs root, npm).
## tests/conformance: the official MCP conformance suite on Node 22, both HTTP faces (docs/conformance.md).
gate: $(STAMP)
	$(PY) -m pytest -q -m gate tests/gate tests/conformance

lint: $(STAMP)
	$(VENV)/bin/ruff check $(SRC) tests benchmarks
	$(VENV)/bin/ruff format --check $(SRC) tests benchmarks
	$(VENV)/bin/mypy

## Benchmarks: one command, prints tables, writes benchmarks/results/*.json.
bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .gate
