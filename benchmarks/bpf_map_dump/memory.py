"""What one (map type, entries) costs in memory while a trial runs, and how long its loader
spends filling: the figures the skip decision and the loaders' eviction use (METHOD.md)."""

from __future__ import annotations

MAX_BATCH = 65536  # the largest batch a reader asks for (batch-65536)


def map_bytes(kind: str, entries: int) -> int:
    """The map's kernel memory, from the memlock figures measured here (METHOD.md): a
    preallocated hash element is 64 B plus a 16 B bucket per power-of-two slot; an array
    value slot is 8 B (value_size rounded up to 8), page-aligned for BPF_F_MMAPABLE."""
    if kind == "hash":
        return 64 * entries + 16 * (1 << max(0, entries - 1).bit_length())
    return 8 * entries + 2 * 4096


def bytes_needed(kind: str, entries: int) -> int:
    """The map, the loader's fill input (keys and values, freed before it holds), and the
    reader's output buffers (8 B per entry plus room for two 64Ki batches) and bitmap."""
    reader = 8 * (entries + 2 * MAX_BATCH) + entries // 8 + 16 * 1024 * 1024
    return map_bytes(kind, entries) + 8 * entries + reader


def fill_reps(entries: int) -> int:
    """Fill-timing rounds per loader (each fills both ways, and a hash map is emptied between
    fills): about 2 us per entry per round for a hash map, so fewer rounds for larger maps.
    About a million entry-rounds: no question reads the fill, and at the default profile's
    500k entries five rounds took 9 of the 73 s `make bench` spent in this room (its two
    loaders; docs/notes/make-bench-time-20261129b-epyc.md), two about 4."""
    if entries >= 16_000_000:
        return 1
    return max(2, min(5, 1_000_000 // entries))
