/*
 * pf_clock.h - monotonic time in nanoseconds.  Decision code never calls
 * this itself; it takes the time as an argument so tests can inject it.
 */
#ifndef PF_CLOCK_H
#define PF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC @ms from now, for pthread_cond_timedwait() on a
 * condition variable set to that clock. */
static inline struct timespec pf_deadline_ms(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
