/*
 * check_efile.c - the engine's files (efile.c): a version retired while
 * its handle is open (pf_efile_retire(), a newer file of the same path
 * opened meanwhile) fails its READs with EIO, even for bytes it had in
 * memory, while the newer file serves the new version; once its last
 * handle closed it cannot be opened again.
 */
#include "engine_harness.h"

START_TEST(test_retired_version)
{
	const uint64_t nsize = 1u << 20;
	unsigned char *olddata = tb.files[0].data;
	struct pf_efile *nf;
	struct stat st;

	/* the old version, its first block in memory */
	read_sync(rq, 0, 65536);
	assert_bytes(rq, 0, 65536);
	/* the source's file is replaced by a smaller one; a new open gets a
	 * new file of the path while the old handle is still open */
	tb.files[0].data = pattern_data(nsize, 9);
	tb.files[0].size = nsize;
	nf = pf_efile_new(eng, "a", 7);
	ck_assert_ptr_nonnull(nf);
	ck_assert_ptr_ne(nf, ef);
	ck_assert_int_eq(pf_efile_open(nf, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)nsize);
	pf_efile_retire(ef);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 65536, t_reply, rq);
	ck_assert_int_eq(rq->done, 1);
	ck_assert_int_eq(rq->err, EIO);
	read_file_sync(nf, &tb.files[0], 0, 65536);
	read_file_sync(nf, &tb.files[0], nsize - 4096, 4096);
	/* the old handle closes: the retired file cannot be opened again */
	pf_efile_close(ef);
	ck_assert_int_eq(pf_efile_open(ef, &st), -ESTALE);
	pf_efile_put(ef);
	ef = nf;	/* teardown closes this one */
	complete_until_idle();
	free(olddata);
}
END_TEST

static Suite *efile_suite(void)
{
	Suite *s = suite_create("efile");
	TCase *tc = tcase_create("versions");

	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_retired_version);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(efile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
