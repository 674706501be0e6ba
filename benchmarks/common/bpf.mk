# bpf.mk - BPF CO-RE objects and libbpf skeletons, for rooms with BPF programs.
# Include it after common.mk:
#
#     PROGRAMS = foo
#     BPF_PROGRAMS = foo          # foo.bpf.c -> foo.bpf.o -> foo.skel.h, included by foo.c
#     foo_LDLIBS = $(LIBBPF_LDLIBS)
#     include ../common/common.mk
#     include ../common/bpf.mk
#
# vmlinux.h is generated once per build directory from the running kernel's BTF
# (/sys/kernel/btf/vmlinux); CO-RE relocations make the objects portable across kernels.

CLANG ?= clang
BPFTOOL ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
VMLINUX_H := $(BUILD)/common/vmlinux.h
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror \
	-I$(dir $(VMLINUX_H)) -I$(COMMON_DIR)
LIBBPF_LDLIBS := -lbpf -lelf -lz

# The loaders include their generated skeleton from the object directory.
BENCH_CFLAGS += -I$(OBJ)

# Written to a temp file and renamed: rooms may build in parallel and share this header.
$(VMLINUX_H):
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp.$$$$ && mv $@.tmp.$$$$ $@

$(OBJ)/%.bpf.o: $(SRCDIR)/%.bpf.c $(VMLINUX_H) | $(OBJ)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(OBJ)/%.skel.h: $(OBJ)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# Keep the intermediates: make would otherwise delete the .bpf.o after making the skeleton.
.PRECIOUS: $(OBJ)/%.bpf.o $(OBJ)/%.skel.h

# A loader's object needs its skeleton before it compiles (the .d files know only after).
$(foreach b,$(BPF_PROGRAMS),$(eval $(OBJ)/$(b).o: $(OBJ)/$(b).skel.h))
