/*
 * traced_tp.h - the LTTng-UST tracepoint provider of the instrumented library: one event at
 * entry (the argument) and one at exit (the return value), the same payload the eBPF tracer
 * records. LTTng 2.13 API (LTTNG_UST_ prefixed names).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bakeoff_traced

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./traced_tp.h"

#if !defined(BAKEOFF_TRACED_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BAKEOFF_TRACED_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(bakeoff_traced, entry,
	LTTNG_UST_TP_ARGS(uint32_t, duration_us),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, duration_us, duration_us)))

LTTNG_UST_TRACEPOINT_EVENT(bakeoff_traced, exit,
	LTTNG_UST_TP_ARGS(uint64_t, ret),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, ret, ret)))

#endif /* BAKEOFF_TRACED_TP_H */

#include <lttng/tracepoint-event.h>
