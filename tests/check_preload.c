/*
 * check_preload.c - warm-ups (preload.c, pf_engine_preload_*): the files
 * written to a handle are read whole on the opener threads, paths as the
 * engine knows them ("./d//f" is "d/f"); a second warm-up of what memory
 * holds reads nothing; bad lines fail their write; a file missing fails
 * alone; files beyond the fill's budget stop the job with ENOSPC; closing
 * the handle asks for nothing more; no prefetch, no warm-up.  The
 * in-memory backend of engine_harness.h.
 */
#include "engine_harness.h"

#include <time.h>

#include "pf_json.h"
#include "pf_log.h"

/* The status of @p, parsed (the caller frees it). */
static struct pf_json *status_of(struct pf_engine_preload *p)
{
	char buf[8192];
	struct pf_json *j = NULL;
	int n = pf_engine_preload_status(eng, p, buf, sizeof(buf));

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_int_eq(pf_json_parse(buf, (size_t)n, &j), 0);
	return j;
}

static double st(struct pf_engine_preload *p, const char *key)
{
	struct pf_json *j = status_of(p);
	double v = pf_json_num(j, key, -1);

	pf_json_free(j);
	return v;
}

/* Waits (10 s at most) until nothing of @p is queued, opening or read. */
static void wait_idle(struct pf_engine_preload *p)
{
	struct timespec ts = { 0, 2000000 };

	for (int i = 0; i < 5000 && st(p, "active") != 0; i++)
		nanosleep(&ts, NULL);
	ck_assert_int_eq((int)st(p, "active"), 0);
}

static int write_str(struct pf_engine_preload *p, const char *s)
{
	return pf_engine_preload_write(eng, p, s, strlen(s));
}

/* d/f00 ... d/f09, 100000 bytes each; reads complete at once */
static void setup_tree(uint64_t max_memory, uint64_t size, unsigned n)
{
	char path[32];

	pf_log_set_level(PF_LOG_ERR);	/* the failures tested are warned of */
	setup_with(max_memory, 1, 16, 0);
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "d/f%02u", i);
		tb_add_file(path, size, NULL);
	}
	pthread_mutex_lock(&tb.lock);
	tb.autocomplete = 1;
	pthread_mutex_unlock(&tb.lock);
}

START_TEST(test_warm_then_nothing)
{
	struct pf_engine_preload *p;
	struct pf_engine_preload *q;
	unsigned submits;

	setup_tree(256u << 20, 100000, 10);
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &p), 0);
	/* any spelling of a path under the root; a line may straddle
	 * writes; comments and empty lines are skipped */
	ck_assert_int_eq(write_str(p, "d/f00\n./d//f01\n/d/f02\n# x\n\nd/f0"),
			 31);
	ck_assert_int_eq(write_str(p, "3\nd/f04\nd/f05\nd/f06\nd/f07\n"
				      "d/f08\nd/f09\n"), 38);
	wait_idle(p);
	ck_assert_int_eq((int)st(p, "files_total"), 10);
	ck_assert_int_eq((int)st(p, "files"), 10);
	ck_assert_int_eq((int)st(p, "failed"), 0);
	ck_assert_int_eq((int)st(p, "cached"), 0);
	ck_assert_int_eq((int)st(p, "bytes"), 1000000);
	pthread_mutex_lock(&tb.lock);
	submits = tb.submits;
	pthread_mutex_unlock(&tb.lock);
	ck_assert_uint_ge(submits, 10);

	/* again: memory holds every file, nothing is read */
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &q), 0);
	ck_assert_int_eq(write_str(q, "d/f00\nd/f01\nd/f02\nd/f03\nd/f04\n"
				      "d/f05\nd/f06\nd/f07\nd/f08\nd/f09\n"),
			 60);
	wait_idle(q);
	ck_assert_int_eq((int)st(q, "files"), 10);
	ck_assert_int_eq((int)st(q, "cached"), 10);
	ck_assert_int_eq((int)st(q, "bytes_cached"), 1000000);
	pthread_mutex_lock(&tb.lock);
	ck_assert_uint_eq(tb.submits, submits);
	pthread_mutex_unlock(&tb.lock);
	pf_engine_preload_close(eng, q);
	pf_engine_preload_close(eng, p);
}
END_TEST

START_TEST(test_bad_lines)
{
	struct pf_engine_preload *p;
	struct pf_json *j;
	char line[5000];

	setup_tree(256u << 20, 100000, 2);
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &p), 0);
	ck_assert_int_eq(write_str(p, "d/../../etc/passwd\n"), -EINVAL);
	ck_assert_int_eq(pf_engine_preload_write(eng, p, "d/f00\0\n", 7),
			 -EINVAL);
	memset(line, 'x', sizeof(line) - 2);
	line[sizeof(line) - 2] = '\n';
	line[sizeof(line) - 1] = '\0';
	ck_assert_int_eq(write_str(p, line), -ENAMETOOLONG);
	/* nothing of those was queued; a missing file fails alone */
	ck_assert_int_eq(write_str(p, "d/none\nd/f01\n"), 13);
	wait_idle(p);
	j = status_of(p);
	ck_assert_int_eq((int)pf_json_num(j, "files_total", 0), 2);
	ck_assert_int_eq((int)pf_json_num(j, "files", 0), 1);
	ck_assert_int_eq((int)pf_json_num(j, "failed", 0), 1);
	ck_assert_ptr_nonnull(strstr(pf_json_str(j, "error", ""),
				     "d/none: No such file or directory"));
	pf_json_free(j);
	pf_engine_preload_close(eng, p);
}
END_TEST

/* 8 files of 8 MiB: more than 3/4 of 32M */
START_TEST(test_too_big)
{
	struct pf_engine_preload *p;
	struct pf_json *j;

	setup_tree(32u << 20, 8u << 20, 8);
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &p), 0);
	ck_assert_int_eq(write_str(p, "d/f00\nd/f01\nd/f02\nd/f03\nd/f04\n"
				      "d/f05\nd/f06\nd/f07\n"), 48);
	wait_idle(p);
	j = status_of(p);
	ck_assert_int_lt((int)pf_json_num(j, "files", 0), 8);
	ck_assert_int_ge((int)pf_json_num(j, "failed", 0), 1);
	ck_assert_ptr_nonnull(strstr(pf_json_str(j, "error", ""),
				     "than the cache tiers can hold"));
	pf_json_free(j);
	pf_engine_preload_close(eng, p);
}
END_TEST

/* Closed while its reads wait: what is in flight lands, nothing more is
 * asked, and the engine stops cleanly. */
START_TEST(test_close_stops)
{
	struct pf_engine_preload *p;
	struct timespec ts = { 0, 2000000 };
	unsigned pending = 0;
	unsigned submits;

	setup_tree(256u << 20, 4u << 20, 4);
	pthread_mutex_lock(&tb.lock);
	tb.autocomplete = 0;
	pthread_mutex_unlock(&tb.lock);
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &p), 0);
	ck_assert_int_eq(write_str(p, "d/f00\nd/f01\nd/f02\nd/f03\n"), 24);
	for (int i = 0; i < 5000 && !(pending = count_pending(-1, NULL)); i++)
		nanosleep(&ts, NULL);
	ck_assert_uint_gt(pending, 0);
	pf_engine_preload_close(eng, p);
	pthread_mutex_lock(&tb.lock);
	submits = tb.submits;
	pthread_mutex_unlock(&tb.lock);
	complete_pending();
	for (int i = 0; i < 50; i++)
		nanosleep(&ts, NULL);
	complete_pending();
	pthread_mutex_lock(&tb.lock);
	ck_assert_uint_eq(tb.submits, submits);
	pthread_mutex_unlock(&tb.lock);
}
END_TEST

START_TEST(test_no_prefetch)
{
	struct pf_engine_preload *p;

	setup_with(256u << 20, 0, 16, 0);
	ck_assert_int_eq(pf_engine_preload_open(eng, NULL, &p), -EOPNOTSUPP);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_warm_then_nothing);
	tcase_add_test(tc, test_bad_lines);
	tcase_add_test(tc, test_too_big);
	tcase_add_test(tc, test_close_stops);
	tcase_add_test(tc, test_no_prefetch);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
