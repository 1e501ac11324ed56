/*
 * pf_pool.h - fixed-size data buffers, allocated on first use and then kept.
 *
 * Memory given back to the system is slow to get back on the machines this
 * runs on, so a buffer once allocated is never freed until the pool is:
 * pf_pool_put() puts it on a free list for the next pf_pool_get().  The
 * pool never holds more than max_bufs buffers, which is how the daemon's
 * memory budget is enforced.
 *
 * Memory the process never touched is slower still: the first write to
 * each of its pages faults (on a virtual machine, twice).  pf_pool_warm()
 * maps and faults in the first buffers ahead of need, on a thread of the
 * pool's own, so that what a mount receives at its start lands in memory
 * that is ready.
 *
 * A pool is not thread safe: its owner serialises every call (the engine
 * calls it under its lock).  The warm-up thread touches only the slabs it
 * maps, under the pool's own mutex when it hands them over.
 */
#ifndef PF_POOL_H
#define PF_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct pf_pool;

/* buf_size is rounded up to a multiple of the page size. */
int pf_pool_new(size_t buf_size, size_t max_bufs, struct pf_pool **out);
/* Every buffer must have been put back.  Stops the warm-up if it runs. */
void pf_pool_free(struct pf_pool *p);

/*
 * Start a thread that maps and faults in buffers (whole slabs) until the
 * pool has about @bytes mapped, cold slabs included, and never more than
 * max_bufs; pf_pool_get() hands them out before it maps new memory.  Once per pool;
 * returns at once.  -EBUSY if already asked, -errno if the thread cannot
 * start (the pool works as before).
 */
int pf_pool_warm(struct pf_pool *p, size_t bytes);
/* Wait up to @ms for the warm-up to end; true if it has (or never ran). */
bool pf_pool_warm_wait(struct pf_pool *p, unsigned ms);

/* A buffer of buf_size bytes, or NULL when max_bufs are out already or the
 * system has no memory.  Contents are undefined. */
void *pf_pool_get(struct pf_pool *p);
void pf_pool_put(struct pf_pool *p, void *buf);

size_t pf_pool_buf_size(const struct pf_pool *p);
size_t pf_pool_max(const struct pf_pool *p);
size_t pf_pool_in_use(const struct pf_pool *p);	/* handed out now */
size_t pf_pool_allocated(const struct pf_pool *p);	/* ever allocated */
/* Bytes of buffers ever allocated plus those faulted in ahead and not
 * handed out yet: the pool's share of the resident set. */
size_t pf_pool_resident(struct pf_pool *p);
/* Bytes the warm-up has faulted in so far (any thread may ask). */
size_t pf_pool_warmed(struct pf_pool *p);

#endif
