/*
 * posix_pread.c - the POSIX backend's pread engine, used when io_uring
 * cannot be set up or force_fallback is set: a pool of fallback_threads
 * threads doing preadv().
 *
 * DESIGN
 * Entered by the constructing thread (pf_posix_pread_init(): starts the
 * workers) and run by the worker threads, each with its own iovec scratch.
 * Workers sleep on pb->cond and take bios off the submit queue under pb->lock,
 * which is never held across a read or a done() call.
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
#include "posix_int.h"

/* ------------------------------------------------------------------ */
/* pread engine */

static void pr_read(struct pr_worker *w, struct pf_bio *bio)
{
	uint64_t total = (uint64_t)pf_posix_iov_total(bio->iov, bio->iovcnt);
	const struct iovec *iov = bio->iov;
	int cnt = bio->iovcnt;
	int64_t res = 0;

	while (bio->bdone < total) {
		ssize_t n;

		if (bio->bdone) {
			struct iovec *left;

			left = pf_posix_scratch_get(&w->scratch, bio->iovcnt);
			if (!left) {
				res = -ENOMEM;
				break;
			}
			cnt = pf_posix_iov_skip(
				bio->iov, bio->iovcnt, bio->bdone, left);
			iov = left;
		}
		n = preadv(to_pfile(bio->file)->fd, iov, cnt,
			   (off_t)(bio->off + bio->bdone));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			res = -errno;
			break;
		}
		/* 0 before the iovec is full is the end of the file */
		if (n == 0)
			break;
		bio->bdone += (uint64_t)n;
	}
	if (res == 0)
		res = (int64_t)bio->bdone;
	res = pf_posix_pin_check(bio, total, res);
	bio->done(bio, res);
}

static void *pr_main(void *arg)
{
	struct pr_worker *w = arg;
	struct posix_backend *pb = w->pb;

	for (;;) {
		struct pf_bio *bio;
		bool stopping;

		pthread_mutex_lock(&pb->lock);
		while (!pb->qhead && !pb->stopping)
			pthread_cond_wait(&pb->cond, &pb->lock);
		bio = pf_posix_queue_take(pb, 1);
		stopping = pb->stopping;
		pthread_mutex_unlock(&pb->lock);

		if (!bio)
			break;
		if (stopping)
			bio->done(bio, -ECANCELED);
		else
			pr_read(w, bio);
	}
	return NULL;
}

int pf_posix_pread_init(struct posix_backend *pb, unsigned nthreads)
{
	int ret = 0;

	pb->workers = calloc(nthreads, sizeof(*pb->workers));
	if (!pb->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < nthreads; i++) {
		struct pr_worker *w = &pb->workers[i];

		w->pb = pb;
		ret = pf_posix_spawn(&w->thread, "pf-pread", pr_main, w);
		if (ret < 0)
			break;
		pb->nworkers++;
	}
	/* the workers already started are joined by posix_stop() */
	return ret;
}
