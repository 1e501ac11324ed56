/*
 * check_efile.c - the engine's files (efile.c): a version retired while
 * its handle is open (pf_efile_retire(), a newer file of the same path
 * opened meanwhile) fails its READs with EIO, even for bytes it had in
 * memory, while the newer file serves the new version; once its last
 * handle closed it cannot be opened again.  What a file holds beside its
 * blocks (totals.files_state_bytes) is proportional to what its readers
 * need: a small file read through once holds one stream's worth.  A
 * lookup by path costs the same among many files as among a few: a
 * dataset of a million files makes a million efiles, and every open looks
 * its path up (a file opened ahead, a plan's file).
 */
#include <inttypes.h>
#include <stdio.h>

#include "engine_harness.h"
#include "../src/engine/engine_int.h"

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

/*
 * A tree of many small files, each opened, read through once and closed,
 * its inode kept (a reference, as the kernel's lookup holds one).  While
 * open, a file holds what one reader needs: one stream (624 bytes), one
 * chunk of clusters (384), the tracker and its tables (about 550), one
 * engine stream (104), the efile and its path (under 250): at most 3 KiB
 * (a tracker of the 32 streams the configuration allows took 29.7 KiB).
 * Closed, only the CLOSED_TRACKERS most recent keep their trackers: the
 * 2000 files then hold 1 KiB each on average.
 */
#define NSMALL 2000
#define NOPEN 100

static uint64_t state_per_file(const struct pf_engine_totals *t0,
			       unsigned n)
{
	struct pf_engine_totals t1;

	pf_engine_totals(eng, &t1);
	ck_assert_uint_eq(t1.files - t0->files, n);
	return (t1.files_state_bytes - t0->files_state_bytes) / n;
}

START_TEST(test_state_per_file)
{
	struct pf_efile **fs = calloc(NSMALL, sizeof(*fs));
	struct pf_engine_totals t0;
	const struct tfile *tf = &tb.files[1];
	uint64_t per_file;
	struct stat st;

	ck_assert_ptr_nonnull(fs);
	pf_engine_totals(eng, &t0);
	for (unsigned i = 0; i < NSMALL; i++) {
		fs[i] = pf_efile_new(eng, "small", 100 + i);
		ck_assert_ptr_nonnull(fs[i]);
		ck_assert_int_eq(pf_efile_open(fs[i], &st), 0);
		for (uint64_t off = 0; off < tf->size; off += 32768)
			read_file_sync(fs[i], tf, off,
				       (size_t)(tf->size - off < 32768 ?
						tf->size - off : 32768));
		if (i + 1 == NOPEN) {
			/* NOPEN files open at once */
			complete_until_idle();
			per_file = state_per_file(&t0, NOPEN);
			fprintf(stderr, "state per open file: %" PRIu64
				" bytes\n", per_file);
			ck_assert_uint_gt(per_file, 0);
			ck_assert_uint_le(per_file, 3072);
			for (unsigned k = 0; k < NOPEN; k++)
				pf_efile_close(fs[k]);
		} else if (i >= NOPEN) {
			pf_efile_close(fs[i]);
		}
	}
	complete_until_idle();
	per_file = state_per_file(&t0, NSMALL);
	fprintf(stderr, "state per closed file: %" PRIu64 " bytes\n",
		per_file);
	ck_assert_uint_le(per_file, 1024);
	/* the stats file says so too */
	{
		char *js = pf_engine_stats_json(eng, "test");

		ck_assert_ptr_nonnull(js);
		ck_assert_ptr_nonnull(strstr(js, "\"files_state_bytes\": "));
		free(js);
	}
	/* a file whose tracker went learns again when reopened */
	ck_assert_int_eq(pf_efile_open(fs[0], &st), 0);
	read_file_sync(fs[0], tf, 0, 32768);
	read_file_sync(fs[0], tf, 32768, 32768);
	pf_efile_close(fs[0]);
	complete_until_idle();
	for (unsigned i = 0; i < NSMALL; i++)
		pf_efile_put(fs[i]);
	free(fs);
}
END_TEST

/*
 * NPATHS files by distinct paths, as a big dataset's walk makes them: each
 * pf_efile_new() looks its path up (a ghost to take over), so a linear
 * scan of the engine's files made this quadratic (about 2e10 string
 * compares here: hours, far beyond the test's timeout).  Every path is
 * then found as itself; a retired version is skipped for the newer one; a
 * file let go is found no more while the others still are.
 */
#define NPATHS 200000

START_TEST(test_many_paths)
{
	struct pf_efile **fs = calloc(NPATHS, sizeof(*fs));
	struct pf_efile *f, *nf;
	char path[32];

	ck_assert_ptr_nonnull(fs);
	for (unsigned i = 0; i < NPATHS; i++) {
		snprintf(path, sizeof(path), "train/n%06u.jpg", i);
		fs[i] = pf_efile_new(eng, path, 1000 + i);
		ck_assert_ptr_nonnull(fs[i]);
	}
	pthread_mutex_lock(&eng->lock);
	for (unsigned i = 0; i < NPATHS; i += 7) {
		snprintf(path, sizeof(path), "train/n%06u.jpg", i);
		ck_assert_ptr_eq(pf_efile_lookup(eng, path), fs[i]);
	}
	ck_assert_ptr_null(pf_efile_lookup(eng, "train/n999999.jpg"));
	pthread_mutex_unlock(&eng->lock);
	/* a newer version of one path: the lookup finds it, not the old */
	nf = pf_efile_new(eng, "train/n000042.jpg", 7);
	ck_assert_ptr_nonnull(nf);
	pf_efile_retire(fs[42]);
	pthread_mutex_lock(&eng->lock);
	ck_assert_ptr_eq(pf_efile_lookup(eng, "train/n000042.jpg"), nf);
	pthread_mutex_unlock(&eng->lock);
	pf_efile_put(nf);
	/* every other file let go */
	for (unsigned i = 0; i < NPATHS; i += 2) {
		pf_efile_put(fs[i]);
		fs[i] = NULL;
	}
	pthread_mutex_lock(&eng->lock);
	for (unsigned i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "train/n%06u.jpg", i);
		f = pf_efile_lookup(eng, path);
		if (i % 2)
			ck_assert_ptr_eq(f, fs[i]);
		else
			ck_assert_ptr_null(f);
	}
	pthread_mutex_unlock(&eng->lock);
	for (unsigned i = 1; i < NPATHS; i += 2)
		pf_efile_put(fs[i]);
	free(fs);
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
	tc = tcase_create("memory");
	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_state_per_file);
	suite_add_tcase(s, tc);
	tc = tcase_create("lookup");
	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_paths);
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
