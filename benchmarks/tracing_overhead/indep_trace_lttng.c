/* TEST-ONLY: the LTTng-traced function of indep_trace, in a shared object of its own so that
 * indep_trace dlopen()s it only once its recording session is started: LTTng-UST's
 * constructor then registers with the session daemon and waits for it, so the tracepoints
 * are live before the first timed call (linked into the program, the registration could
 * still be under way). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "indep_trace_tp.h"

/* The same body as indep_trace.c's untraced functions, between the two tracepoints. */
__attribute__((noipa, visibility("default"))) long indep_traced_lttng(unsigned int duration_us)
{
	long ret;

	lttng_ust_tracepoint(indep_trace, entry, duration_us);
	__asm__ volatile("" ::: "memory");
	ret = (long)duration_us;
	lttng_ust_tracepoint(indep_trace, exit, ret);
	return ret;
}
