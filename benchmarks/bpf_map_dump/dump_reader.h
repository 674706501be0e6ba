/*
 * dump_reader.h - shared by dump_reader.c and dump_reader.bpf.c: the record the map_elem
 * iterator writes to its seq_file for each entry, read back by read() in user space.
 */
#ifndef BAKEOFF_DUMP_READER_H
#define BAKEOFF_DUMP_READER_H

struct dump_kv {
	__u32 key;
	__u32 value;
};

#endif /* BAKEOFF_DUMP_READER_H */
