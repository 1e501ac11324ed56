/*
 * check_push.c - read-ahead pushed to the page cache (push.c): the pusher
 * gives whole fetches of a sequential stream to the push function, and the
 * tripwire pages keep the tracker following the reader, on a fake clock.
 */
#include "engine_harness.h"

/* ---- pushing to the page cache ----------------------------------------- */

static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_cond = PTHREAD_COND_INITIALIZER;
static uint64_t pushed_bytes;
static uint64_t pushed_end;	/* the end of the last push */
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
	pushed_end = off;
	pthread_cond_broadcast(&push_cond);
	pthread_mutex_unlock(&push_lock);
}

/* Starts pushing, reads the first 8 MiB of "a" in 1 MiB READs, waits for
 * the pusher thread's first push (a wedged pusher fails the test at its
 * timeout); returns the offset read to. */
static uint64_t push_start_read_8m(void)
{
	uint64_t off;

	tb.autocomplete = 1;
	pushed_bytes = 0;
	pushed_end = 0;
	push_bad = 0;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	pthread_mutex_lock(&push_lock);
	while (!pushed_bytes)
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
	return off;
}

START_TEST(test_push_and_tripwires)
{
	struct pf_engine_totals t;
	const char *js;
	uint64_t off;

	/* a sequential reader: 1 MiB READs until read-ahead is pushed, then
	 * only the READs the page cache would still send: the tripwire
	 * pages, the last page before every half batch (4 MiB of 8) */
	off = push_start_read_8m();
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
	/* pushed bytes are served too (the reader reads them in its page
	 * cache): the 8 MiB of READs, the tripwire pages, and the pushes */
	ck_assert_uint_ge(t.bytes_served, (8u << 20) + t.bytes_pushed);
	/* the tracker followed the reader through the pushed bytes: one
	 * sequential stream, read-ahead up to the end of the file */
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_null(strstr(js, "\"pattern\": \"strided\""));
	free((void *)js);
	ck_assert_uint_ge(t.bytes_fetched, 56u << 20);
}
END_TEST

/*
 * Memory follows read-ahead, not bytes read: a pushed block goes back to
 * the pool once its stream read past it, and the pool reuses those
 * buffers before it maps more.  A sequential reader through 56 MiB of
 * pushed read-ahead, with a budget of 256 MiB: the blocks in use stay
 * within the windows ahead, the pool never maps anywhere near what was
 * read, nothing is fetched twice, and what is held is ahead of the reader.
 */
START_TEST(test_push_releases_consumed)
{
	struct pf_engine_totals t;
	uint64_t off, peak_used = 0;

	off = push_start_read_8m();
	for (off += 4u << 20; off <= (56u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
		assert_bytes(rq, off - 4096, 4096);
		pf_engine_totals(eng, &t);
		if (t.memory_used > peak_used)
			peak_used = t.memory_used;
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	/* the parts add up */
	ck_assert_uint_eq(t.memory_inflight + t.memory_ahead + t.memory_reread,
			  t.memory_used);
	/* nothing fetched twice: the file is 64 MiB */
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_ge(t.bytes_fetched, 56u << 20);
	ck_assert_int_eq(t.fetch_errors, 0);
	/* read-ahead of 8 MiB batches: a few windows, never the 56 MiB read
	 * (before, every pushed block stayed: memory_used grew with it);
	 * the pusher's queue is part of it (its thread may lag behind this
	 * one) */
	ck_assert_uint_le(peak_used, 48u << 20);
	ck_assert_uint_le(t.memory_mapped, 48u << 20);
	/* at the end: at most the 8 MiB left of the file ahead and the 8 MiB
	 * of first READs (before, the whole 64 MiB file) */
	ck_assert_uint_le(t.memory_used, 24u << 20);
	/* cached for re-read: at most the first READs, made before the
	 * stream was known (demand fetches) */
	ck_assert_uint_le(t.memory_reread, 8u << 20);
}
END_TEST

/*
 * The kernel dropped pushed pages the reader had not read yet (reclaim of
 * clean page cache), and the reader's read-ahead sent the READ of that hole
 * with the READ of the next tripwire page.  FUSE workers take them in any
 * order: the tripwire's, answered first, moves the frontier past the hole,
 * whose READ must still be answered from memory, not fetched again from the
 * store (a demand fetch, and a stream of its own).
 */
START_TEST(test_push_hole_after_tripwire)
{
	const uint64_t hole = (11u << 20) + 3 * 4096;
	struct pf_engine_totals t0, t;

	push_start_read_8m();
	/* [8, 12) MiB pushed and unpinned: the pusher has pushed beyond */
	pthread_mutex_lock(&push_lock);
	while (pushed_end <= (12u << 20))
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
	advance_ms(5);
	pf_engine_totals(eng, &t0);
	read_sync(rq, (12u << 20) - 4096, 4096);
	assert_bytes(rq, (12u << 20) - 4096, 4096);
	read_sync(rq, hole, 4096);
	assert_bytes(rq, hole, 4096);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.reads, t0.reads + 2);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_eq(t.waits, t0.waits);
	/* the bytes behind the frontier still go: the next tripwires */
	for (uint64_t off = 16u << 20; off <= (28u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_le(t.memory_used, 40u << 20);
}
END_TEST

static void setup_push(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 16, 8u << 20);
	fake_clock = 0;
}

static Suite *push_suite(void)
{
	Suite *s = suite_create("push");
	TCase *tc;

	tc = tcase_create("push");
	tcase_add_checked_fixture(tc, setup_push, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_push_and_tripwires);
	tcase_add_test(tc, test_push_releases_consumed);
	tcase_add_test(tc, test_push_hole_after_tripwire);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(push_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
