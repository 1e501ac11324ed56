/*
 * check_nextfile.c - the next file of a directory opened and read ahead by
 * the engine (nextfile.c) and handed to its reader; none for a random
 * reader.
 */
#include "engine_harness.h"

/* the engine with a backend that lists its files */
static void setup_next(void)
{
	with_listing = 1;
	setup_prefetch();
	with_listing = 0;
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

static Suite *nextfile_suite(void)
{
	Suite *s = suite_create("nextfile");
	TCase *tc;

	tc = tcase_create("next_file");
	tcase_add_checked_fixture(tc, setup_next, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_next_file_read_ahead);
	tcase_add_test(tc, test_next_file_not_for_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(nextfile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
