# bakeoff: `make bench` runs the default profile of every benchmark; `make test` runs the tests.
# Both install what is missing first (Debian packages, then the Python venv), then build.

VENV     := .venv
BAKEOFF  := $(VENV)/bin/bakeoff
PYTEST   := $(VENV)/bin/pytest
PROFILE  ?= default
# Optional dependency groups installed into the venv; fleet hosts set EXTRAS= (runtime only).
EXTRAS   ?= test,fleet

.PHONY: bench test test-fast test-load lint build deps system-deps venv clean distclean

bench: deps build
	$(BAKEOFF) run --profile $(PROFILE)

# The whole suite, three workers (pytest-xdist; tests/conftest.py says how they are grouped).
# Three on two vCPUs: a worker spends about half its time waiting on the processes it runs
# (the suite used 54% of both CPUs with two workers; docs/RELIABILITY.md, "The test suite").
JOBS     ?= 3

test: deps build lint
	$(PYTEST) -q -n $(JOBS) --dist loadgroup --durations=10 tests

# The edit-test loop: unit, property and in-process tests, no live benchmark (< 2 min).
test-fast: venv
	BAKEOFF_TEST_TIER=fast $(PYTEST) -q -n $(JOBS) -m "not slow" tests

# The whole suite with every CPU kept busy by stress-ng (docs/RELIABILITY.md).
test-load: deps build
	scripts/under-load $(MAKE) test

lint: venv
	$(VENV)/bin/ruff check bakeoff tests benchmarks
	$(VENV)/bin/mypy

build: system-deps
	$(MAKE) -C benchmarks

deps: system-deps venv

# Debian packages every room lists in its debian-packages file, plus the harness's own.
system-deps:
	@scripts/install-system-deps

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml | system-deps
	@test -x $(VENV)/bin/python || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.$(if $(EXTRAS),[$(EXTRAS)])'
	@touch $@

clean:
	$(MAKE) -C benchmarks clean

distclean: clean
	rm -rf $(VENV) build
