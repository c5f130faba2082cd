# One-command workflows. Every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench gate install clean

SRC := packages/graymatter/src packages/tinyagent/src

$(STAMP): pyproject.toml packages/graymatter/pyproject.toml packages/tinyagent/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e './packages/graymatter[postgres]' -e ./packages/tinyagent --group dev
	touch $(STAMP)

install: $(STAMP)

## Run the main job on the embedded default store (offline, temp dir).
demo: $(STAMP)
	$(VENV)/bin/graymatter demo

## Run every test: lint, the unit/integration suite, and the real-client release gate.
test: $(STAMP)
	$(VENV)/bin/ruff check $(SRC) tests benchmarks
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -m "not gate"
	$(MAKE) gate

## Real-client gate (docs/gate.md): Claude Code, Codex, Gemini CLI, Qwen Code and OpenCode from pinned npm
## installs (cached in .gate/), wired by graymatter init, offline in a loopback-only netns (needs root, npm).
gate: $(STAMP)
	$(PY) -m pytest -q -m gate tests/gate

lint: $(STAMP)
	$(VENV)/bin/ruff check $(SRC) tests benchmarks
	$(VENV)/bin/ruff format --check $(SRC) tests benchmarks
	$(VENV)/bin/mypy

## Benchmarks: one command, prints tables, writes benchmarks/results/*.json.
bench: $(STAMP)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .gate
