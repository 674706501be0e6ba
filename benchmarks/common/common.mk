# common.mk - the build rules every room's Makefile includes.
#
# A room's Makefile is two lines:
#
#     PROGRAMS = foo
#     include ../common/common.mk
#
# and `make` builds $(BUILD)/<room>/foo from foo.c + common/bench.c. Optional, per program:
# foo_SRC (main source if not foo.c), foo_LDLIBS (extra libraries).
#
#     make                 build (incremental: sources, headers and flags are tracked)
#     make V=1             show the commands
#     make BUILD=/tmp/b    build elsewhere (a relative BUILD is relative to the directory
#                          make runs in, i.e. the room's directory under make -C)
#     make clean           remove $(BUILD)/<room>

COMMON_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
REPO_ROOT := $(abspath $(COMMON_DIR)/../..)
BUILD ?= $(REPO_ROOT)/build
override BUILD := $(abspath $(BUILD))

ROOM ?= $(notdir $(CURDIR))
SRCDIR ?= $(CURDIR)
OUT := $(BUILD)/$(ROOM)
OBJ := $(OUT)/.obj

# Warnings are errors and the dialect is fixed; CFLAGS (default -O2 -g) may be overridden.
# Frame pointers kept so `bakeoff profile` (perf record -g, frame-pointer call graphs) can
# walk the programs' own stacks: one push and one mov per call, outside the timed work.
BENCH_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fno-omit-frame-pointer \
	-I$(COMMON_DIR)
BENCH_LDLIBS := -lm
CFLAGS ?= -O2 -g

# ccache where it is installed (the harness's debian-packages list it): an object is taken
# from the cache when its source, headers, compiler and flags are the same, in another
# checkout too, since every fleet host and bisect worktree builds in one of its own (the
# gain: docs/RELIABILITY.md, "The suite's CPU again"). Paths under the checkout are hashed
# relative to it (CCACHE_BASEDIR) and written so in the debug info (-fdebug-prefix-map),
# so an object does not depend on where the checkout is. CC=... given on the command line
# or in the environment is used as it is; ccache whose cache directory cannot be written (a
# read-only home) fails every compile, so it is then left out.
ifeq ($(origin CC),default)
CCACHE := $(shell d=$$(ccache -k cache_dir 2>/dev/null) && mkdir -p "$$d" 2>/dev/null \
	&& test -w "$$d" && echo ccache)
CC := $(strip $(CCACHE) cc)
endif
export CCACHE_BASEDIR := $(REPO_ROOT)
BENCH_CFLAGS += -fdebug-prefix-map=$(REPO_ROOT)=.
# The dependency file names the object by the path make knows it by (under ccache the
# compiler sees a relative one): make's rules for headers attach to the object.
DEPFLAGS = -MMD -MP -MT $@

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-7s %s\n' '$(1)' '$(patsubst $(BUILD)/%,%,$(2))';
endif

.DELETE_ON_ERROR:
.SUFFIXES:

BENCH_BINS := $(addprefix $(OUT)/,$(PROGRAMS))
COMMON_OBJ := $(OBJ)/common/bench.o $(OBJ)/common/counters.o

all: $(BENCH_BINS)
	@:

# The exact compile and link lines, kept in a file that changes only when they do, so that
# `make CFLAGS=-O0` followed by `make` rebuilds everything instead of nothing.
FLAGS_STAMP := $(OBJ)/flags
FLAGS_NOW := $(CC) $(BENCH_CFLAGS) $(CFLAGS) $(CPPFLAGS) | $(LDFLAGS) $(LDLIBS) $(BENCH_LDLIBS)
$(FLAGS_STAMP): FORCE | $(OBJ)
	@printf '%s\n' '$(FLAGS_NOW)' | cmp -s - $@ || printf '%s\n' '$(FLAGS_NOW)' > $@

# One link rule per program: <prog>: <prog>.o (or $(<prog>_SRC)'s object) + bench.o.
define bench_program
$(OUT)/$(1): $(OBJ)/$(basename $(or $($(1)_SRC),$(1).c)).o $(COMMON_OBJ) $(FLAGS_STAMP)
	$$(call msg,LD,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$(filter %.o,$$^) \
		$$(LDLIBS) $$($(1)_LDLIBS) $$(BENCH_LDLIBS)
endef
$(foreach p,$(PROGRAMS),$(eval $(call bench_program,$(p))))

$(OBJ)/%.o: $(SRCDIR)/%.c $(FLAGS_STAMP) | $(OBJ)
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(DEPFLAGS) -c -o $@ $<

$(OBJ)/common/%.o: $(COMMON_DIR)/%.c $(FLAGS_STAMP) | $(OBJ)/common
	$(call msg,CC,$@)
	$(Q)$(CC) $(BENCH_CFLAGS) $(CFLAGS) $(CPPFLAGS) $(DEPFLAGS) -c -o $@ $<

# The system calls' numbers by name, for counters.c (it counts syscalls:sys_enter_NAME as
# raw_syscalls:sys_enter filtered on NAME's number): the lines '{ "read", __NR_read },' for
# every __NR_* the compiler's own <sys/syscall.h> defines, so the numbers are the target's.
# Per room, as counters.o is, and remade with it when the flags change (-m32 has others).
SYSCALL_NRS_H := $(OBJ)/common/syscall_nrs.h
$(SYSCALL_NRS_H): $(FLAGS_STAMP) | $(OBJ)/common
	$(call msg,GEN,$@)
	$(Q)echo '#include <sys/syscall.h>' | $(CC) $(BENCH_CFLAGS) $(CFLAGS) $(CPPFLAGS) -dM -E -x c - \
		| sed -n 's/^#define __NR_\([a-z0-9_]*\) .*/{ "\1", __NR_\1 },/p' | LC_ALL=C sort \
		> $@.tmp && test -s $@.tmp && mv $@.tmp $@
$(OBJ)/common/counters.o: $(SYSCALL_NRS_H)
$(OBJ)/common/counters.o: BENCH_CFLAGS += -I$(OBJ)/common

$(OBJ) $(OBJ)/common:
	$(Q)mkdir -p $@

clean:
	$(call msg,CLEAN,$(OUT))
	$(Q)rm -rf $(OUT)

FORCE:
.PHONY: all clean FORCE

-include $(wildcard $(OBJ)/*.d $(OBJ)/common/*.d)
