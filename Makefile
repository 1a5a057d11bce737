# The README's two commands: `make run` and `make test`. Both create the
# environment (.venv, Python 3.11, pinned lock) when it is missing.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null || echo python3.11)
VENV ?= .venv
PY := $(VENV)/bin/python
ARGS ?=
PYTEST_ARGS ?=
# pytest-xdist processes for `make test`: one more than the cores, at most 4
# (each holds TensorFlow and its own TFF worker, ~1.5 GB); TEST_WORKERS=0 runs
# in one. One more: a test process waits on its TFF worker, children and
# sleeps, so 2 processes kept 2 cores only ~1.7 busy; on a fresh clone here
# 3 processes took 637 s against 2's 716 s (docs/performance.md).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n + 1 < 4 ? n + 1 : 4 )))

# 3 hides TF 2.14's harmless import-time "Unable to register cuDNN factory" errors.
export TF_CPP_MIN_LOG_LEVEL ?= 3
export MPLBACKEND ?= Agg
export PYTHONDONTWRITEBYTECODE ?= 1
# Inherited by every process a target starts (TFF workers too), so the final
# worker check only looks at our own.
export FEDERATED_VISION_SESSION := make-$(shell date +%s%N)

.PHONY: env run test bench clean-env

env: $(VENV)/.complete $(VENV)/.shim

$(VENV)/.complete: requirements.lock setup.py tools/make_env.sh
	@rm -f $(VENV)/.complete
	@bash tools/make_env.sh "$(PYTHON)" "$(VENV)"

# The loopback shim is compiled here, once, so runs need no C compiler; a
# machine without one stops here with one line naming what to install.
$(VENV)/.shim: $(VENV)/.complete federated_vision/native/loopback_bind.py
	@$(PY) -m federated_vision.native.loopback_bind --install
	@touch $(VENV)/.shim

run: env
	$(PY) -m experiments.train_main $(ARGS)
	@bash tools/check_no_workers.sh

test: env
	@status=0; $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) tests || status=$$?; \
	  bash tools/check_no_workers.sh || status=1; exit $$status

bench: env
	$(PY) -m benchmarks.run_all $(ARGS)

clean-env:
	rm -rf $(VENV)
