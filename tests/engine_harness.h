/*
 * engine_harness.h - what the engine's Check suites share: an in-memory
 * backend (tb) whose reads complete only when the test says so (or at
 * once, tb.autocomplete), replies copied into struct treq, an engine over
 * file "a" (setup_with()), and an optional fake clock (fake_clock,
 * advance_ms()).
 *
 * The backend holds the files a suite adds (tb_add_file()), by path: "a",
 * or "d0/f003" below directories that need no entry of their own.  A
 * file's bytes are its data, or, for a file added without data (a tree of
 * hundreds of files, or of big ones), a function of (file, offset):
 * tfile_byte().  With a listing (t_ops_dir, with_listing set before
 * setup_with()) the directories are listed from the files' paths.
 * Reads of the backend wait in a list (complete_pending(), or only those of
 * one file or range: complete_matching()), can be counted there
 * (count_pending()), and can be made to fail, come short or scribble.
 *
 * Included by tests/check_engine.c, check_readahead.c, check_push.c,
 * check_nextfile.c, check_efile.c, check_cache.c, check_hintfetch.c and
 * check_dirahead.c; every function is static, and a suite need not use
 * all.  Check runs each test in its own process: the globals start anew.
 */
#ifndef ENGINE_HARNESS_H
#define ENGINE_HARNESS_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_engine.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---- a backend whose bios wait in a list ------------------------------- */

#define TB_MAXFILES 320

struct tfile {
	char path[32];
	unsigned id;		/* its index in tb.files */
	unsigned char *data;	/* NULL: the bytes are tfile_byte()'s */
	uint64_t size;
};

struct tbackend {
	struct pf_backend be;
	struct tfile files[TB_MAXFILES];
	unsigned nfiles;
	unsigned opens;		/* successful opens (atomic) */
	pthread_mutex_t lock;
	struct pf_bio *pending;	/* newest first; under lock */
	unsigned npending;
	unsigned max_pending;	/* high-water mark */
	unsigned submits;
	uint64_t bytes;		/* requested by bios */
	int fail_next;		/* complete the next bio with -this */
	int shorten_next;	/* complete the next bio short */
	int scribble_next;	/* fill the next bio with 0xee, then fail it
				 * with -this (a read that wrote bytes of
				 * another version before it failed) */
	int autocomplete;	/* complete inside submit; under lock */
};

static struct tbackend tb;

/* The byte at @off of @f. */
static unsigned char tfile_byte(const struct tfile *f, uint64_t off)
{
	if (f->data)
		return f->data[off];
	return (unsigned char)(f->id * 31 + off * 7 + (off >> 9));
}

static void tb_reset(const struct pf_backend_ops *ops)
{
	memset(&tb, 0, sizeof(tb));
	pthread_mutex_init(&tb.lock, NULL);
	tb.be.ops = ops;
}

/* Adds file @path of @size bytes: @data (tb owns it) or, NULL, bytes of
 * tfile_byte(). */
static struct tfile *tb_add_file(const char *path, uint64_t size,
				 unsigned char *data)
{
	struct tfile *f = &tb.files[tb.nfiles];

	ck_assert_uint_lt(tb.nfiles, TB_MAXFILES);
	ck_assert_uint_lt(strlen(path), sizeof(f->path));
	strcpy(f->path, path);
	f->id = tb.nfiles++;
	f->data = data;
	f->size = size;
	return f;
}

static void tb_free(void)
{
	for (unsigned i = 0; i < tb.nfiles; i++)
		free(tb.files[i].data);
}

static int t_getattr(struct pf_backend *be, const char *path,
		     struct stat *st)
{
	(void)be;
	(void)path;
	(void)st;
	return -ENOSYS;
}

/* tb's file at @path, or NULL. */
static struct tfile *tb_find(const char *path)
{
	for (unsigned i = 0; i < tb.nfiles; i++)
		if (strcmp(tb.files[i].path, path) == 0)
			return &tb.files[i];
	return NULL;
}

/* What a stat of @f says: a regular file of one version. */
static void tfile_stat(const struct tfile *f, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | 0444;
	st->st_size = (off_t)f->size;
	st->st_mtim.tv_sec = 1000;
}

static int t_open(struct pf_backend *be, const char *path,
		  struct pf_bfile **out, struct stat *st)
{
	struct tbackend *t = (struct tbackend *)be;
	struct tfile *f = tb_find(path);

	if (!f)
		return -ENOENT;
	tfile_stat(f, st);
	__atomic_add_fetch(&t->opens, 1, __ATOMIC_RELAXED);
	*out = (struct pf_bfile *)f;
	return 0;
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
		unsigned char *p = bio->iov[i].iov_base;
		size_t n = bio->iov[i].iov_len;

		if (off >= f->size)
			break;
		if (n > f->size - off)
			n = f->size - off;
		if (f->data)
			memcpy(p, f->data + off, n);
		else
			for (size_t k = 0; k < n; k++)
				p[k] = tfile_byte(f, off + k);
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

static uint64_t bio_len(const struct pf_bio *b)
{
	uint64_t len = 0;

	for (int i = 0; i < b->iovcnt; i++)
		len += b->iov[i].iov_len;
	return len;
}

/* Does pending @b read file @id (any: -1) in [off, off + len) (len 0:
 * anywhere)? */
static bool bio_matches(const struct pf_bio *b, int id, uint64_t off,
			uint64_t len)
{
	if (id >= 0 && ((const struct tfile *)b->file)->id != (unsigned)id)
		return false;
	return !len || (b->off < off + len && off < b->off + bio_len(b));
}

/* Completes the pending reads of file @id (all files: -1) that reach into
 * [off, off + len) (len 0: wherever they are), newest first; not what they
 * submit.  Returns how many. */
static unsigned complete_matching(int id, uint64_t off, uint64_t len)
{
	struct pf_bio *take = NULL;
	struct pf_bio **tail = &take;
	struct pf_bio **pp;
	unsigned n = 0;

	pthread_mutex_lock(&tb.lock);
	pp = &tb.pending;
	while (*pp) {
		struct pf_bio *b = *pp;

		if (bio_matches(b, id, off, len)) {
			*pp = b->bnext;
			b->bnext = NULL;
			*tail = b;
			tail = &b->bnext;
			tb.npending--;
		} else {
			pp = &b->bnext;
		}
	}
	pthread_mutex_unlock(&tb.lock);
	while (take) {
		struct pf_bio *b = take;

		take = b->bnext;
		complete(b);
		n++;
	}
	return n;
}

/* Completes everything pending now (not what that submits). */
static unsigned complete_pending(void)
{
	return complete_matching(-1, 0, 0);
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

/* Reads pending of file @id (any: -1): how many, their bytes in *@bytes
 * (if not NULL), and in *@of_len (if not NULL) how many are @len long. */
static unsigned count_pending_len(int id, uint64_t *bytes, uint64_t len,
				  unsigned *of_len)
{
	unsigned n = 0;

	if (bytes)
		*bytes = 0;
	if (of_len)
		*of_len = 0;
	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		if (!bio_matches(b, id, 0, 0))
			continue;
		n++;
		if (bytes)
			*bytes += bio_len(b);
		if (of_len && bio_len(b) == len)
			(*of_len)++;
	}
	pthread_mutex_unlock(&tb.lock);
	return n;
}

static unsigned count_pending(int id, uint64_t *bytes)
{
	return count_pending_len(id, bytes, 0, NULL);
}

static const struct pf_backend_ops t_ops = {
	.name = "test",
	.getattr = t_getattr,
	.open = t_open,
	.close = t_close,
	.submit = t_submit,
};

/* @fpath's part below directory @dir (of @dlen bytes; "" the root), or
 * NULL if it is not below it. */
static const char *t_below(const char *fpath, const char *dir, size_t dlen)
{
	if (!dlen)
		return fpath;
	if (strncmp(fpath, dir, dlen) != 0 || fpath[dlen] != '/')
		return NULL;
	return fpath + dlen + 1;
}

/*
 * Lists directory @path ("" the root) from the files' paths: each file
 * below it names an entry, the file or the directory on the way to it.
 * Entries come in the reverse of tb.files' order (not name order: the
 * engine sorts).
 */
static int t_readdir(struct pf_backend *be, const char *path,
		     pf_dirent_fn fn, void *arg)
{
	struct tbackend *t = (struct tbackend *)be;
	size_t dlen = strlen(path);
	bool found = dlen == 0;

	for (unsigned i = t->nfiles; i-- > 0;) {
		const char *rest = t_below(t->files[i].path, path, dlen);
		const char *slash;
		char name[sizeof(t->files[i].path)];
		size_t nlen;
		bool listed = false;
		struct stat st;

		if (!rest)
			continue;
		found = true;
		slash = strchr(rest, '/');
		nlen = slash ? (size_t)(slash - rest) : strlen(rest);
		memset(&st, 0, sizeof(st));
		if (slash) {
			/* a directory: listed with the first file below it */
			for (unsigned j = i + 1; j < t->nfiles && !listed;
			     j++) {
				const char *r = t_below(t->files[j].path, path,
							dlen);

				listed = r && strncmp(r, rest, nlen + 1) == 0;
			}
			if (listed)
				continue;
			st.st_mode = S_IFDIR | 0555;
		} else {
			st.st_mode = S_IFREG | 0444;
			st.st_size = (off_t)t->files[i].size;
		}
		memcpy(name, rest, nlen);
		name[nlen] = '\0';
		if (fn(arg, name, &st))
			break;
	}
	return found ? 0 : -ENOENT;
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

/* ---- the engine --------------------------------------------------------- */

static struct pf_engine *eng;
static struct pf_efile *ef;	/* file "a" of setup_with() */
static struct pf_efile *efiles[TB_MAXFILES];	/* tfile_open()'s */
static struct treq *rq;
static struct treq *rq2;

#define FSIZE (64ull << 20)

/* The engine's clock in the tests that drive time (fake_clock set before
 * setup): it moves only when the test says so. */
static int fake_clock;
static uint64_t fake_ns;

/* setup_with() gives the backend a listing (t_ops_dir) */
static int with_listing;

static uint64_t t_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&fake_ns, __ATOMIC_ACQUIRE);
}

static void advance_ms(unsigned ms)
{
	__atomic_add_fetch(&fake_ns, (uint64_t)ms * 1000000u, __ATOMIC_RELEASE);
}

/* min_window of the engines harness_cfg() configures */
static uint64_t setup_min_window = 1u << 20;
/* and their read_timeout_ns (0: none, as over a directory) */
static uint64_t setup_read_timeout_ns;

/* The configuration the suites start from (on the fake clock if
 * fake_clock). */
static void harness_cfg(struct pf_engine_cfg *cfg, uint64_t max_memory,
			unsigned inflight)
{
	pf_engine_cfg_default(cfg, 8ull << 30);
	cfg->max_memory = max_memory;
	cfg->max_inflight = inflight;
	cfg->min_window = setup_min_window;
	cfg->read_timeout_ns = setup_read_timeout_ns;
	if (fake_clock) {
		fake_ns = 1000000000ull;
		cfg->now_ns = t_now;
	}
}

/* An engine over tb; the replies rq and rq2 made on first use. */
static void engine_start(const struct pf_engine_cfg *cfg)
{
	ck_assert_int_eq(pf_engine_new(cfg, &tb.be, &eng), 0);
	if (!rq)
		rq = calloc(1, sizeof(*rq));
	if (!rq2)
		rq2 = calloc(1, sizeof(*rq2));
	ck_assert_ptr_nonnull(rq);
	ck_assert_ptr_nonnull(rq2);
}

/* Completes what is pending and what comes, stops the engine and lets its
 * files go (ef closed, efiles[] put); tb and the replies stay. */
static void engine_stop(void)
{
	pthread_mutex_lock(&tb.lock);
	tb.autocomplete = 1;
	pthread_mutex_unlock(&tb.lock);
	complete_until_idle();
	pf_engine_stop_push(eng);
	pf_engine_quiesce(eng);
	if (ef) {
		pf_efile_close(ef);
		pf_efile_put(ef);
		ef = NULL;
	}
	for (unsigned i = 0; i < TB_MAXFILES; i++) {
		if (efiles[i])
			pf_efile_put(efiles[i]);
		efiles[i] = NULL;
	}
	pf_engine_free(eng);
	eng = NULL;
}

static void setup_with(uint64_t max_memory, int prefetch, unsigned inflight,
		       uint64_t batch)
{
	struct pf_engine_cfg cfg;
	struct stat st;

	tb_reset(with_listing ? &t_ops_dir : &t_ops);
	tb_add_file("a", FSIZE, pattern_data(FSIZE, 1));
	tb_add_file("small", 100000, pattern_data(100000, 2));
	tb_add_file("b", 16u << 20, pattern_data(16u << 20, 3));
	harness_cfg(&cfg, max_memory, inflight);
	cfg.prefetch = prefetch;
	cfg.pattern.batch_override = batch;
	engine_start(&cfg);
	ef = pf_efile_new(eng, "a", 7);
	ck_assert_ptr_nonnull(ef);
	ck_assert_int_eq(pf_efile_open(ef, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)FSIZE);
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
	engine_stop();
	tb_free();
	free(rq);
	free(rq2);
	rq = NULL;
	rq2 = NULL;
}

/* Opens (as the front end does) tb.files[@id]'s efile, made on first use
 * with tag id + 1 and kept, as an inode is, until engine_stop(). */
static struct pf_efile *tfile_open(unsigned id)
{
	struct stat st;

	if (!efiles[id])
		efiles[id] = pf_efile_new(eng, tb.files[id].path, id + 1);
	ck_assert_ptr_nonnull(efiles[id]);
	ck_assert_int_ge(pf_efile_open(efiles[id], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, tb.files[id].size);
	return efiles[id];
}

/* Checks that @r holds [off, off + size) of @tf. */
static void assert_file_bytes(const struct treq *r, const struct tfile *tf,
			      uint64_t off, size_t size)
{
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->len, size);
	if (tf->data) {
		ck_assert_int_eq(memcmp(r->buf, tf->data + off, size), 0);
		return;
	}
	for (size_t i = 0; i < size; i++)
		if (r->buf[i] != tfile_byte(tf, off + i))
			ck_abort_msg("%s: wrong byte at %llu", tf->path,
				     (unsigned long long)(off + i));
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
	assert_file_bytes(r, &tb.files[0], off, size);
}

/* Reads @f at [off, off + size) and checks the bytes against @tf. */
static void read_file_sync(struct pf_efile *f, const struct tfile *tf,
			   uint64_t off, size_t size)
{
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(f, off, size, t_reply, rq);
	while (!rq->done)
		ck_assert_uint_gt(complete_pending() + rq->done, 0);
	assert_file_bytes(rq, tf, off, size);
}

/*
 * Reads @f at [off, off + size) into @r while other threads (the engine's
 * next-file and fill threads) may be the ones to submit what it waits for:
 * completes the pending reads of file @id (all: -1) as they come, for a
 * bounded while (the machine may be loaded).
 */
static void read_wait(struct pf_efile *f, int id, uint64_t off, size_t size,
		      struct treq *r)
{
	memset(r, 0, offsetof(struct treq, buf));
	pf_engine_read(f, off, size, t_reply, r);
	for (int i = 0; i < 5000 && !__atomic_load_n(&r->done,
						     __ATOMIC_ACQUIRE); i++)
		if (!complete_matching(id, 0, 0))
			usleep(1000);
	ck_assert_int_eq(r->done, 1);
}

/* ---- the stats ---------------------------------------------------------- */

/* Do the engine's stats, but for their streams, hold @needle?  Printed
 * when not, unless @quiet. */
static bool stats_quiet(const char *needle, bool quiet)
{
	char *js = pf_engine_stats_json(eng, "test");
	char *end;
	bool ok;

	ck_assert_ptr_nonnull(js);
	end = strstr(js, "\"streams\"");
	if (end)
		*end = '\0';
	ok = strstr(js, needle) != NULL;
	if (!ok && !quiet)
		fprintf(stderr, "stats lack %s:\n%s\n", needle, js);
	free(js);
	return ok;
}

static bool stats_has(const char *needle)
{
	return stats_quiet(needle, false);
}

/* Polls the stats (a bounded while: the machine may be loaded). */
static bool stats_wait(const char *needle)
{
	for (int i = 0; i < 2000; i++) {
		if (stats_quiet(needle, true))
			return true;
		usleep(20000);
	}
	return stats_has(needle);
}

#pragma GCC diagnostic pop

#endif
