/*
 * posix_uring.c - the POSIX backend's io_uring engine: one ring of
 * queue_depth reads, owned by one thread, fed from the submit queue.
 *
 * DESIGN
 * All but pf_posix_uring_wake() (any submitting thread) and
 * pf_posix_uring_init() (the constructing thread) runs on the ring thread,
 * which alone touches the ring, its slots and the slot freelist.  It takes
 * pb->lock only to take bios off the submit queue (pf_posix_queue_take()) and
 * never holds it across I/O or a done() call.  It sleeps in read() on an
 * eventfd that the ring signals for every CQE and submitters signal when they
 * make the queue non-empty, and drains the CQEs with pf_uring_reap() (uring.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "pf_backend.h"
#include "pf_log.h"
#include "pf_uring.h"
#include "posix_int.h"

/* ------------------------------------------------------------------ */
/*
 * io_uring engine.  All but pf_posix_uring_wake() and pf_posix_uring_init()
 * runs on the ring thread.
 *
 * The ring thread never sleeps in io_uring_enter(): the kernel signals an
 * eventfd registered with the ring for every CQE, submitters signal the
 * same eventfd, and the thread sleeps in read() on it.  One wait covers
 * both events and needs no SQE of its own; and it is a plain blocking
 * syscall, which valgrind runs without its global lock, whereas a thread
 * waiting in io_uring_enter() under valgrind stops every other thread.
 */

static struct io_uring_sqe *ur_get_sqe(struct ur_engine *ur)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ur->ring);

	/*
	 * The SQ has an entry for each slot, so it cannot be full; should
	 * it be, push what is in it to the kernel.
	 */
	if (!sqe) {
		io_uring_submit(&ur->ring);
		sqe = io_uring_get_sqe(&ur->ring);
	}
	return sqe;
}

/* Queues the read of what is left of @s's bio. */
static int ur_issue(struct posix_backend *pb, struct ur_slot *s)
{
	struct pf_bio *bio = s->bio;
	uint64_t off = bio->off + bio->bdone;
	const struct iovec *iov = bio->iov;
	unsigned cnt = (unsigned)bio->iovcnt;
	struct io_uring_sqe *sqe;

	/* a resubmitted multi-iovec read needs its own, advanced copy */
	if (cnt > 1 && bio->bdone) {
		struct iovec *left =
			pf_posix_scratch_get(&s->scratch, bio->iovcnt);

		if (!left)
			return -ENOMEM;
		cnt = (unsigned)pf_posix_iov_skip(
			bio->iov, bio->iovcnt, bio->bdone, left);
		iov = left;
	}
	sqe = ur_get_sqe(&pb->ur);
	if (!sqe)
		return -EBUSY;
	if (bio->iovcnt == 1) {
		uint64_t left = iov[0].iov_len - bio->bdone;
		unsigned len = left < MAX_READ_CHUNK ? (unsigned)left
						     : MAX_READ_CHUNK;

		io_uring_prep_read(sqe, to_pfile(bio->file)->fd,
				   (char *)iov[0].iov_base + bio->bdone, len,
				   off);
	} else {
		io_uring_prep_readv(sqe, to_pfile(bio->file)->fd, iov, cnt,
				    off);
	}
	io_uring_sqe_set_data(sqe, s);
	return 0;
}

/* Completes @s's bio with @res (bytes read so far or -errno). */
static void ur_finish(struct posix_backend *pb, struct ur_slot *s,
		      int64_t res)
{
	struct ur_engine *ur = &pb->ur;
	struct pf_bio *bio = s->bio;

	res = pf_posix_pin_check(bio, s->total, res);
	s->bio = NULL;
	s->next_free = ur->free;
	ur->free = s;
	ur->nfree++;
	ur->inflight--;
	/* last: done() may free the bio, and close its file */
	bio->done(bio, res);
}

static void ur_start(struct posix_backend *pb, struct pf_bio *bio)
{
	struct ur_engine *ur = &pb->ur;
	struct ur_slot *s = ur->free;
	int ret;

	ur->free = s->next_free;
	ur->nfree--;
	ur->inflight++;
	s->bio = bio;
	/* checked by submit() */
	s->total = (uint64_t)pf_posix_iov_total(bio->iov, bio->iovcnt);
	ret = ur_issue(pb, s);
	if (ret < 0)
		ur_finish(pb, s, ret);
}

/* A CQE of slot @data (pf_uring_cqe_fn). */
static void ur_cqe(void *arg, void *data, int res)
{
	struct posix_backend *pb = arg;
	struct ur_slot *s = data;
	struct pf_bio *bio = s->bio;
	int ret;

	if (res == -EAGAIN || res == -EINTR)
		goto again;
	if (res < 0) {
		ur_finish(pb, s, res);
		return;
	}
	/* 0 before the iovec is full is the end of the file */
	bio->bdone += (uint64_t)res;
	if (res == 0 || bio->bdone >= s->total) {
		ur_finish(pb, s, (int64_t)bio->bdone);
		return;
	}
again:
	ret = ur_issue(pb, s);
	if (ret < 0)
		ur_finish(pb, s, ret);
}

/*
 * Moves queued bios into free slots (or cancels them all once stopping);
 * returns whether the backend is stopping.
 */
static bool ur_fill(struct posix_backend *pb)
{
	struct ur_engine *ur = &pb->ur;
	struct pf_bio *chain;
	bool stopping;

	pthread_mutex_lock(&pb->lock);
	stopping = pb->stopping;
	chain = pf_posix_queue_take(pb, stopping ? UINT_MAX : ur->nfree);
	pthread_mutex_unlock(&pb->lock);

	if (stopping) {
		pf_posix_cancel_chain(chain);
		return true;
	}
	while (chain) {
		struct pf_bio *next = chain->bnext;

		chain->bnext = NULL;
		ur_start(pb, chain);
		chain = next;
	}
	return false;
}

/* After a failed submission or wait: say so once, retry in a moment. */
static void ur_backoff(struct posix_backend *pb, const char *what, int err)
{
	const struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };

	/* EAGAIN/EBUSY: the kernel is short of resources for a moment */
	if (err != -EAGAIN && err != -EBUSY && !pb->ur.err_logged) {
		pb->ur.err_logged = true;
		pf_err("io_uring %s: %s", what, strerror(-err));
	}
	nanosleep(&ms, NULL);
}

/* Returns false if SQEs are left unsubmitted. */
static bool ur_submit(struct posix_backend *pb)
{
	struct io_uring *ring = &pb->ur.ring;
	int ret;

	do {
		ret = io_uring_submit(ring);
	} while (ret == -EINTR);
	if (ret < 0) {
		ur_backoff(pb, "submit", ret);
		return false;
	}
	/* a partial submission leaves the rest in the SQ, for next time */
	return io_uring_sq_ready(ring) == 0;
}

/*
 * Sleeps until a CQE or a submitter signals the eventfd - unless a bio is
 * queued and a slot free, which happens when a done() callback on this
 * thread submitted it (without a wake-up) or freed the slot.
 */
static void ur_sleep(struct posix_backend *pb)
{
	struct ur_engine *ur = &pb->ur;
	uint64_t v;
	bool ready;

	pthread_mutex_lock(&pb->lock);
	ready = pb->qhead && ur->nfree;
	pthread_mutex_unlock(&pb->lock);
	if (ready)
		return;
	/* resets the counter: every event so far is looked at next */
	if (read(ur->efd, &v, sizeof(v)) < 0 && errno != EINTR)
		ur_backoff(pb, "eventfd read", -errno);
}

static void *ur_main(void *arg)
{
	struct posix_backend *pb = arg;
	struct ur_engine *ur = &pb->ur;

	pf_posix_tl_ring_owner = pb;
	for (;;) {
		bool stopping = ur_fill(pb);
		bool submitted;

		if (stopping && ur->inflight == 0)
			break;
		submitted = ur_submit(pb);
		/* never sleep on SQEs the kernel has not taken */
		if (pf_uring_reap(&ur->ring, ur_cqe, pb) == 0 && submitted)
			ur_sleep(pb);
	}
	return NULL;
}

void pf_posix_uring_wake(struct posix_backend *pb)
{
	uint64_t one = 1;

	while (write(pb->ur.efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/*
 * Sets up the ring and its thread, or nothing.  io_uring is unavailable
 * when the ring or its eventfd cannot be set up: that error is also stored
 * in *setup_err, so that the caller falls back to pread; other failures
 * are plain errors.
 */
int pf_posix_uring_init(struct posix_backend *pb, int *setup_err)
{
	struct ur_engine *ur = &pb->ur;
	int ret;

	*setup_err = 0;
	ret = io_uring_queue_init(pb->depth, &ur->ring, 0);
	if (ret < 0) {
		*setup_err = ret;
		goto out;
	}
	ur->ring_ready = true;
	ur->efd = eventfd(0, EFD_CLOEXEC);
	if (ur->efd < 0) {
		ret = -errno;
		goto out;
	}
	ret = io_uring_register_eventfd(&ur->ring, ur->efd);
	if (ret < 0) {
		*setup_err = ret;
		goto out;
	}
	ur->slots = calloc(pb->depth, sizeof(*ur->slots));
	if (!ur->slots) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = pb->depth; i-- > 0;) {
		ur->slots[i].next_free = ur->free;
		ur->free = &ur->slots[i];
	}
	ur->nfree = pb->depth;
	ret = pf_posix_spawn(&ur->thread, "pf-uring", ur_main, pb);
	if (ret < 0)
		goto out;
	ur->thread_started = true;
	return 0;
out:
	free(ur->slots);
	ur->slots = NULL;
	ur->free = NULL;
	if (ur->efd >= 0)
		close(ur->efd);
	ur->efd = -1;
	if (ur->ring_ready)
		io_uring_queue_exit(&ur->ring);
	ur->ring_ready = false;
	return ret;
}
