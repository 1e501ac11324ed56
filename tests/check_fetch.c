/*
 * check_fetch.c - how many fetches the engine has at the backend at once
 * (src/fetch.c, fetch_room()): read-ahead of whole small files goes past
 * max_inflight requests, bounded by bytes in flight (max_inflight x
 * fetch_size) and by the requests kept for demand fetches; a READ still
 * gets its fetch sent at once.  (Read-ahead of fetch_size pieces staying
 * at max_inflight is asserted in check_readahead.c.)
 *
 * The backend holds a directory "d" of NFILES small files whose bytes are
 * a function of (file, offset); its reads wait in a list until the test
 * completes them, so what the engine sends piles up where the test can
 * count it.  The small fetches come from the background fill
 * (dirahead.c), which a reader opening the files in shuffled order starts.
 *
 * Who gets a slot freed in the gate (fetch_done()): a stream whose
 * read-ahead the gate refused, with nothing ready ahead of its reader,
 * before the stream whose fetch ended and whose windows fill the gate; and
 * the fetches a planner makes at once go to the backend nearest the reader
 * first.
 */
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

#define NFILES 256
#define INFLIGHT 8
#define FETCH (1u << 20)
#define BIG NFILES		/* the id of "big" */
#define BIG2 (NFILES + 1)	/* and of "big2" */
#define BIG_SIZE (64ull << 20)

struct fbf {
	unsigned id;
};

static struct pf_backend fbe;
static struct pf_engine *eng;
static pthread_mutex_t blk = PTHREAD_MUTEX_INITIALIZER;
static struct pf_bio *pending;	/* under blk */
static int autocomplete;	/* under blk */
static uint64_t sent_off[64];	/* under blk: offsets of the first reads
				 * submitted, in order */
static unsigned nsent;		/* under blk */
static struct pf_efile *files[NFILES + 2];
static uint64_t min_window;	/* cfg.min_window if not 0 */

static uint64_t f_size(unsigned id)
{
	return id >= BIG ? BIG_SIZE : 100000 + 1000 * (id % 5);
}

static unsigned char f_byte(unsigned id, uint64_t off)
{
	return (unsigned char)(id * 13 + off * 5 + (off >> 10));
}

static int f_getattr(struct pf_backend *be, const char *path, struct stat *st)
{
	(void)be;
	(void)path;
	(void)st;
	return -ENOSYS;
}

static int f_readdir(struct pf_backend *be, const char *path, pf_dirent_fn fn,
		     void *arg)
{
	struct stat st;
	char name[16];

	(void)be;
	memset(&st, 0, sizeof(st));
	if (!path[0]) {
		st.st_mode = S_IFREG | 0444;
		st.st_size = (off_t)BIG_SIZE;
		if (fn(arg, "big", &st))
			return 0;
		st.st_mode = S_IFDIR | 0555;
		st.st_size = 0;
		fn(arg, "d", &st);
		return 0;
	}
	if (strcmp(path, "d") != 0)
		return -ENOENT;
	st.st_mode = S_IFREG | 0444;
	for (unsigned i = NFILES; i-- > 0;) {
		snprintf(name, sizeof(name), "f%03u", i);
		st.st_size = (off_t)f_size(i);
		if (fn(arg, name, &st))
			break;
	}
	return 0;
}

static int f_open(struct pf_backend *be, const char *path,
		  struct pf_bfile **out, struct stat *st)
{
	struct fbf *bf;
	unsigned id;
	char tail;

	(void)be;
	if (strcmp(path, "big") == 0)
		id = BIG;
	else if (strcmp(path, "big2") == 0)
		id = BIG2;
	else if (sscanf(path, "d/f%3u%c", &id, &tail) != 1 || id >= NFILES)
		return -ENOENT;
	bf = calloc(1, sizeof(*bf));
	if (!bf)
		return -ENOMEM;
	bf->id = id;
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFREG | 0444;
	st->st_size = (off_t)f_size(id);
	st->st_mtim.tv_sec = 1000;
	*out = (struct pf_bfile *)bf;
	return 0;
}

static void f_close(struct pf_backend *be, struct pf_bfile *f)
{
	(void)be;
	free(f);
}

static void f_complete(struct pf_bio *bio)
{
	const struct fbf *bf = (const struct fbf *)bio->file;
	uint64_t size = f_size(bf->id);
	uint64_t off = bio->off;
	int64_t done = 0;

	for (int i = 0; i < bio->iovcnt; i++) {
		unsigned char *p = bio->iov[i].iov_base;

		for (size_t k = 0; k < bio->iov[i].iov_len && off < size;
		     k++, off++, done++)
			p[k] = f_byte(bf->id, off);
	}
	bio->done(bio, done);
}

static int f_submit(struct pf_backend *be, struct pf_bio *bio)
{
	(void)be;
	pthread_mutex_lock(&blk);
	if (nsent < 64)
		sent_off[nsent++] = bio->off;
	if (autocomplete) {
		pthread_mutex_unlock(&blk);
		f_complete(bio);
		return 0;
	}
	bio->bnext = pending;
	pending = bio;
	pthread_mutex_unlock(&blk);
	return 0;
}

static const struct pf_backend_ops f_ops = {
	.name = "test",
	.getattr = f_getattr,
	.readdir = f_readdir,
	.open = f_open,
	.close = f_close,
	.submit = f_submit,
};

static unsigned bio_id(const struct pf_bio *b)
{
	return ((const struct fbf *)b->file)->id;
}

static uint64_t bio_len(const struct pf_bio *b)
{
	uint64_t len = 0;

	for (int i = 0; i < b->iovcnt; i++)
		len += b->iov[i].iov_len;
	return len;
}

/* Completes the pending reads of file @id (all of them: -1) that reach
 * into [off, off + len) (len 0: wherever they are); returns how many. */
static unsigned complete_in(int id, uint64_t off, uint64_t len)
{
	struct pf_bio *take = NULL;
	struct pf_bio **pp;
	unsigned n = 0;

	pthread_mutex_lock(&blk);
	pp = &pending;
	while (*pp) {
		struct pf_bio *b = *pp;

		if ((id < 0 || bio_id(b) == (unsigned)id) &&
		    (!len || (b->off < off + len &&
			      off < b->off + bio_len(b)))) {
			*pp = b->bnext;
			b->bnext = take;
			take = b;
		} else {
			pp = &b->bnext;
		}
	}
	pthread_mutex_unlock(&blk);
	while (take) {
		struct pf_bio *b = take;

		take = b->bnext;
		f_complete(b);
		n++;
	}
	return n;
}

static unsigned complete_of(int id)
{
	return complete_in(id, 0, 0);
}

/* Reads pending: how many (of file @id, or all: -1), and their bytes;
 * *@full: how many of them are fetch_size long. */
static unsigned count_full(int id, uint64_t *bytes, unsigned *full)
{
	unsigned n = 0;

	if (bytes)
		*bytes = 0;
	if (full)
		*full = 0;
	pthread_mutex_lock(&blk);
	for (struct pf_bio *b = pending; b; b = b->bnext) {
		if (id >= 0 && bio_id(b) != (unsigned)id)
			continue;
		n++;
		if (bytes)
			*bytes += bio_len(b);
		if (full && bio_len(b) == FETCH)
			(*full)++;
	}
	pthread_mutex_unlock(&blk);
	return n;
}

static unsigned count_pending(int id, uint64_t *bytes)
{
	return count_full(id, bytes, NULL);
}

/* ---- readers ----------------------------------------------------------- */

struct freq {
	int done;
	int err;
	size_t len;
	unsigned char buf[128 << 10];
};

static void f_reply(void *req, const struct iovec *iov, int iovcnt, int err)
{
	struct freq *r = req;

	r->err = err;
	r->len = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(r->buf + r->len, iov[i].iov_base, iov[i].iov_len);
		r->len += iov[i].iov_len;
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static struct pf_efile *open_file(unsigned id)
{
	struct stat st;
	char path[16];

	if (id == BIG)
		snprintf(path, sizeof(path), "big");
	else if (id == BIG2)
		snprintf(path, sizeof(path), "big2");
	else
		snprintf(path, sizeof(path), "d/f%03u", id);
	if (!files[id])
		files[id] = pf_efile_new(eng, path, id + 1);
	ck_assert_ptr_nonnull(files[id]);
	ck_assert_int_ge(pf_efile_open(files[id], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, f_size(id));
	return files[id];
}

static void check_bytes(const struct freq *r, unsigned id)
{
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->len, f_size(id));
	for (uint64_t off = 0; off < r->len; off++)
		if (r->buf[off] != f_byte(id, off))
			ck_abort_msg("f%03u: wrong byte at %llu", id,
				     (unsigned long long)off);
}

/* A reader's open, whole read and close of file @id, completing only the
 * backend reads of that file (the others stay pending). */
static void read_whole(unsigned id)
{
	struct pf_efile *f = open_file(id);
	struct freq *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	pf_engine_read(f, 0, f_size(id), f_reply, r);
	for (int i = 0; i < 5000 && !__atomic_load_n(&r->done,
						     __ATOMIC_ACQUIRE); i++) {
		if (!complete_of((int)id))
			usleep(1000);
	}
	ck_assert_int_eq(r->done, 1);
	check_bytes(r, id);
	free(r);
	pf_efile_close(f);
}

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

/* Polls the stats (a bounded while: the machine may be loaded). */
static bool stats_wait(const char *needle)
{
	for (int i = 0; i < 1000; i++) {
		if (stats_quiet(needle, true))
			return true;
		usleep(20000);
	}
	return stats_quiet(needle, false);
}

/* Waits (a bounded while: the machine may be loaded) until the reads
 * pending stop growing for half a second; returns their number. */
static unsigned settle(uint64_t *bytes)
{
	unsigned last = ~0u;
	unsigned same = 0;
	unsigned n = 0;

	for (int i = 0; i < 600 && same < 10; i++) {
		usleep(50000);
		n = count_pending(-1, bytes);
		same = n == last ? same + 1 : 0;
		last = n;
	}
	return n;
}

static void setup(void)
{
	struct pf_engine_cfg cfg;

	fbe.ops = &f_ops;
	pending = NULL;
	autocomplete = 0;
	nsent = 0;
	memset(files, 0, sizeof(files));
	pf_engine_cfg_default(&cfg, 8ull << 30);
	cfg.max_memory = 256u << 20;
	cfg.max_inflight = INFLIGHT;
	cfg.fetch_size = FETCH;
	if (min_window)
		cfg.min_window = min_window;
	ck_assert_int_eq(pf_engine_new(&cfg, &fbe, &eng), 0);
}

static void teardown(void)
{
	pthread_mutex_lock(&blk);
	autocomplete = 1;
	pthread_mutex_unlock(&blk);
	while (complete_of(-1))
		;
	pf_engine_quiesce(eng);
	for (unsigned i = 0; i <= BIG2; i++)
		if (files[i])
			pf_efile_put(files[i]);
	pf_engine_free(eng);
}

/* ---- tests ------------------------------------------------------------- */

/* File k of a shuffle that never follows (37 is prime to 256). */
static unsigned shuffled(unsigned k)
{
	return (k * 37 + 11) % NFILES;
}

START_TEST(test_small_fetches_past_max_inflight)
{
	struct freq *r[INFLIGHT];
	unsigned ids[INFLIGHT];
	bool was_read[NFILES] = { false };
	uint64_t bytes;
	unsigned n;

	/*
	 * A reader in shuffled order starts the fill of the directory: once
	 * the learner has the listing (a next-file thread lists it, on its
	 * own time), 12 of 16 opens that do not follow.
	 */
	for (unsigned k = 0; k < 100 && stats_quiet("\"state\": \"off\"", true);
	     k++) {
		read_whole(shuffled(k));
		was_read[shuffled(k)] = true;
		usleep(5000);
	}
	ck_assert(stats_wait("\"state\": \"running\""));
	/*
	 * Nothing completes: the fill's fetches of whole files (~100 KB
	 * each) pile up, more than max_inflight of them, as many as
	 * read-ahead may have (3 x max_inflight), their bytes far under
	 * max_inflight x fetch_size.
	 */
	n = settle(&bytes);
	ck_assert_uint_gt(n, 2 * INFLIGHT);
	ck_assert_uint_le(n, 3 * INFLIGHT);
	ck_assert_uint_le(bytes, (uint64_t)INFLIGHT * FETCH);
	/*
	 * Demand reads first: READs of max_inflight files the fill has not
	 * reached (it goes in name order and stopped well before the last
	 * files) nor the reader read each have their fetch sent before
	 * pf_engine_read() returns, past the fill's.
	 */
	for (unsigned i = 0, id = NFILES; i < INFLIGHT; i++) {
		while (was_read[--id])
			;
		ids[i] = id;
		ck_assert_uint_eq(count_pending((int)id, NULL), 0);
		r[i] = calloc(1, sizeof(*r[i]));
		ck_assert_ptr_nonnull(r[i]);
		pf_engine_read(open_file(id), 0, f_size(id), f_reply, r[i]);
		ck_assert_uint_ge(count_pending((int)id, NULL), 1);
	}
	ck_assert_uint_le(count_pending(-1, NULL),
			  PF_ENGINE_MAX_REQUESTS(INFLIGHT));
	for (unsigned i = 0; i < INFLIGHT; i++) {
		unsigned id = ids[i];

		for (int k = 0; k < 5000 && !__atomic_load_n(&r[i]->done,
							     __ATOMIC_ACQUIRE);
		     k++)
			if (!complete_of((int)id))
				usleep(1000);
		ck_assert_int_eq(r[i]->done, 1);
		check_bytes(r[i], id);
		free(r[i]);
		pf_efile_close(files[id]);
	}
}
END_TEST

START_TEST(test_full_fetches_stay_at_max_inflight)
{
	struct pf_efile *f = open_file(BIG);
	struct freq *r = calloc(1, sizeof(*r));
	uint64_t bytes;
	unsigned full;
	unsigned n;

	ck_assert_ptr_nonnull(r);
	/*
	 * A reader at random offsets of one big file, sure to be random
	 * after 16 READs: the fill reads the file whole in fetch_size
	 * pieces.  Each READ completes only the backend reads it needs, so
	 * the fill's pile up.
	 */
	for (unsigned k = 0; k < 40 && stats_quiet("\"state\": \"off\"", true);
	     k++) {
		/* (in the upper half: the fill starts from 0) */
		uint64_t off = ((k * 7919 + 13) % 512 + 512) * (64 << 10) +
			       512;

		memset(r, 0, offsetof(struct freq, buf));
		pf_engine_read(f, off, 4096, f_reply, r);
		for (int i = 0; i < 5000 && !__atomic_load_n(&r->done,
							     __ATOMIC_ACQUIRE);
		     i++)
			if (!complete_in(BIG, off, 4096))
				usleep(1000);
		ck_assert_int_eq(r->done, 1);
		ck_assert_int_eq(r->err, 0);
		ck_assert_uint_eq(r->len, 4096);
		for (unsigned i = 0; i < 4096; i++)
			ck_assert_uint_eq(r->buf[i], f_byte(BIG, off + i));
		usleep(2000);
	}
	ck_assert(stats_wait("\"state\": \"running\""));
	/* fetch_size pieces: max_inflight of them, no more (pieces that
	 * end at a block the reader fetched are shorter, and may go beside
	 * them within the same bytes) */
	n = settle(&bytes);
	count_full(-1, NULL, &full);
	ck_assert_uint_ge(full, INFLIGHT / 2);
	ck_assert_uint_le(full, INFLIGHT);
	ck_assert_uint_le(bytes, (uint64_t)INFLIGHT * FETCH);
	ck_assert_uint_le(n, 3 * INFLIGHT);
	free(r);
	pf_efile_close(f);
}
END_TEST

/* Waits (bounded) until the READ @r of [off, off + len) of file @id was
 * answered, completing the backend reads of it that reach into that
 * range; checks its bytes. */
static void read_done(struct freq *r, unsigned id, uint64_t off,
		      uint64_t len)
{
	for (int i = 0; i < 5000 && !__atomic_load_n(&r->done,
						     __ATOMIC_ACQUIRE); i++)
		if (!complete_in((int)id, off, len))
			usleep(1000);
	ck_assert_int_eq(r->done, 1);
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->len, len);
	for (size_t i = 0; i < r->len; i++)
		ck_assert_uint_eq(r->buf[i], f_byte(id, off + i));
}

START_TEST(test_starved_stream_gets_the_slot)
{
	struct pf_efile *a = open_file(BIG2);
	struct pf_efile *b;
	struct freq *ra = calloc(1, sizeof(*ra));
	struct freq *rb = calloc(1, sizeof(*rb));
	uint64_t bytes;
	unsigned n;

	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	/*
	 * Reader A's first READ: its early window (min_window, 16 MiB here)
	 * is twice what the gate lets be in flight (max_inflight x
	 * fetch_size, 8 MiB): A's read-ahead fills the gate and A still
	 * wants more.
	 */
	pf_engine_read(a, 0, 128 << 10, f_reply, ra);
	read_done(ra, BIG2, 0, 128 << 10);
	n = count_pending(BIG2, &bytes);
	ck_assert_uint_ge(bytes, (uint64_t)(INFLIGHT - 1) * FETCH);
	/*
	 * Reader B opens another file and READs its first 128 KiB: the
	 * READ's own fetch goes out (demand reads have slots of their own),
	 * its read-ahead finds the gate full.  Nothing of B is ready ahead.
	 */
	b = open_file(BIG);
	pf_engine_read(b, 0, 128 << 10, f_reply, rb);
	ck_assert_uint_eq(count_pending(BIG, NULL), 1);
	/*
	 * One of A's fetch_size fetches ends: the room it frees goes to B,
	 * which has nothing ahead, not to A, whose windows still hold
	 * 7 MiB in flight.
	 */
	ck_assert_uint_eq(complete_in(BIG2, 1 << 20, 1), 1);
	ck_assert_uint_eq(count_pending(BIG2, NULL), n - 1);
	ck_assert_uint_ge(count_pending(BIG, NULL), 2);
	read_done(rb, BIG, 0, 128 << 10);
	free(ra);
	free(rb);
	pf_efile_close(a);
	pf_efile_close(b);
}
END_TEST

START_TEST(test_nearest_sent_first)
{
	struct pf_efile *f = open_file(BIG);
	struct freq *r = calloc(1, sizeof(*r));
	unsigned n;

	ck_assert_ptr_nonnull(r);
	/*
	 * A first READ at 0: its own fetch and the early window's pieces
	 * are made under one lock; they reach the backend in file order,
	 * the READ's first, not the farthest piece first.
	 */
	pf_engine_read(f, 0, 128 << 10, f_reply, r);
	pthread_mutex_lock(&blk);
	n = nsent;
	pthread_mutex_unlock(&blk);
	ck_assert_uint_ge(n, 3);
	ck_assert_uint_eq(sent_off[0], 0);
	for (unsigned i = 1; i < n; i++)
		ck_assert_uint_gt(sent_off[i], sent_off[i - 1]);
	read_done(r, BIG, 0, 128 << 10);
	free(r);
	pf_efile_close(f);
}
END_TEST

static void setup_fair(void)
{
	min_window = 16u << 20;
	setup();
	min_window = 0;
}

static Suite *fetch_suite(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("inflight");
	TCase *fair = tcase_create("fair");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_small_fetches_past_max_inflight);
	tcase_add_test(tc, test_full_fetches_stay_at_max_inflight);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(fair, setup_fair, teardown);
	tcase_set_timeout(fair, 60);
	tcase_add_test(fair, test_starved_stream_gets_the_slot);
	tcase_add_test(fair, test_nearest_sent_first);
	suite_add_tcase(s, fair);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fetch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
