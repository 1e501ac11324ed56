/*
 * uring.c - draining an io_uring's completion queue in batches, for the
 * rings of posix_uring.c and diskcache_ring.c (pf_uring.h).
 *
 * DESIGN
 * No state of its own: it runs on the calling thread, which must own the
 * ring (each ring here has one thread that alone submits to and reaps
 * it), and holds no lock; the handlers it calls take what locks they need.
 */
#include <stdint.h>

#include <liburing.h>

#include "pf_uring.h"

/* CQEs copied out of the ring per batch */
#define CQE_BATCH 32

unsigned pf_uring_reap(struct io_uring *ring, pf_uring_cqe_fn *fn, void *arg)
{
	struct {
		uint64_t ud;
		int res;
	} batch[CQE_BATCH];
	struct io_uring_cqe *cqe;
	unsigned total = 0;
	unsigned head;
	unsigned n;

	do {
		n = 0;
		io_uring_for_each_cqe(ring, head, cqe) {
			batch[n].ud = cqe->user_data;
			batch[n].res = cqe->res;
			if (++n == CQE_BATCH)
				break;
		}
		/* hand the CQ slots back before running callbacks */
		io_uring_cq_advance(ring, n);
		total += n;
		for (unsigned i = 0; i < n; i++)
			fn(arg, (void *)(uintptr_t)batch[i].ud, batch[i].res);
	} while (n == CQE_BATCH);
	return total;
}
