/* TEST-ONLY: the LTTng-UST provider of indep_trace (the independent check; METHOD.md, "The
 * independent check"): an entry event with the argument, an exit event with the result. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER indep_trace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "indep_trace_tp.h"

#if !defined(INDEP_TRACE_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define INDEP_TRACE_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(indep_trace, entry,
	LTTNG_UST_TP_ARGS(unsigned int, duration_us),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(unsigned int, duration_us, duration_us)))

LTTNG_UST_TRACEPOINT_EVENT(indep_trace, exit,
	LTTNG_UST_TP_ARGS(long, ret),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(long, ret, ret)))

#endif

#include <lttng/tracepoint-event.h>
