/*
 * check_engine.c - the engine against an in-memory backend whose reads
 * complete only when the test says so: parking and answering, one fetch
 * for two readers, errors reaching the reader, the memory budget,
 * read-ahead, no amplification for random readers, max_inflight, the next
 * file of a directory read ahead and handed to its reader.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_engine.h"

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
	cfg.min_window = 1u << 20;
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

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_miss_parks_then_answers)
{
	struct pf_engine_totals t;

	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	ck_assert_int_eq(rq->done, 0);	/* parked, not answered */
	ck_assert_uint_eq(tb.npending, 1);
	ck_assert_uint_eq(complete_pending(), 1);
	ck_assert_int_eq(rq->done, 1);
	assert_bytes(rq, 0, 128 << 10);

	/* the same bytes again: answered at once, no fetch */
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 4096, 100000, t_reply, rq);
	ck_assert_int_eq(rq->done, 1);
	assert_bytes(rq, 4096, 100000);
	ck_assert_uint_eq(tb.submits, 1);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.reads, 2);
	ck_assert_uint_eq(t.hits, 1);
	ck_assert_uint_eq(t.misses, 1);
	ck_assert_uint_eq(t.waits, 1);
}
END_TEST

START_TEST(test_two_readers_one_fetch)
{
	pf_engine_read(ef, 1u << 20, 256 << 10, t_reply, rq);
	pf_engine_read(ef, (1u << 20) + 4096, 128 << 10, t_reply, rq2);
	ck_assert_uint_eq(tb.submits, 1);
	complete_pending();
	ck_assert(rq->done && rq2->done);
	assert_bytes(rq, 1u << 20, 256 << 10);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[0].data + (1u << 20) + 4096,
				128 << 10),
			 0);
	ck_assert_uint_eq(tb.submits, 1);
}
END_TEST

START_TEST(test_unaligned_and_eof)
{
	struct pf_efile *sf = pf_efile_new(eng, "small", 8);
	struct stat st;

	read_sync(rq, 12345, 70001);
	assert_bytes(rq, 12345, 70001);
	read_sync(rq, FSIZE - 1000, 128 << 10);
	assert_bytes(rq, FSIZE - 1000, 1000);
	read_sync(rq, FSIZE, 4096);
	ck_assert_int_eq(rq->err, 0);
	ck_assert_uint_eq(rq->len, 0);
	read_sync(rq, FSIZE + 123456, 4096);
	ck_assert_uint_eq(rq->len, 0);

	/* a file smaller than a block, read whole and across its end */
	ck_assert_int_eq(pf_efile_open(sf, &st), 0);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(sf, 0, 1u << 20, t_reply, rq);
	complete_until_idle();
	ck_assert(rq->done);
	ck_assert_uint_eq(rq->len, 100000);
	ck_assert_int_eq(memcmp(rq->buf, tb.files[1].data, 100000), 0);
	pf_efile_close(sf);
	pf_efile_put(sf);
}
END_TEST

START_TEST(test_error_reaches_reader_then_retry)
{
	struct pf_engine_totals t;

	tb.fail_next = EIO;
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	pf_engine_read(ef, 64 << 10, 4096, t_reply, rq2);
	complete_pending();
	ck_assert(rq->done && rq2->done);
	ck_assert_int_eq(rq->err, EIO);
	ck_assert_int_eq(rq2->err, EIO);
	ck_assert_uint_eq(rq->len, 0);
	/* nothing bad stays cached: the next read fetches again */
	read_sync(rq, 0, 128 << 10);
	assert_bytes(rq, 0, 128 << 10);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.fetch_errors, 1);

	/* a precise errno passes through */
	tb.fail_next = EACCES;
	read_sync(rq, 8u << 20, 4096);
	ck_assert_int_eq(rq->err, EACCES);
}
END_TEST

START_TEST(test_short_backend_read_is_eio)
{
	tb.shorten_next = 1;
	read_sync(rq, 0, 128 << 10);
	ck_assert_int_eq(rq->err, EIO);
	ck_assert_uint_eq(rq->len, 0);
}
END_TEST

/*
 * A fetch that extends a block's valid bytes on both sides covers them too;
 * when it fails after the backend wrote into the buffer (bytes of another
 * version, or garbage), the bytes that were valid are valid no more.
 */
START_TEST(test_failed_fetch_over_valid_bytes)
{
	read_sync(rq, 8192, 4096);
	assert_bytes(rq, 8192, 4096);
	ck_assert_uint_eq(tb.submits, 1);
	/* one fetch of [4 KiB, 16 KiB) over the valid [8 KiB, 12 KiB) */
	tb.scribble_next = EIO;
	read_sync(rq, 4096, 12288);
	ck_assert_int_eq(rq->err, EIO);
	ck_assert_uint_eq(tb.submits, 2);
	/* not answered from the scribbled buffer: fetched again */
	read_sync(rq, 8192, 4096);
	assert_bytes(rq, 8192, 4096);
	ck_assert_uint_eq(tb.submits, 3);
	read_sync(rq, 4096, 12288);
	assert_bytes(rq, 4096, 12288);
}
END_TEST

START_TEST(test_random_no_amplification)
{
	uint32_t x = 12345;
	uint64_t asked = 0;
	struct pf_engine_totals t;

	for (int i = 0; i < 300; i++) {
		uint64_t off;

		x = x * 1103515245u + 12345u;
		off = ((uint64_t)x % (FSIZE / 4096)) * 4096;
		read_sync(rq, off, 4096);
		assert_bytes(rq, off, 4096);
		asked += 4096;
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.bytes_fetched, asked);
	ck_assert_uint_eq(t.bytes_prefetched, 0);
}
END_TEST

START_TEST(test_partial_block_extends)
{
	/* two 4 KiB reads in one block, then the whole block */
	read_sync(rq, 8192, 4096);
	assert_bytes(rq, 8192, 4096);
	read_sync(rq, 40960, 4096);
	assert_bytes(rq, 40960, 4096);
	read_sync(rq, 0, 64 << 10);
	assert_bytes(rq, 0, 64 << 10);
	read_sync(rq, 0, 64 << 10);
	assert_bytes(rq, 0, 64 << 10);
	/* the first two are apart: the second replaced the first; the
	 * whole block then needed both sides, fetched at once */
	ck_assert_uint_eq(tb.bytes, (4 + 4 + 64) << 10);
	/* adjacent ranges extend the valid bytes without refetching */
	read_sync(rq, (1u << 20) + 8192, 4096);
	read_sync(rq, (1u << 20) + 12288, 8192);
	read_sync(rq, (1u << 20) + 4096, 4096);
	read_sync(rq, (1u << 20) + 4096, 16384);
	assert_bytes(rq, (1u << 20) + 4096, 16384);
	ck_assert_uint_eq(tb.bytes, (4 + 4 + 64 + 4 + 8 + 4) << 10);
}
END_TEST

START_TEST(test_two_parts_of_one_block)
{
	/* two READs wanting parts of one block apart from each other, both
	 * parked on it: each is answered, neither undoes the other's fetch */
	pf_engine_read(ef, 0, 4096, t_reply, rq);
	pf_engine_read(ef, 32768, 28672, t_reply, rq2);
	for (int i = 0; i < 10 && !(rq->done && rq2->done); i++)
		complete_pending();
	ck_assert(rq->done && rq2->done);
	assert_bytes(rq, 0, 4096);
	ck_assert_int_eq(rq2->err, 0);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[0].data + 32768, 28672), 0);
	ck_assert_uint_le(tb.submits, 2);
}
END_TEST

START_TEST(test_sequential_prefetch)
{
	struct pf_engine_totals t;
	uint64_t off;

	tb.autocomplete = 1;
	for (off = 0; off < FSIZE; off += 128 << 10) {
		read_sync(rq, off, 128 << 10);
		assert_bytes(rq, off, 128 << 10);
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_gt(t.bytes_prefetched, FSIZE / 2);
	/* all but the first few READs found their bytes in memory */
	ck_assert_uint_ge(t.hits, t.reads - 8);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_eq(t.bytes_unused, 0);
}
END_TEST

START_TEST(test_early_start_from_offset_zero)
{
	struct pf_engine_totals t;

	tb.autocomplete = 1;
	/* a first READ at offset 0: one window ahead at once */
	read_sync(rq, 0, 128 << 10);
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.bytes_prefetched, 512 << 10);
	ck_assert_uint_le(t.bytes_prefetched, 1u << 20);
}
END_TEST

START_TEST(test_no_early_start_elsewhere)
{
	struct pf_engine_totals t;

	tb.autocomplete = 1;
	/* a first READ in the middle of the file: nothing beyond it */
	read_sync(rq, 10u << 20, 128 << 10);
	read_sync(rq, 30u << 20, 128 << 10);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_prefetched, 0);
}
END_TEST

START_TEST(test_prefetch_keeps_many_in_flight)
{
	struct pf_engine_totals t;
	uint64_t off;

	/* 8 MiB batches, 2 windows: once the stream is known, 16 MiB ahead
	 * are asked for at once, max_inflight (16) reads at a time */
	for (off = 0; off < (4u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done)
			ck_assert_uint_gt(complete_pending(), 0);
		ck_assert_uint_le(tb.npending, 16);
	}
	ck_assert_uint_eq(tb.max_pending, 16);
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.inflight, 16);
}
END_TEST

START_TEST(test_budget_holds)
{
	struct pf_engine_totals t;
	uint64_t off;

	tb.autocomplete = 1;
	for (int pass = 0; pass < 2; pass++) {
		for (off = 0; off < FSIZE; off += 1u << 20) {
			read_sync(rq, off, 1u << 20);
			assert_bytes(rq, off, 1u << 20);
			pf_engine_totals(eng, &t);
			ck_assert_uint_le(t.memory_used, 16u << 20);
		}
	}
}
END_TEST

START_TEST(test_stats_json)
{
	char *js;
	uint64_t off;

	tb.autocomplete = 1;
	for (off = 0; off < (16u << 20); off += 128 << 10)
		read_sync(rq, off, 128 << 10);
	js = pf_engine_stats_json(eng, "test:\"x\"");
	ck_assert_ptr_nonnull(js);
	ck_assert_ptr_nonnull(strstr(js, "\"backend\": \"test:\\\"x\\\"\""));
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_nonnull(strstr(js, "\"file\": \"a\""));
	ck_assert_ptr_nonnull(strstr(js, "\"memory_used\""));
	free(js);
}
END_TEST

/* ---- pushing to the page cache ----------------------------------------- */

static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_cond = PTHREAD_COND_INITIALIZER;
static uint64_t pushed_bytes;
static int push_bad;

static void t_push(void *arg, uint64_t tag, uint64_t off,
		   const struct iovec *iov, int iovcnt)
{
	(void)arg;
	pthread_mutex_lock(&push_lock);
	if (tag != 7)
		push_bad = 1;
	for (int i = 0; i < iovcnt; i++) {
		if (memcmp(iov[i].iov_base, tb.files[0].data + off,
			   iov[i].iov_len) != 0)
			push_bad = 1;
		off += iov[i].iov_len;
		pushed_bytes += iov[i].iov_len;
	}
	pthread_cond_broadcast(&push_cond);
	pthread_mutex_unlock(&push_lock);
}

START_TEST(test_push_and_tripwires)
{
	struct pf_engine_totals t;
	const char *js;
	uint64_t off;

	tb.autocomplete = 1;
	pushed_bytes = 0;
	push_bad = 0;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	/* a sequential reader: 1 MiB READs until read-ahead is pushed, then
	 * only the READs the page cache would still send: the tripwire
	 * pages, the last page before every half batch (4 MiB of 8) */
	for (off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	/* the pusher thread pushes: wait for its first push (a wedged
	 * pusher fails the test at its timeout) */
	pthread_mutex_lock(&push_lock);
	while (!pushed_bytes)
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
	/* a compute gap (longer than gap_ns) before each tripwire READ */
	for (off += 4u << 20; off <= (48u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
		assert_bytes(rq, off - 4096, 4096);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	ck_assert_uint_gt(pushed_bytes, 16u << 20);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_pushed, pushed_bytes);
	/* the tracker followed the reader through the pushed bytes: one
	 * sequential stream, read-ahead up to the end of the file */
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_null(strstr(js, "\"pattern\": \"strided\""));
	free((void *)js);
	ck_assert_uint_ge(t.bytes_fetched, 56u << 20);
}
END_TEST

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

static void setup_next(void)
{
	setup_prefetch();
	/* the engine is made anew with a backend that lists its files */
	pf_efile_close(ef);
	pf_efile_put(ef);
	pf_engine_free(eng);
	tb.be.ops = &t_ops_dir;
	{
		struct pf_engine_cfg cfg;
		struct stat st;

		pf_engine_cfg_default(&cfg, 8ull << 30);
		cfg.max_memory = 256u << 20;
		cfg.max_inflight = 16;
		cfg.min_window = 1u << 20;
		ck_assert_int_eq(pf_engine_new(&cfg, &tb.be, &eng), 0);
		ef = pf_efile_new(eng, "a", 7);
		ck_assert_ptr_nonnull(ef);
		ck_assert_int_eq(pf_efile_open(ef, &st), 0);
	}
}

static void wait_next_files(uint64_t n)
{
	struct pf_engine_totals t;

	for (int i = 0; i < 500; i++) {
		pf_engine_totals(eng, &t);
		if (t.next_files >= n && t.inflight == 0)
			return;
		complete_pending();
		usleep(10000);
	}
	ck_abort_msg("the next file was not read ahead");
}

START_TEST(test_next_file_read_ahead)
{
	struct pf_engine_totals t0;
	struct pf_engine_totals t;
	struct pf_efile *nf;
	struct stat st;
	uint64_t off;
	uint64_t sub;

	tb.autocomplete = 1;
	for (off = 0; off < FSIZE; off += 1u << 20)
		read_file_sync(ef, &tb.files[0], off, 1u << 20);
	/* "a" is followed by "b" in name order, not by "small" */
	wait_next_files(1);
	pf_engine_totals(eng, &t0);
	ck_assert_uint_eq(t0.next_files, 1);
	ck_assert_uint_gt(t0.bytes_fetched, FSIZE);
	sub = tb.submits;
	/* the reader's open gets the file the engine opened, with its
	 * blocks: the first READs are hits, nothing more is submitted for
	 * what was read ahead */
	nf = pf_efile_new(eng, "b", 9);
	ck_assert_ptr_nonnull(nf);
	ck_assert_int_eq(pf_efile_open(nf, &st), 0);
	ck_assert_int_eq(st.st_size, 16 << 20);
	read_file_sync(nf, &tb.files[2], 0, 1u << 20);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_eq(t.hits, t0.hits + 1);
	/* only read-ahead beyond what the engine had (if any) was asked */
	ck_assert_uint_le(tb.submits - sub, 64);
	for (off = 1u << 20; off < (16u << 20); off += 1u << 20)
		read_file_sync(nf, &tb.files[2], off, 1u << 20);
	pf_efile_close(nf);
	pf_efile_put(nf);
	/* "b" is the last name but "small": that one is next, once */
	wait_next_files(2);
}
END_TEST

START_TEST(test_next_file_not_for_random)
{
	struct pf_engine_totals t;

	tb.autocomplete = 1;
	read_file_sync(ef, &tb.files[0], 40u << 20, 1u << 20);
	read_file_sync(ef, &tb.files[0], 5u << 20, 1u << 20);
	read_file_sync(ef, &tb.files[0], 63u << 20, 1u << 20);
	read_file_sync(ef, &tb.files[0], 20u << 20, 1u << 20);
	/* the next file is asked for under the engine's lock, by the READs:
	 * none was asked, so the next-file thread opens none */
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.next_asks, 0);
	ck_assert_uint_eq(t.next_files, 0);
}
END_TEST

static void setup_push(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 16, 8u << 20);
	fake_clock = 0;
}

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("demand");
	TCase *tp = tcase_create("prefetch");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_miss_parks_then_answers);
	tcase_add_test(tc, test_two_readers_one_fetch);
	tcase_add_test(tc, test_unaligned_and_eof);
	tcase_add_test(tc, test_error_reaches_reader_then_retry);
	tcase_add_test(tc, test_short_backend_read_is_eio);
	tcase_add_test(tc, test_failed_fetch_over_valid_bytes);
	tcase_add_test(tc, test_random_no_amplification);
	tcase_add_test(tc, test_partial_block_extends);
	tcase_add_test(tc, test_two_parts_of_one_block);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tp, setup_prefetch, teardown);
	tcase_set_timeout(tp, 30);
	tcase_add_test(tp, test_sequential_prefetch);
	tcase_add_test(tp, test_stats_json);
	tcase_add_test(tp, test_early_start_from_offset_zero);
	tcase_add_test(tp, test_no_early_start_elsewhere);
	suite_add_tcase(s, tp);

	tc = tcase_create("push");
	tcase_add_checked_fixture(tc, setup_push, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_push_and_tripwires);
	suite_add_tcase(s, tc);

	tc = tcase_create("next_file");
	tcase_add_checked_fixture(tc, setup_next, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_next_file_read_ahead);
	tcase_add_test(tc, test_next_file_not_for_random);
	suite_add_tcase(s, tc);

	tc = tcase_create("inflight");
	tcase_add_checked_fixture(tc, setup_batch8, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_prefetch_keeps_many_in_flight);
	suite_add_tcase(s, tc);
	return s;
}

static void setup_budget(void)
{
	setup_with(16u << 20, 1, 16, 0);
}

int main(void)
{
	Suite *s = engine_suite();
	TCase *tc = tcase_create("budget");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup_budget, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_budget_holds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
