/*
 * posix_int.h - private to the POSIX backend (posix_backend.c,
 * posix_uring.c, posix_pread.c): the backend instance, its two read
 * engines' state, and what each file lends the others.  Not part of the
 * library's interface: callers use pf_backend.h.
 *
 * DESIGN
 * See posix_backend.c.  pb->lock guards qhead, qtail and stopping and is
 * never held across I/O or a done() call; the ring, its slots and their
 * freelist belong to the ring thread; each pread worker owns its scratch.
 */
#ifndef PF_POSIX_INT_H
#define PF_POSIX_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include <liburing.h>

#include "pf_backend.h"

#define DEFAULT_QUEUE_DEPTH	64
#define DEFAULT_FALLBACK_THREADS 4
/* io_uring rings hold at most 32768 entries; both limits are sanity caps */
#define MAX_QUEUE_DEPTH		4096
#define MAX_FALLBACK_THREADS	256
/* iovecs a private copy holds without a heap allocation */
#define INLINE_IOVS		8
/* an IORING_OP_READ length is 32 bits; larger reads go in pieces */
#define MAX_READ_CHUNK		(1u << 30)

/*
 * An open file of the directory: what the engine holds as the opaque
 * struct pf_bfile (pf_backend.h) is one of these; to_pfile() converts.
 */
struct posix_file {
	int fd;
	uint64_t size;		/* pinned at open */
	struct timespec mtime;	/* pinned at open */
	struct timespec ctime;	/* too: a rewrite that restores the mtime
				 * (touch -d) cannot restore it */
	atomic_bool warned;	/* "changed during read" logged already */
	char path[];		/* for log messages */
};

static inline struct posix_file *to_pfile(struct pf_bfile *bf)
{
	return (struct posix_file *)bf;
}

/* A private, growable iovec array. */
struct iov_scratch {
	struct iovec *heap;
	int cap;		/* entries in heap */
	struct iovec inl[INLINE_IOVS];
};

/* One read in flight at the ring. */
struct ur_slot {
	struct pf_bio *bio;
	uint64_t total;		/* bytes the bio's iovec holds */
	struct ur_slot *next_free;
	struct iov_scratch scratch;
};

struct ur_engine {
	struct io_uring ring;
	bool ring_ready;
	int efd;
	pthread_t thread;
	bool thread_started;
	struct ur_slot *slots;	/* depth of them */
	struct ur_slot *free;
	unsigned nfree;
	unsigned inflight;
	bool err_logged;
};

struct pr_worker {
	struct posix_backend *pb;
	pthread_t thread;
	struct iov_scratch scratch;
};

struct posix_backend {
	struct pf_backend be;	/* first: ops see a struct pf_backend */
	int rootfd;
	/* openat2() works here; cleared for good the first time it fails
	 * with ENOSYS */
	atomic_bool has_openat2;
	bool uring;		/* engine: io_uring, else pread */
	unsigned depth;

	pthread_mutex_t lock;	/* guards qhead, qtail, stopping */
	pthread_cond_t cond;	/* pread workers wait for bios here */
	bool lock_ready;
	bool cond_ready;
	struct pf_bio *qhead;
	struct pf_bio *qtail;
	bool stopping;

	struct ur_engine ur;

	struct pr_worker *workers;
	unsigned nworkers;	/* started */
};

/*
 * Set on the ring thread: a bio submitted from a done() callback needs no
 * eventfd wake-up, the ring thread looks at the queue before it sleeps.
 */
extern _Thread_local const struct posix_backend *pf_posix_tl_ring_owner;

/* ---- posix_backend.c ---- */

int64_t pf_posix_iov_total(const struct iovec *iov, int cnt);
struct iovec *pf_posix_scratch_get(struct iov_scratch *sc, int n);
int pf_posix_iov_skip(const struct iovec *iov, int cnt, uint64_t skip,
	     struct iovec *dst);
int64_t pf_posix_pin_check(const struct pf_bio *bio, uint64_t total,
		  int64_t res);
struct pf_bio *pf_posix_queue_take(struct posix_backend *pb, unsigned max);
void pf_posix_cancel_chain(struct pf_bio *b);
int pf_posix_spawn(
	pthread_t *t, const char *name, void *(*fn)(void *), void *arg);

/* ---- posix_uring.c: the io_uring engine ---- */

void pf_posix_uring_wake(struct posix_backend *pb);
int pf_posix_uring_init(struct posix_backend *pb, int *setup_err);

/* ---- posix_pread.c: the pread engine ---- */

int pf_posix_pread_init(struct posix_backend *pb, unsigned nthreads);

#endif
