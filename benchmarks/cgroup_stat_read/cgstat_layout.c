/*
 * cgstat_layout - where the BPF iterator of cgstat would read each memory.stat field on a
 * kernel, from that kernel's BTF alone (no BPF loaded, no root needed for a BTF file): the
 * check that the memcg layout of a kernel is known, runnable against any vmlinux or raw BTF.
 *
 *   cgstat_layout                      # the running kernel (/sys/kernel/btf/vmlinux)
 *   cgstat_layout /path/to/vmlinux     # another kernel's (e.g. unpacked from Debian's .deb)
 *
 * Prints "states N <how>", "events N <table>", "local yes|no", then one line per known
 * memory.stat field: "field v1|v2 NAME ITEM state|event SLOT" or "... absent". Exit 0: the
 * layout is known and consistent (distinct items in distinct slots, every slot inside its
 * array); 3: unknown layout (one line why); 1: inconsistent; 2: bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "memcg_layout.h"
#include "memstat.h"

#define MAX_ITEMS 256

struct seen {
	const char *item[MAX_ITEMS];
	int slot[MAX_ITEMS];
	bool is_event[MAX_ITEMS];
	size_t n;
};

/* 0, or 1 after printing why this slot collides with another item's or lies outside. */
static int record(struct seen *s, const struct memcg_layout *l, const char *item, bool ev, int slot)
{
	int len = ev ? l->events : l->states;

	if (slot >= len) {
		fprintf(stderr, "cgstat_layout: %s at slot %d of an array of %d\n", item, slot, len);
		return 1;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->item[i], item) == 0)
			return 0;
		if (s->is_event[i] == ev && s->slot[i] == slot) {
			fprintf(stderr, "cgstat_layout: %s and %s both at %s slot %d\n", s->item[i],
				item, ev ? "event" : "state", slot);
			return 1;
		}
	}
	if (s->n < MAX_ITEMS) {
		s->item[s->n] = item;
		s->slot[s->n] = slot;
		s->is_event[s->n] = ev;
		s->n++;
	}
	return 0;
}

static int print_fields(const struct btf *btf, const struct memcg_layout *l, enum cg_version v,
			struct seen *seen)
{
	size_t n;
	const struct memstat_field_def *defs = memstat_field_defs(v, &n);
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		const char *item = defs[i].item;
		bool ev;
		int slot;

		if (memcg_layout_slot(btf, l, item, &ev, &slot) != 0 &&
		    strcmp(item, "MEMCG_VMALLOC") == 0) {
			item = "NR_VMALLOC";
			memcg_layout_slot(btf, l, item, &ev, &slot);
		}
		if (slot < 0) {
			printf("field v%d %s %s absent\n", (int)v, defs[i].name, defs[i].item);
			continue;
		}
		printf("field v%d %s %s %s %d\n", (int)v, defs[i].name, item, ev ? "event" : "state",
		       slot);
		bad |= record(seen, l, item, ev, slot);
	}
	return bad;
}

int main(int argc, char **argv)
{
	static struct seen seen;
	struct memcg_layout l;
	struct btf *btf;
	char err[512];
	int bad;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: cgstat_layout [VMLINUX_OR_BTF_FILE]\n");
		return 2;
	}
	libbpf_set_print(NULL);
	btf = argc == 2 ? btf__parse(argv[1], NULL) : btf__load_vmlinux_btf();
	if (!btf) {
		char why[128];

		libbpf_strerror(errno, why, sizeof(why)); /* knows libbpf's own codes too */
		fprintf(stderr, "cgstat_layout: no BTF in %s: %s\n",
			argc == 2 ? argv[1] : "the running kernel", why);
		return argc == 2 ? 2 : 3;
	}
	if (memcg_layout_read(btf, &l, err, sizeof(err)) != 0) {
		fprintf(stderr, "cgstat_layout: %s\n", err);
		btf__free(btf);
		return 3;
	}
	printf("states %d %s\n", l.states,
	       l.states_direct ? "enum" : l.state_table);
	printf("events %d %s\n", l.events, l.event_table);
	printf("local %s\n", l.has_local ? "yes" : "no");
	bad = print_fields(btf, &l, CG_V2, &seen) | print_fields(btf, &l, CG_V1, &seen);
	btf__free(btf);
	return bad ? 1 : 0;
}
