# bakeoff: `make bench` runs the default profile of every benchmark; `make test` runs the tests.
# Both install what is missing first (Debian packages, then the Python venv), then build.

VENV     := .venv
BAKEOFF  := $(VENV)/bin/bakeoff
PYTEST   := $(VENV)/bin/pytest
PROFILE  ?= default
# The build's parallel jobs: the rooms build independently (shared outputs are written to a
# temp file and renamed: benchmarks/common/bpf.mk).
BUILD_JOBS ?= $(shell nproc)
# The installer, pinned in pyproject.toml ([tool.bakeoff] installer): uv installs the venv's
# packages in seconds where pip took 30 to 50 (byte-compiling every file of plotly and scipy).
UV_PIN   := $(shell sed -n 's/^installer = "\(.*\)"/\1/p' pyproject.toml)
UV       := $(VENV)/bin/uv
# pip's settings from the environment, which uv does not read: a fleet host installs from the
# pushed wheelhouse (PIP_NO_INDEX=1, PIP_FIND_LINKS=its directory).
UV_OFFLINE = $(if $(PIP_NO_INDEX),--no-index) $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS))

.PHONY: bench test test-fast test-load test-kernels lint build deps system-deps venv venv-dev fleet-deps kernel-deps clean distclean

# The runtime only: no test tools, no Ansible.
bench: deps build
	$(BAKEOFF) run --profile $(PROFILE)

# The whole suite, three workers (pytest-xdist; conftest.py says how they are grouped): tests/
# and each room's benchmarks/<room>/tests/ (pyproject.toml's testpaths).
# Three on two vCPUs: a worker spends about half its time waiting on the processes it runs
# (the suite used 54% of both CPUs with two workers; docs/RELIABILITY.md, "The test suite").
JOBS     ?= 3

test: system-deps venv-dev build lint
	$(PYTEST) -q -n $(JOBS) --dist loadgroup --durations=10

# The edit-test loop: unit, property and in-process tests, no live benchmark (< 2 min).
test-fast: venv-dev
	BAKEOFF_TEST_TIER=fast $(PYTEST) -q -n $(JOBS) -m "not slow"

# The whole suite with every CPU kept busy by stress-ng (docs/RELIABILITY.md).
test-load: deps build
	scripts/under-load $(MAKE) test

# Every room's functional check on Debian 12's own kernel (6.1) and its backport (6.12), each
# booted in a virtme-ng guest (docs/KERNELS.md): fails on any variant in error. Then the same
# through a fleet, end to end (scripts/fleet-kernels-check): two namespace hosts with real
# sshd, one without LTTng's tools, set up by the playbook, each booting FLEET_KERNEL; fails
# unless the fleet's table across hosts and kernels has every cell, no error, and LTTng's
# variant running on one host and skipping on the other. Outside `make test`: it downloads
# two kernels and boots them (minutes each under an emulator); the fleet part pushes HEAD,
# so commit first.
KERNEL_61  ?= linux-image-6.1.0-*-amd64
KERNEL_612 ?= linux-image-6.12.*+deb12-amd64
KERNELS_OUT ?= results/kernels-$(shell date -u +%Y%m%d-%H%M%S)
FLEET_KERNEL ?= deb612=$(KERNEL_612)
FLEET_KERNEL_ROOMS ?= mremap-vs-memcpy tracing-overhead

test-kernels: kernel-deps fleet-deps build
	$(BAKEOFF) run --functional --kernel 'deb61=$(KERNEL_61)' --kernel 'deb612=$(KERNEL_612)' \
		--out $(KERNELS_OUT)
	$(VENV)/bin/python scripts/fleet-kernels-check --hosts 2 --kernel '$(FLEET_KERNEL)' \
		--out $(KERNELS_OUT)-fleet $(FLEET_KERNEL_ROOMS)

# The layer order and "no cycle" (import-linter's contracts in pyproject.toml), no module taking
# another's private name, and every commit since the move into packages with a short subject
# and a body: checked, not believed.
lint: venv-dev
	$(VENV)/bin/ruff check bakeoff tests benchmarks conftest.py
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	scripts/lint-private-imports
	scripts/lint-commits

# The repo's Python byte-compiled too: where PYTHONDONTWRITEBYTECODE is set, every trial driver
# (tracing-overhead's is Python) would otherwise compile its modules afresh each trial.
build: system-deps
	$(MAKE) -j$(BUILD_JOBS) -C benchmarks
	@python3 -m compileall -q bakeoff benchmarks >/dev/null

# What running bakeoff needs (make bench, a fleet host).
deps: system-deps venv

# Debian packages every room lists in its debian-packages file, plus the harness's own.
system-deps:
	@scripts/install-system-deps

# The venv: the runtime's packages (venv), or those and the test tools, the linters, Ansible
# for the fleet controller and pip for its wheelhouse (venv-dev: make test).
venv: $(VENV)/.installed
venv-dev: $(VENV)/.installed-dev
# The controller of `bakeoff fleet run`: the runtime, Ansible (ansible-core) and pip for the
# wheelhouse pushed to the hosts (docs/FLEET.md). venv-dev includes it.
fleet-deps: system-deps $(VENV)/.installed-fleet

# What --kernel boots guests with: qemu, busybox, kmod (debian-packages) and virtme-ng (the
# `kernels` extra). Not part of venv-dev: make test boots nothing.
kernel-deps: system-deps $(VENV)/.installed-kernels

$(UV): | system-deps
	@test -x $(VENV)/bin/python || python3 -m venv --without-pip $(VENV)
	python3 -m pip --python $(VENV)/bin/python install --quiet --disable-pip-version-check \
		--no-compile --root-user-action=ignore '$(UV_PIN)'

$(VENV)/.installed: pyproject.toml | $(UV)
	$(UV) pip install --python $(VENV)/bin/python --quiet $(UV_OFFLINE) -e .
	@touch $@

# Byte-compiled at install for the tests (hundreds of bakeoff processes, each importing numpy,
# scipy, plotly, typer); make bench starts one, which compiles what it imports for less.
$(VENV)/.installed-fleet: pyproject.toml | $(UV)
	$(UV) pip install --python $(VENV)/bin/python --quiet $(UV_OFFLINE) -e '.[fleet]' pip
	@touch $@ $(VENV)/.installed

$(VENV)/.installed-dev: pyproject.toml | $(UV)
	$(UV) pip install --python $(VENV)/bin/python --quiet --compile-bytecode $(UV_OFFLINE) \
		-e '.[test,fleet]' pip
	@touch $@ $(VENV)/.installed $(VENV)/.installed-fleet

$(VENV)/.installed-kernels: pyproject.toml | $(UV)
	$(UV) pip install --python $(VENV)/bin/python --quiet $(UV_OFFLINE) -e '.[kernels]'
	@touch $@

clean:
	$(MAKE) -C benchmarks clean

distclean: clean
	rm -rf $(VENV) build
