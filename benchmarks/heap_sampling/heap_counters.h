/*
 * heap_counters.h - what heap-sampling's counted samples count (counters.h), besides the
 * software events (minor page faults, context switches): the system calls through which an
 * allocator or a sampler gets memory. A sampler that needs none per allocation shows 0 here;
 * one that grows a table or a heap shows its mmap/brk calls and, in page_faults_minor, the
 * pages it touches first.
 */
#ifndef HEAP_COUNTERS_H
#define HEAP_COUNTERS_H

#define HEAP_TRACEPOINTS                                                                   \
	"syscalls:sys_enter_mmap,syscalls:sys_enter_brk"

#endif
