// SPDX-License-Identifier: GPL-2.0
/*
 * dump_reader.bpf.c - the bpf-iter reader's program: a map_elem iterator. Attached to one
 * map (by fd, in the link), it runs once per element while user space read()s the
 * iterator's fd, and writes the element as a struct dump_kv (8 bytes) to the seq_file.
 *
 * No global variables, so the object has no .bss/.data/.rodata maps: the only map this room
 * creates is the loader's "bakeoff_dump".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "dump_reader.h"

char LICENSE[] SEC("license") = "GPL";

/* The name is what `bpftool prog show` lists: bakeoff + purpose, 15 characters at most. */
SEC("iter/bpf_map_elem")
int bakeoff_dump_it(struct bpf_iter__bpf_map_elem *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	__u32 *key = ctx->key;
	__u32 *value = ctx->value;
	struct dump_kv kv;

	/* Called once more at the end with key == NULL (the "stop" call). */
	if (!key || !value)
		return 0;
	kv.key = *key;
	kv.value = *value;
	bpf_seq_write(seq, &kv, sizeof(kv));
	return 0;
}
