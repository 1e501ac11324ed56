/*
 * check_cache.c - the block cache's eviction (cache.c) against the harness
 * backend (engine_harness.h): a block of read-ahead that holds the end of
 * one record and the start of the next is not given to the re-read share,
 * evicted first, when the READ of one record covers its part: the other
 * record's prefetched bytes stay until they are read.
 */
#include "engine_harness.h"

#include "../src/engine/engine_int.h"

/* Records at unaligned offsets, as a shuffled loader reads them: A's tail
 * and B's head share block 1 [64 KiB, 128 KiB). */
#define A_OFF 10000u
#define B_OFF 100000u
#define B_END 200000u

/* Fetches [off, end) of "a" ahead, as hints or a background fill do. */
static void prefetch(uint64_t off, uint64_t end)
{
	struct fetch_builder fb = { 0 };
	struct cover c = { .demand = false };
	struct deferred later = { 0 };
	uint64_t upto;

	pthread_mutex_lock(&eng->lock);
	upto = pf_cover_range(eng, ef, off, end, &c, &fb, &later);
	pf_fetch_builder_flush(eng, &fb, &later);
	pthread_mutex_unlock(&eng->lock);
	pf_fetch_deferred_run(eng, &later);
	ck_assert_uint_eq(upto, end);
	complete_until_idle();
}

START_TEST(test_shared_block_kept_for_its_other_record)
{
	struct pf_engine_totals t;
	uint64_t submits;
	uint64_t bytes;

	prefetch(A_OFF, B_END);
	submits = tb.submits;
	bytes = tb.bytes;

	/* B is read: block 1 still holds A's tail nobody read */
	read_sync(rq, B_OFF, B_END - B_OFF);
	assert_bytes(rq, B_OFF, B_END - B_OFF);
	ck_assert_uint_eq(tb.submits, submits);

	/* memory pressure from blocks read elsewhere: more than the re-read
	 * share (a quarter of 16 MiB, 64 blocks) */
	tb.autocomplete = 1;
	for (uint64_t i = 0; i < 100; i++) {
		uint64_t off = (32u << 20) + (i << 16);

		read_sync(rq, off, 4096);
		assert_bytes(rq, off, 4096);
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.memory_reread, 4u << 20);
	submits = tb.submits;
	bytes = tb.bytes;

	/* A is answered from its read-ahead: nothing fetched */
	read_sync(rq, A_OFF, B_OFF - A_OFF);
	assert_bytes(rq, A_OFF, B_OFF - A_OFF);
	ck_assert_uint_eq(tb.submits, submits);
	ck_assert_uint_eq(tb.bytes, bytes);

	/* both records read: block 1 is in the re-read share now, no longer
	 * held as read-ahead */
	pthread_mutex_lock(&eng->lock);
	ck_assert_uint_eq(eng->lru_count[LRU_UNREAD], 0);
	pthread_mutex_unlock(&eng->lock);
}
END_TEST

/*
 * The same two records read A first, then B's bytes of the shared block
 * fetched later (new bytes), then B read: the block is wholly read, so it
 * is not kept as read-ahead past the re-read share.
 */
START_TEST(test_read_bytes_survive_a_later_fetch)
{
	struct pf_engine_totals t;

	prefetch(A_OFF, B_OFF);
	read_sync(rq, A_OFF, B_OFF - A_OFF);
	assert_bytes(rq, A_OFF, B_OFF - A_OFF);
	prefetch(B_OFF, B_END);
	read_sync(rq, B_OFF, B_END - B_OFF);
	assert_bytes(rq, B_OFF, B_END - B_OFF);
	pthread_mutex_lock(&eng->lock);
	ck_assert_uint_eq(eng->lru_count[LRU_UNREAD], 0);
	pthread_mutex_unlock(&eng->lock);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.memory_ahead, 0);
}
END_TEST

/* 16 MiB: 256 blocks, 64 of them for re-reads */
static void setup_small(void)
{
	setup_with(16u << 20, 0, 16, 0);
}

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc;

	tc = tcase_create("shared");
	tcase_add_checked_fixture(tc, setup_small, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_shared_block_kept_for_its_other_record);
	tcase_add_test(tc, test_read_bytes_survive_a_later_fetch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
