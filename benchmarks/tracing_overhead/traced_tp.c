/* traced_tp.c - instantiates the tracepoint provider of traced_tp.h in the instrumented
 * library (probes and tracepoint definitions in the same shared object). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "traced_tp.h"
