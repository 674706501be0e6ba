# bakeoff: `make bench` runs the default profile of every benchmark; `make test` runs the tests.
# Both install what is missing first (Debian packages, then the Python venv), then build.

VENV     := .venv
BAKEOFF  := $(VENV)/bin/bakeoff
PYTEST   := $(VENV)/bin/pytest
PROFILE  ?= default
# Optional dependency groups installed into the venv; fleet hosts set EXTRAS= (runtime only).
EXTRAS   ?= test,fleet

.PHONY: bench test lint build deps system-deps venv clean distclean

bench: deps build
	$(BAKEOFF) run --profile $(PROFILE)

test: deps build lint
	$(PYTEST) -q tests

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
