/*
 * pf_uring.h - what the two io_uring owners (the POSIX backend's ring,
 * posix_uring.c, and the disk cache's, diskcache_ring.c) share: draining
 * the completion queue in batches.
 *
 * Only the thread that owns @ring may call pf_uring_reap(), as with every
 * other use of a struct io_uring here.
 */
#ifndef PF_URING_H
#define PF_URING_H

struct io_uring;

/*
 * Handles one completion: @data is the SQE's user_data as a pointer, @res
 * the CQE's result.  Runs on the ring's thread; it may prepare and submit
 * new SQEs.
 */
typedef void pf_uring_cqe_fn(void *arg, void *data, int res);

/*
 * Calls @fn(@arg, ...) for every CQE ready on @ring, in batches of up to 32
 * copied out of the ring, each batch's CQ slots handed back to the kernel
 * before its handlers run (so that completions of SQEs they submit find
 * room); goes on while batches come full.  Returns how many CQEs there
 * were.
 */
unsigned pf_uring_reap(struct io_uring *ring, pf_uring_cqe_fn *fn, void *arg);

#endif
