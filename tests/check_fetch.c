/*
 * check_fetch.c - how many fetches the engine has at the backend at once
 * (src/fetch.c, pf_fetch_room()): read-ahead of whole small files goes past
 * max_inflight requests, bounded by bytes in flight (max_inflight x
 * fetch_size) and by the requests kept for demand fetches; a READ still
 * gets its fetch sent at once.  (Read-ahead of fetch_size pieces staying
 * at max_inflight is asserted in check_readahead.c.)
 *
 * The backend (tests/engine_harness.h's) holds a directory "d" of NFILES
 * small files and a 64 MiB file "big" (and "big2" for the tests of who
 * gets a slot), whose bytes are a function of (file, offset); its reads
 * wait in a list until the test completes them, so what the engine sends
 * piles up where the test can count it.  The small fetches come from the background fill
 * (dirahead.c), which a reader opening the files in shuffled order starts.
 *
 * Who gets a slot freed in the gate (pf_fetch_done()): a stream whose
 * read-ahead the gate refused, with nothing ready ahead of its reader,
 * before the stream whose fetch ended and whose windows fill the gate; and
 * the fetches a planner makes at once go to the backend nearest the reader
 * first.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine_harness.h"

#define NFILES 256
#define INFLIGHT 8
#define FETCH (1u << 20)
#define BIG NFILES		/* the id of "big" */
#define BIG2 (NFILES + 1)	/* and of "big2" (the "fair" tests') */
#define BIG_SIZE (64ull << 20)

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

/* Waits (bounded) until the READ @r of [off, off + len) of file @id was
 * answered, completing the backend reads of it that reach into that
 * range; checks its bytes. */
static void read_done(struct treq *r, unsigned id, uint64_t off,
		      uint64_t len)
{
	for (int i = 0; i < 5000 && !__atomic_load_n(&r->done,
						     __ATOMIC_ACQUIRE); i++)
		if (!complete_matching((int)id, off, len))
			usleep(1000);
	ck_assert_int_eq(r->done, 1);
	assert_file_bytes(r, &tb.files[id], off, len);
}

/* The tree: d/f000 ... d/f255 (ids 0 to 255), then "big" (BIG) and, if
 * @big2, "big2" (BIG2); an engine over it with its own min_window if
 * @min_window is not 0. */
static void setup_tree(uint64_t min_window, bool big2)
{
	struct pf_engine_cfg cfg;
	char path[16];

	tb_reset(&t_ops_dir);
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "d/f%03u", i);
		tb_add_file(path, 100000 + 1000 * (i % 5), NULL);
	}
	tb_add_file("big", BIG_SIZE, NULL);
	if (big2)
		tb_add_file("big2", BIG_SIZE, NULL);
	harness_cfg(&cfg, 256u << 20, INFLIGHT);
	cfg.fetch_size = FETCH;
	if (min_window)
		cfg.min_window = min_window;
	engine_start(&cfg);
}

static void setup_inflight(void)
{
	setup_tree(0, false);
}

static void setup_fair(void)
{
	setup_tree(16u << 20, true);
}

/* ---- tests ------------------------------------------------------------- */

/* File k of a shuffle that never follows (37 is prime to 256). */
static unsigned shuffled(unsigned k)
{
	return (k * 37 + 11) % NFILES;
}

START_TEST(test_small_fetches_past_max_inflight)
{
	struct treq *r[INFLIGHT];
	unsigned ids[INFLIGHT];
	bool was_read[NFILES] = { false };
	uint64_t bytes;
	unsigned n;

	/*
	 * A reader in shuffled order starts the fill of the directory: once
	 * the learner has the listing (a next-file thread lists it, on its
	 * own time), 12 of 16 opens that do not follow.  Each read completes
	 * only the backend reads of its file (the others stay pending).
	 */
	for (unsigned k = 0; k < 100 && stats_quiet("\"state\": \"off\"", true);
	     k++) {
		unsigned id = shuffled(k);
		struct pf_efile *f = tfile_open(id);

		read_wait(f, (int)id, 0, tb.files[id].size, rq);
		assert_file_bytes(rq, &tb.files[id], 0, tb.files[id].size);
		pf_efile_close(f);
		was_read[id] = true;
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
		pf_engine_read(tfile_open(id), 0, tb.files[id].size, t_reply,
			       r[i]);
		ck_assert_uint_ge(count_pending((int)id, NULL), 1);
	}
	ck_assert_uint_le(count_pending(-1, NULL),
			  PF_ENGINE_MAX_REQUESTS(INFLIGHT));
	for (unsigned i = 0; i < INFLIGHT; i++) {
		unsigned id = ids[i];

		read_done(r[i], id, 0, tb.files[id].size);
		free(r[i]);
		pf_efile_close(efiles[id]);
	}
}
END_TEST

START_TEST(test_full_fetches_stay_at_max_inflight)
{
	struct pf_efile *f = tfile_open(BIG);
	uint64_t bytes;
	unsigned full;
	unsigned n;

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

		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(f, off, 4096, t_reply, rq);
		read_done(rq, BIG, off, 4096);
		usleep(2000);
	}
	ck_assert(stats_wait("\"state\": \"running\""));
	/* fetch_size pieces: max_inflight of them, no more (pieces that
	 * end at a block the reader fetched are shorter, and may go beside
	 * them within the same bytes) */
	n = settle(&bytes);
	count_pending_len(-1, NULL, FETCH, &full);
	ck_assert_uint_ge(full, INFLIGHT / 2);
	ck_assert_uint_le(full, INFLIGHT);
	ck_assert_uint_le(bytes, (uint64_t)INFLIGHT * FETCH);
	ck_assert_uint_le(n, 3 * INFLIGHT);
	pf_efile_close(f);
}
END_TEST

START_TEST(test_starved_stream_gets_the_slot)
{
	struct pf_efile *a = tfile_open(BIG2);
	struct pf_efile *b;
	uint64_t bytes;
	unsigned n;

	/*
	 * Reader A's first READ: its early window (min_window, 16 MiB here)
	 * is twice what the gate lets be in flight (max_inflight x
	 * fetch_size, 8 MiB): A's read-ahead fills the gate and A still
	 * wants more.
	 */
	pf_engine_read(a, 0, 128 << 10, t_reply, rq);
	read_done(rq, BIG2, 0, 128 << 10);
	n = count_pending(BIG2, &bytes);
	ck_assert_uint_ge(bytes, (uint64_t)(INFLIGHT - 1) * FETCH);
	/*
	 * Reader B opens another file and READs its first 128 KiB: the
	 * READ's own fetch goes out (demand reads have slots of their own),
	 * its read-ahead finds the gate full.  Nothing of B is ready ahead.
	 */
	b = tfile_open(BIG);
	pf_engine_read(b, 0, 128 << 10, t_reply, rq2);
	ck_assert_uint_eq(count_pending(BIG, NULL), 1);
	/*
	 * One of A's fetch_size fetches ends: the room it frees goes to B,
	 * which has nothing ahead, not to A, whose windows still hold
	 * 7 MiB in flight.
	 */
	ck_assert_uint_eq(complete_matching(BIG2, 1 << 20, 1), 1);
	ck_assert_uint_eq(count_pending(BIG2, NULL), n - 1);
	ck_assert_uint_ge(count_pending(BIG, NULL), 2);
	read_done(rq2, BIG, 0, 128 << 10);
	pf_efile_close(a);
	pf_efile_close(b);
}
END_TEST

/* The offsets of the reads sent so far (the first @max), in the order
 * they were sent: tb.pending's, newest first, while none has completed
 * (checked).  Returns how many. */
static unsigned sent_offsets(uint64_t *off, unsigned max)
{
	unsigned n;
	unsigned sent;
	unsigned i;

	pthread_mutex_lock(&tb.lock);
	n = tb.npending;
	sent = tb.submits;
	i = n;
	for (struct pf_bio *b = tb.pending; b; b = b->bnext)
		if (--i < max)
			off[i] = b->off;
	pthread_mutex_unlock(&tb.lock);
	ck_assert_uint_eq(n, sent);
	return n < max ? n : max;
}

START_TEST(test_nearest_sent_first)
{
	struct pf_efile *f = tfile_open(BIG);
	uint64_t sent_off[64];
	unsigned n;

	/*
	 * A first READ at 0: its own fetch and the early window's pieces
	 * are made under one lock; they reach the backend in file order,
	 * the READ's first, not the farthest piece first.
	 */
	pf_engine_read(f, 0, 128 << 10, t_reply, rq);
	n = sent_offsets(sent_off, 64);
	ck_assert_uint_ge(n, 3);
	ck_assert_uint_eq(sent_off[0], 0);
	for (unsigned i = 1; i < n; i++)
		ck_assert_uint_gt(sent_off[i], sent_off[i - 1]);
	read_done(rq, BIG, 0, 128 << 10);
	pf_efile_close(f);
}
END_TEST

static Suite *fetch_suite(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("inflight");
	TCase *fair = tcase_create("fair");

	tcase_add_checked_fixture(tc, setup_inflight, teardown);
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
