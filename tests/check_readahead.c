/*
 * check_readahead.c - read-ahead planned by the engine (readahead.c):
 * sequential windows, the early window of a reader from offset zero (its
 * first half in pieces, most of the rest once they landed) and none
 * elsewhere, waits in it that leave the depth alone, many fetches in
 * flight (max_inflight of fetch_size, and shorter ones within the same
 * bytes), the stats file's streams.
 */
#include "engine_harness.h"

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

/* A READ that waits for read-ahead in flight is a wait, never a hit. */
START_TEST(test_wait_for_readahead_is_not_a_hit)
{
	struct pf_engine_totals t;
	const char *js;

	/* a first READ at 0 misses, and a window is read ahead at once */
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	pf_engine_totals(eng, &t);
	ck_assert_uint_gt(t.bytes_prefetched, 256 << 10);
	/* the next READ finds its blocks in flight: it waits for them */
	pf_engine_read(ef, 128 << 10, 128 << 10, t_reply, rq2);
	ck_assert_int_eq(rq2->done, 0);
	complete_until_idle();
	ck_assert(rq->done && rq2->done);
	assert_bytes(rq, 0, 128 << 10);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[0].data + (128 << 10),
				128 << 10), 0);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.reads, 2);
	ck_assert_uint_eq(t.hits, 0);
	ck_assert_uint_eq(t.misses, 1);
	ck_assert_uint_eq(t.waits, 2);
	ck_assert_uint_eq(t.inflight_waits, 1);
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"inflight_waits\": 1,"));
	free((void *)js);
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

/* The bytes of file "a" pending at the backend in [from, to); *n: how
 * many fetches. */
static uint64_t pending_in(uint64_t from, uint64_t to, unsigned *n)
{
	uint64_t covered = 0;

	*n = 0;
	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		if ((struct tfile *)b->file != &tb.files[0] || b->off < from ||
		    b->off >= to)
			continue;
		covered += len;
		(*n)++;
	}
	pthread_mutex_unlock(&tb.lock);
	return covered;
}

/* Completes one pending fetch of file "a" that starts below @to: 1 if
 * there was one. */
static unsigned complete_one_below(uint64_t to)
{
	struct pf_bio **pp;
	struct pf_bio *b;

	pthread_mutex_lock(&tb.lock);
	for (pp = &tb.pending; *pp && ((*pp)->off >= to ||
				       (struct tfile *)(*pp)->file !=
					       &tb.files[0]);
	     pp = &(*pp)->bnext)
		;
	b = *pp;
	if (b) {
		*pp = b->bnext;
		tb.npending--;
	}
	pthread_mutex_unlock(&tb.lock);
	if (!b)
		return 0;
	complete(b);
	return 1;
}

/*
 * The first half of the early window goes out in pieces of an eighth of
 * min_window (1 MiB here), all at once: the READs that follow the first
 * one are answered as their own piece lands, not when a fetch_size fetch
 * holding them does.  With fetch_size as large as min_window, the rest of
 * the window goes with them.
 */
START_TEST(test_early_window_in_pieces)
{
	uint64_t covered = 0;
	unsigned small = 0;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		covered += len;
		if (b->off < (512 << 10)) {
			/* no piece crosses a piece boundary */
			ck_assert_uint_le(len, 128 << 10);
			ck_assert_uint_le(b->off % (128 << 10) + len, 128 << 10);
			small++;
		}
	}
	/* the READ itself, then three pieces up to half the window */
	ck_assert_uint_eq(small, 4);
	/* the whole early window was asked for at once */
	ck_assert_uint_eq(covered, (1u << 20) + (128 << 10));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
}
END_TEST

/*
 * min_window 4 MiB, fetch_size 1 MiB, another file being read: with the
 * pieces (up to 2 MiB), one fetch_size of the early window's second half
 * goes out; the rest of it once the pieces have landed, so that it does
 * not take bandwidth from them while other readers start too.
 */
START_TEST(test_early_second_half_waits_for_pieces)
{
	const uint64_t z = 2u << 20;
	struct pf_efile *bf = pf_efile_new(eng, "b", 9);
	struct stat st;
	unsigned n;

	/* the other reader: a READ in the middle of "b", still in flight */
	ck_assert_ptr_nonnull(bf);
	ck_assert_int_eq(pf_efile_open(bf, &st), 0);
	memset(rq2, 0, offsetof(struct treq, buf));
	pf_engine_read(bf, 5u << 20, 128 << 10, t_reply, rq2);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	/* the READ and the pieces: 2 MiB in 512 KiB pieces */
	ck_assert_uint_eq(pending_in(0, z, &n), z);
	ck_assert_uint_eq(n, 5);
	/* one fetch of the second half, nothing past it */
	ck_assert_uint_eq(pending_in(z, z + (1u << 20), &n), 1u << 20);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(pending_in(z + (1u << 20), FSIZE, &n), 0);
	/* the pieces but one land: still nothing past that fetch */
	while (pending_in(0, z, &n) && n > 1)
		ck_assert_uint_eq(complete_one_below(z), 1);
	ck_assert_uint_eq(pending_in(z + (1u << 20), FSIZE, &n), 0);
	/* the last piece lands: then the rest of the window */
	ck_assert_uint_eq(complete_one_below(z), 1);
	ck_assert_uint_eq(pending_in(z + (1u << 20), FSIZE, &n),
			  (4u << 20) + (128 << 10) - z - (1u << 20));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
	complete_until_idle();
	ck_assert(rq2->done);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[2].data + (5u << 20),
				128 << 10), 0);
	pf_efile_close(bf);
	pf_efile_put(bf);
}
END_TEST

/* A lone reader (a scan: nothing else in flight) gets its whole early
 * window at once. */
START_TEST(test_early_window_lone_reader)
{
	unsigned n;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	ck_assert_uint_eq(pending_in(0, FSIZE, &n), (4u << 20) + (128 << 10));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
}
END_TEST

/*
 * READs that wait for read-ahead in flight while a stream is in its first
 * min_window (the early window's latency) leave its depth alone:
 * prefetch_batches windows.
 */
START_TEST(test_early_waits_keep_depth)
{
	struct pf_engine_totals t;
	char *js;
	const char *p;
	uint64_t off;

	/* fetches complete one at a time, oldest first, READs of one early
	 * piece (128 KiB): each lands in a piece still in flight */
	for (off = 0; off < (1u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done)
			ck_assert_uint_gt(complete_oldest(), 0);
		assert_bytes(rq, off, 128 << 10);
	}
	while (complete_pending())
		;
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.inflight_waits, 2);
	js = pf_engine_stats_json(eng, "test");
	ck_assert_ptr_nonnull(js);
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	p = strstr(js, "\"windows_ahead\": ");
	ck_assert_ptr_nonnull(p);
	/* all planned bytes are in: two windows ahead, not more */
	ck_assert_double_le(strtod(p + strlen("\"windows_ahead\": "), NULL),
			    2.0);
	free(js);
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

/* The fetches pending at the backend: how many of fetch_size (1 MiB), and
 * their bytes. */
static uint64_t pending_bytes(unsigned *full)
{
	uint64_t bytes = 0;

	*full = 0;
	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		if (len == 1u << 20)
			(*full)++;
		bytes += len;
	}
	pthread_mutex_unlock(&tb.lock);
	return bytes;
}

START_TEST(test_prefetch_keeps_many_in_flight)
{
	struct pf_engine_totals t;
	uint64_t off;
	unsigned full;

	/* 8 MiB batches, 2 windows: once the stream is known, 16 MiB ahead
	 * are asked for at once, max_inflight (16) reads of fetch_size at a
	 * time; the window's shorter pieces may go beside them, within the
	 * same bytes (fetch.c) */
	for (off = 0; off < (4u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done) {
			/* (a READ's own fetch may go past the bytes) */
			ck_assert_uint_le(pending_bytes(&full),
					  (16u << 20) + (128 << 10));
			ck_assert_uint_le(full, 16);
			ck_assert_uint_le(tb.npending, 4 * 16);
			ck_assert_uint_gt(complete_pending(), 0);
		}
	}
	ck_assert_uint_ge(tb.max_pending, 16);
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.inflight, 4 * 16);
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

static void setup_early4(void)
{
	setup_min_window = 4u << 20;
	setup_with(256u << 20, 1, 16, 0);
	setup_min_window = 1u << 20;
}

static void setup_prefetch_fake(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 1, 1u << 20);
	fake_clock = 0;
}

static Suite *readahead_suite(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc;

	tc = tcase_create("prefetch");
	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sequential_prefetch);
	tcase_add_test(tc, test_stats_json);
	tcase_add_test(tc, test_early_start_from_offset_zero);
	tcase_add_test(tc, test_early_window_in_pieces);
	tcase_add_test(tc, test_wait_for_readahead_is_not_a_hit);
	tcase_add_test(tc, test_no_early_start_elsewhere);
	suite_add_tcase(s, tc);

	tc = tcase_create("early");
	tcase_add_checked_fixture(tc, setup_early4, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_early_second_half_waits_for_pieces);
	tcase_add_test(tc, test_early_window_lone_reader);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth");
	tcase_add_checked_fixture(tc, setup_prefetch_fake, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_early_waits_keep_depth);
	suite_add_tcase(s, tc);

	tc = tcase_create("inflight");
	tcase_add_checked_fixture(tc, setup_batch8, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_prefetch_keeps_many_in_flight);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(readahead_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
