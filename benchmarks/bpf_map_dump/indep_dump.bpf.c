// SPDX-License-Identifier: GPL-2.0
/* indep_dump.bpf.c - the independent check's map_elem iterator (TEST-ONLY; indep_dump.c).
 * Written apart from dump_reader.bpf.c: it writes each element's key and value as two u32. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("iter/bpf_map_elem")
int bko_indep_it(struct bpf_iter__bpf_map_elem *ctx)
{
	__u32 *k = ctx->key, *v = ctx->value;
	__u32 pair[2];

	if (!k || !v) /* the final call of a pass */
		return 0;
	pair[0] = *k;
	pair[1] = *v;
	bpf_seq_write(ctx->meta->seq, pair, sizeof(pair));
	return 0;
}
