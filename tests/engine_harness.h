/*
 * engine_harness.h - what the engine's Check suites share: an in-memory
 * backend whose reads complete only when the test says so (or at once,
 * tb.autocomplete), replies copied into struct treq, an engine over file
 * "a" (setup_with()), and an optional fake clock (fake_clock, advance_ms()).
 *
 * Included by tests/check_engine.c, check_readahead.c, check_push.c and
 * check_nextfile.c; every function is static, and a suite need not use all.
 */
#ifndef ENGINE_HARNESS_H
#define ENGINE_HARNESS_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_engine.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---- a backend whose bios wait in a list ------------------------------- */

struct tfile {
	const char *path;
	unsigned char *data;
	uint64_t size;
};

struct tbackend {
	struct pf_backend be;
	struct tfile files[4];
	unsigned nfiles;
	pthread_mutex_t lock;
	struct pf_bio *pending;
	unsigned npending;
	unsigned max_pending;	/* high-water mark */
	unsigned submits;
	uint64_t bytes;		/* requested by bios */
	int fail_next;		/* complete the next bio with -this */
	int shorten_next;	/* complete the next bio short */
	int scribble_next;	/* fill the next bio with 0xee, then fail it
				 * with -this (a read that wrote bytes of
				 * another version before it failed) */
	int autocomplete;	/* complete inside submit */
};

static struct tbackend tb;

static int t_getattr(struct pf_backend *be, const char *path,
		     struct stat *st)
{
	(void)be;
	(void)path;
	(void)st;
	return -ENOSYS;
}

static int t_open(struct pf_backend *be, const char *path,
		  struct pf_bfile **out, struct stat *st)
{
	struct tbackend *t = (struct tbackend *)be;

	for (unsigned i = 0; i < t->nfiles; i++) {
		if (strcmp(t->files[i].path, path) == 0) {
			memset(st, 0, sizeof(*st));
			st->st_size = (off_t)t->files[i].size;
			*out = (struct pf_bfile *)&t->files[i];
			return 0;
		}
	}
	return -ENOENT;
}

static void t_close(struct pf_backend *be, struct pf_bfile *f)
{
	(void)be;
	(void)f;
}

static void complete(struct pf_bio *bio)
{
	struct tfile *f = (struct tfile *)bio->file;
	uint64_t off = bio->off;
	int64_t done = 0;

	if (tb.scribble_next) {
		int e = tb.scribble_next;

		tb.scribble_next = 0;
		for (int i = 0; i < bio->iovcnt; i++)
			memset(bio->iov[i].iov_base, 0xee, bio->iov[i].iov_len);
		bio->done(bio, -e);
		return;
	}
	if (tb.fail_next) {
		int e = tb.fail_next;

		tb.fail_next = 0;
		bio->done(bio, -e);
		return;
	}
	for (int i = 0; i < bio->iovcnt; i++) {
		size_t n = bio->iov[i].iov_len;

		if (off >= f->size)
			break;
		if (n > f->size - off)
			n = f->size - off;
		memcpy(bio->iov[i].iov_base, f->data + off, n);
		off += n;
		done += (int64_t)n;
	}
	if (tb.shorten_next) {
		tb.shorten_next = 0;
		done /= 2;
	}
	bio->done(bio, done);
}

static int t_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct tbackend *t = (struct tbackend *)be;

	pthread_mutex_lock(&t->lock);
	t->submits++;
	for (int i = 0; i < bio->iovcnt; i++)
		t->bytes += bio->iov[i].iov_len;
	if (t->autocomplete) {
		pthread_mutex_unlock(&t->lock);
		complete(bio);
		return 0;
	}
	bio->bnext = t->pending;
	t->pending = bio;
	t->npending++;
	if (t->npending > t->max_pending)
		t->max_pending = t->npending;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

/* Completes everything pending now (not what that submits). */
static unsigned complete_pending(void)
{
	struct pf_bio *list;
	unsigned n = 0;

	pthread_mutex_lock(&tb.lock);
	list = tb.pending;
	tb.pending = NULL;
	tb.npending = 0;
	pthread_mutex_unlock(&tb.lock);
	while (list) {
		struct pf_bio *b = list;

		list = b->bnext;
		complete(b);
		n++;
	}
	return n;
}

/* Completes the oldest pending fetch only: 1 if there was one. */
static unsigned complete_oldest(void)
{
	struct pf_bio **pp, *b;

	pthread_mutex_lock(&tb.lock);
	pp = &tb.pending;
	if (!*pp) {
		pthread_mutex_unlock(&tb.lock);
		return 0;
	}
	while ((*pp)->bnext)
		pp = &(*pp)->bnext;
	b = *pp;
	*pp = NULL;
	tb.npending--;
	pthread_mutex_unlock(&tb.lock);
	complete(b);
	return 1;
}

static void complete_until_idle(void)
{
	while (complete_pending())
		;
}

static const struct pf_backend_ops t_ops = {
	.name = "test",
	.getattr = t_getattr,
	.open = t_open,
	.close = t_close,
	.submit = t_submit,
};

/* Lists the files in backend order (not sorted: the engine sorts). */
static int t_readdir(struct pf_backend *be, const char *path,
		     pf_dirent_fn fn, void *arg)
{
	struct tbackend *t = (struct tbackend *)be;

	if (path[0])
		return -ENOENT;
	for (unsigned i = t->nfiles; i-- > 0;) {
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFREG | 0444;
		st.st_size = (off_t)t->files[i].size;
		if (fn(arg, t->files[i].path, &st))
			break;
	}
	return 0;
}

/* the same with a directory listing: the next file is read ahead */
static const struct pf_backend_ops t_ops_dir = {
	.name = "test",
	.getattr = t_getattr,
	.readdir = t_readdir,
	.open = t_open,
	.close = t_close,
	.submit = t_submit,
};

static unsigned char *pattern_data(uint64_t size, unsigned seed)
{
	unsigned char *d = malloc(size);
	uint32_t x = seed * 2654435761u + 1;

	for (uint64_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		d[i] = (unsigned char)x;
	}
	return d;
}

/* ---- replies ------------------------------------------------------------ */

struct treq {
	int done;
	int err;
	size_t len;
	unsigned char buf[4u << 20];
};

static void t_reply(void *req, const struct iovec *iov, int iovcnt, int err)
{
	struct treq *r = req;

	r->err = err;
	r->len = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(r->buf + r->len, iov[i].iov_base, iov[i].iov_len);
		r->len += iov[i].iov_len;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static struct pf_engine *eng;
static struct pf_efile *ef;
static struct treq *rq;
static struct treq *rq2;

#define FSIZE (64ull << 20)

/* The engine's clock in the tests that drive time (fake_clock set before
 * setup): it moves only when the test says so. */
static int fake_clock;
static uint64_t fake_ns;

static uint64_t t_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&fake_ns, __ATOMIC_ACQUIRE);
}

static void advance_ms(unsigned ms)
{
	__atomic_add_fetch(&fake_ns, (uint64_t)ms * 1000000u, __ATOMIC_RELEASE);
}

/* min_window of the engines setup_with() makes */
static uint64_t setup_min_window = 1u << 20;

static void setup_with(uint64_t max_memory, int prefetch, unsigned inflight,
		       uint64_t batch)
{
	struct pf_engine_cfg cfg;
	struct stat st;

	memset(&tb, 0, sizeof(tb));
	pthread_mutex_init(&tb.lock, NULL);
	tb.be.ops = &t_ops;
	tb.files[0].path = "a";
	tb.files[0].size = FSIZE;
	tb.files[0].data = pattern_data(FSIZE, 1);
	tb.files[1].path = "small";
	tb.files[1].size = 100000;
	tb.files[1].data = pattern_data(100000, 2);
	tb.files[2].path = "b";
	tb.files[2].size = 16u << 20;
	tb.files[2].data = pattern_data(16u << 20, 3);
	tb.nfiles = 3;
	pf_engine_cfg_default(&cfg, 8ull << 30);
	cfg.max_memory = max_memory;
	cfg.prefetch = prefetch;
	cfg.max_inflight = inflight;
	cfg.min_window = setup_min_window;
	cfg.pattern.batch_override = batch;
	if (fake_clock) {
		fake_ns = 1000000000ull;
		cfg.now_ns = t_now;
	}
	ck_assert_int_eq(pf_engine_new(&cfg, &tb.be, &eng), 0);
	ef = pf_efile_new(eng, "a", 7);
	ck_assert_ptr_nonnull(ef);
	ck_assert_int_eq(pf_efile_open(ef, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)FSIZE);
	rq = calloc(1, sizeof(*rq));
	rq2 = calloc(1, sizeof(*rq2));
}

static void setup(void)
{
	setup_with(256u << 20, 0, 32, 0);
}

static void setup_batch8(void)
{
	setup_with(256u << 20, 1, 16, 8u << 20);
}

static void setup_prefetch(void)
{
	setup_with(256u << 20, 1, 16, 0);
}

static void teardown(void)
{
	complete_until_idle();
	pf_engine_stop_push(eng);
	pf_engine_quiesce(eng);
	pf_efile_close(ef);
	pf_efile_put(ef);
	pf_engine_free(eng);
	free(tb.files[0].data);
	free(tb.files[1].data);
	free(tb.files[2].data);
	free(rq);
	free(rq2);
}

static void read_sync(struct treq *r, uint64_t off, size_t size)
{
	memset(r, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, off, size, t_reply, r);
	while (!r->done)
		ck_assert_uint_gt(complete_pending() + r->done, 0);
}

static void assert_bytes(const struct treq *r, uint64_t off, size_t size)
{
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->len, size);
	ck_assert_int_eq(memcmp(r->buf, tb.files[0].data + off, size), 0);
}

/* Reads @f at [off, off + size) and checks the bytes against @tf. */
static void read_file_sync(struct pf_efile *f, const struct tfile *tf,
			   uint64_t off, size_t size)
{
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(f, off, size, t_reply, rq);
	while (!rq->done)
		ck_assert_uint_gt(complete_pending() + rq->done, 0);
	ck_assert_int_eq(rq->err, 0);
	ck_assert_uint_eq(rq->len, size);
	ck_assert_int_eq(memcmp(rq->buf, tf->data + off, size), 0);
}


#pragma GCC diagnostic pop

#endif
