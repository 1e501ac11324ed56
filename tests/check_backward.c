/*
 * check_backward.c - a reader that walks each batch from its end down to
 * its start, with read-ahead pushed to the page cache, on a fake clock.
 *
 * glibc's memcpy() copies a large buffer backwards where source and
 * destination alias in the 4 KiB sense (on AMD CPUs it takes that path for
 * every copy above the L2 size, as bench/trainer --mode mmap's 8 MiB copy
 * out of a mapping, or numpy's copy of a memmap slice).  The page cache
 * then sees the batch's last page first: the READ of the batch's last
 * tripwire page moves the stream's frontier to the batch's end before the
 * READs of the tripwires inside the batch come.  Those must still be
 * answered from memory, not fetched again from the store (a round trip
 * each, and a stream of their own).
 */
#include "engine_harness.h"

static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_cond = PTHREAD_COND_INITIALIZER;
static uint64_t pushed_bytes;
static uint64_t pushed_end;	/* the end of the last push */
static int push_bad;

static void t_push(void *arg, uint64_t tag, const char *path, uint64_t off,
		   const struct iovec *iov, int iovcnt)
{
	(void)arg;
	(void)path;
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
	if (off > pushed_end)
		pushed_end = off;
	pthread_cond_broadcast(&push_cond);
	pthread_mutex_unlock(&push_lock);
}

/* Until the pusher has pushed up to @end (a wedged pusher fails the test
 * at its timeout). */
static void wait_pushed(uint64_t end)
{
	pthread_mutex_lock(&push_lock);
	while (pushed_end < end)
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
}

/*
 * Batches of 8 MiB (tripwires every 4 MiB) read backwards after the first
 * 8 MiB of READs: per batch [b, b + 8 MiB), the READ of the tripwire at
 * its end, then the one in its middle.  Both are hits; nothing is fetched
 * twice; memory stays within the windows ahead.
 */
START_TEST(test_backward_batch_tripwires)
{
	struct pf_engine_totals t0, t;

	tb.autocomplete = 1;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	wait_pushed(16u << 20);
	pf_engine_totals(eng, &t0);
	for (uint64_t b = 8u << 20; b < (48u << 20); b += 8u << 20) {
		/* the batch's pushes are in the page cache, its
		 * tripwires not */
		wait_pushed(b + (8u << 20) - 4096);
		advance_ms(5);
		read_sync(rq, b + (8u << 20) - 4096, 4096);
		assert_bytes(rq, b + (8u << 20) - 4096, 4096);
		read_sync(rq, b + (4u << 20) - 4096, 4096);
		assert_bytes(rq, b + (4u << 20) - 4096, 4096);
		pf_engine_totals(eng, &t);
		ck_assert_msg(t.misses == t0.misses,
			      "batch at %llu MiB: %llu misses, %llu before",
			      (unsigned long long)(b >> 20),
			      (unsigned long long)t.misses,
			      (unsigned long long)t0.misses);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	/* the tripwire blocks kept are few: within the windows ahead */
	ck_assert_uint_le(t.memory_used, 40u << 20);
}
END_TEST

/*
 * The same reader, seen by the tracker: its READs are the tripwires only,
 * the end of each batch, then its middle, 8 MiB apart each.  They are one
 * sequential stream's, which keeps pushing whole batches: they must not
 * make a strided stream of 4 KiB records (which fetches those pages only,
 * and leaves the reader's next batches to demand fetches).
 */
START_TEST(test_backward_stays_sequential)
{
	struct pf_engine_totals t0, t;
	const char *js;

	tb.autocomplete = 1;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	wait_pushed(16u << 20);
	pf_engine_totals(eng, &t0);
	for (uint64_t b = 8u << 20; b < (56u << 20); b += 8u << 20) {
		wait_pushed(b + (8u << 20) - 4096);
		advance_ms(40);
		read_sync(rq, b + (8u << 20) - 4096, 4096);
		read_sync(rq, b + (4u << 20) - 4096, 4096);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	js = pf_engine_stats_json(eng, "t");
	ck_assert_msg(strstr(js, "\"pattern\": \"strided\"") == NULL,
		      "a strided stream: %s", js);
	free((void *)js);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
}
END_TEST

static void setup_push(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 16, 8u << 20);
	fake_clock = 0;
}

static Suite *backward_suite(void)
{
	Suite *s = suite_create("backward");
	TCase *tc;

	tc = tcase_create("backward");
	tcase_add_checked_fixture(tc, setup_push, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_backward_batch_tripwires);
	tcase_add_test(tc, test_backward_stays_sequential);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(backward_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
