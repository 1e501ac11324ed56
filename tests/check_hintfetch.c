/*
 * check_hintfetch.c - the engine follows declared plans (hintfetch.c):
 * a plan's files are fetched ahead, opened by path when nobody has them
 * open yet, and its records of an open file too; the reader's open finds
 * the file the plan opened and reads from memory; bad writes fail whole;
 * pf_engine_quiesce() waits for a plan's open in flight on an opener
 * thread and lets it go.  The in-memory backend of engine_harness.h
 * completes reads at once.
 */
#include "engine_harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

static struct pf_backend_ops h_ops;

static int h_getattr(struct pf_backend *be, const char *path,
		     struct stat *st)
{
	const struct tfile *f = tb_find(path);

	(void)be;
	if (!f)
		return -ENOENT;
	tfile_stat(f, st);
	return 0;
}

/* opens may be held at a gate (hold_opens) to stand for a slow HEAD */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int hold_opens;
static unsigned opens_held;	/* waiting at the gate now */
static unsigned opens_done, closes;

static int h_open(struct pf_backend *be, const char *path,
		  struct pf_bfile **out, struct stat *st)
{
	int ret;

	pthread_mutex_lock(&gate_mu);
	opens_held++;
	pthread_cond_broadcast(&gate_cv);
	while (hold_opens)
		pthread_cond_wait(&gate_cv, &gate_mu);
	opens_held--;
	pthread_mutex_unlock(&gate_mu);
	ret = t_open(be, path, out, st);
	pthread_mutex_lock(&gate_mu);
	opens_done += ret == 0;
	pthread_mutex_unlock(&gate_mu);
	return ret;
}

static void h_close(struct pf_backend *be, struct pf_bfile *f)
{
	pthread_mutex_lock(&gate_mu);
	closes++;
	pthread_mutex_unlock(&gate_mu);
	t_close(be, f);
}

static void hsetup(void)
{
	setup_with(64u << 20, 1, 16, 0);
	h_ops = t_ops;
	h_ops.getattr = h_getattr;
	h_ops.open = h_open;
	h_ops.close = h_close;
	tb.be.ops = &h_ops;
	tb.autocomplete = 1;
}

/* Waits (up to 10 s) for the stats file to hold @what. */
static bool stats_have(const char *what)
{
	const struct timespec ms = { .tv_nsec = 1000000 };

	for (int i = 0; i < 10000; i++) {
		char *s = pf_engine_stats_json(eng, "test");
		bool found = s && strstr(s, what);

		free(s);
		if (found)
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

/* Waits (up to 10 s) until @bytes were fetched: the fetches run on the
 * hint thread (the backend completes them inside its submit). */
static bool fetched(uint64_t bytes)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	struct pf_engine_totals t;

	for (int i = 0; i < 10000; i++) {
		pf_engine_totals(eng, &t);
		if (t.bytes_fetched >= bytes && t.inflight == 0)
			return true;
		nanosleep(&ms, NULL);
	}
	return false;
}

static int hwrite(struct pf_engine_hint *h, const char *text, uint64_t off)
{
	return pf_engine_hint_write(eng, h, text, strlen(text), off);
}

START_TEST(test_whole_file_opened_ahead)
{
	struct pf_engine_hint *h;
	struct pf_engine_totals t;
	struct pf_efile *f;
	struct stat st;
	unsigned submits;

	ck_assert_int_eq(pf_engine_hint_open(eng, &h), 0);
	ck_assert_int_eq(hwrite(h, "none\nsmall\n../a\n", 0), 16);
	ck_assert(stats_have("\"missing\": 2"));
	ck_assert(stats_have("\"fetched\": 1,"));
	ck_assert(fetched(100000));
	submits = tb.submits;
	/* the reader's open gets the file the plan opened, with its bytes */
	f = pf_efile_new(eng, "small", 9);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(pf_efile_open(f, &st), 0);
	ck_assert_int_eq(st.st_size, 100000);
	read_file_sync(f, &tb.files[1], 0, 65536);
	read_file_sync(f, &tb.files[1], 65536, 100000 - 65536);
	ck_assert_uint_eq(tb.submits, submits);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.hits, 2);
	ck_assert_uint_eq(t.bytes_prefetched, 100000);
	ck_assert(stats_have("\"read_planned\": 2,"));
	ck_assert(stats_have("\"state\": \"finished\""));
	pf_efile_close(f);
	pf_efile_put(f);
	pf_engine_hint_close(eng, h);
	ck_assert(stats_have("\"plans\": [\n  ]"));
	ck_assert(stats_have("\"plans_ended\": {\"plans\": 1, "));
}
END_TEST

START_TEST(test_records_of_an_open_file)
{
	struct pf_engine_hint *h;
	struct pf_engine_totals t;
	unsigned submits;

	ck_assert_int_eq(pf_engine_hint_open(eng, &h), 0);
	ck_assert_int_eq(hwrite(h, "a 1048576 65536\na 0 65536\n", 0), 26);
	ck_assert(stats_have("\"fetched\": 2,"));
	ck_assert(fetched(2 * 65536));
	submits = tb.submits;
	read_sync(rq, 1048576, 65536);
	assert_bytes(rq, 1048576, 65536);
	read_sync(rq, 0, 65536);
	assert_bytes(rq, 0, 65536);
	ck_assert_uint_eq(tb.submits, submits);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.hits, 2);
	ck_assert_uint_eq(t.bytes_prefetched, 2 * 65536);
	ck_assert(stats_have("\"wasted_bytes\": 0,"));
	pf_engine_hint_close(eng, h);
}
END_TEST

START_TEST(test_bad_write_fails_whole)
{
	struct pf_engine_hint *h, *h2;

	ck_assert_int_eq(pf_engine_hint_open(eng, &h), 0);
	ck_assert_int_eq(pf_engine_hint_open(eng, &h2), 0);
	ck_assert_int_eq(hwrite(h, "small\nsmall 0 0\n", 0), -EINVAL);
	ck_assert(stats_have("line 2: zero length"));
	/* refused until a new plan at offset 0 */
	ck_assert_int_eq(hwrite(h, "small\n", 16), -EINVAL);
	ck_assert_int_eq(hwrite(h2, "b 0 4096\n", 0), 9);
	ck_assert_int_eq(hwrite(h, "small\n", 0), 6);
	ck_assert(stats_have("\"fetched\": 1,"));
	pf_engine_hint_close(eng, h);
	pf_engine_hint_close(eng, h2);
	ck_assert(stats_have("\"plans\": [\n  ]"));
}
END_TEST

struct quiescer {
	pthread_t t;
	int done;
};

static void *quiesce_main(void *arg)
{
	struct quiescer *q = arg;

	pf_engine_quiesce(eng);
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_quiesce_waits_for_open)
{
	const struct timespec pause = { .tv_nsec = 100 * 1000 * 1000 };
	struct pf_engine_hint *h;
	struct quiescer q = { 0 };
	unsigned opens0, closes0;

	pthread_mutex_lock(&gate_mu);
	hold_opens = 1;
	opens0 = opens_done;
	closes0 = closes;
	pthread_mutex_unlock(&gate_mu);
	ck_assert_int_eq(pf_engine_hint_open(eng, &h), 0);
	ck_assert_int_eq(hwrite(h, "small\n", 0), 6);
	/* the plan's open of "small" is at the gate, on an opener thread */
	pthread_mutex_lock(&gate_mu);
	while (opens_held == 0)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	ck_assert_int_eq(pthread_create(&q.t, NULL, quiesce_main, &q), 0);
	nanosleep(&pause, NULL);
	ck_assert_int_eq(__atomic_load_n(&q.done, __ATOMIC_ACQUIRE), 0);
	pthread_mutex_lock(&gate_mu);
	hold_opens = 0;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	pthread_join(q.t, NULL);
	/* the open returned before the quiesce did, and was let go */
	pthread_mutex_lock(&gate_mu);
	ck_assert_uint_eq(opens_done, opens0 + 1);
	ck_assert_uint_eq(closes, closes0 + 1);
	pthread_mutex_unlock(&gate_mu);
	pf_engine_hint_close(eng, h);
}
END_TEST

static Suite *hintfetch_suite(void)
{
	Suite *s = suite_create("hintfetch");
	TCase *tc = tcase_create("plans");

	tcase_add_checked_fixture(tc, hsetup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_whole_file_opened_ahead);
	tcase_add_test(tc, test_records_of_an_open_file);
	tcase_add_test(tc, test_bad_write_fails_whole);
	tcase_add_test(tc, test_quiesce_waits_for_open);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hintfetch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
