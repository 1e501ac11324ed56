/*
 * check_hintfetch.c - the engine follows declared plans (plans.c):
 * a plan's files are fetched ahead, opened by path when nobody has them
 * open yet, and its records of an open file too; the reader's open finds
 * the file the plan opened and reads from memory; bad writes fail whole;
 * pf_engine_quiesce() waits for a plan's open in flight on an opener
 * thread and lets it go.  A plan follows only what its writer may read
 * (plans_access.c: owners, groups, modes, directories, root), another
 * user's plans are capped (handles and entries) while the owner can
 * always open one, and the stats show another user only its own plans
 * and no path.  The in-memory backend of engine_harness.h completes reads
 * at once.
 */
#include "engine_harness.h"
#include "pf_hint.h"

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

static struct pf_backend_ops h_ops;

/* Owners and modes the tests give; the rest is root's, files 0444 and
 * directories 0755. */
static const struct {
	const char *path;
	uint32_t uid, gid, mode;
} owns[] = {
	{ "a", 0, 0, 0600 },		/* root's own */
	{ "b", 1000, 1000, 0640 },	/* a user's, its group may read */
	{ "hid", 0, 0, 0700 },		/* only root may search it */
};

/* A directory: the root, or what a file's path goes through. */
static bool is_dir(const char *path)
{
	size_t n = strlen(path);

	if (!n)
		return true;
	for (unsigned i = 0; i < tb.nfiles; i++)
		if (strncmp(tb.files[i].path, path, n) == 0 &&
		    tb.files[i].path[n] == '/')
			return true;
	return false;
}

static int h_getattr(struct pf_backend *be, const char *path,
		     struct stat *st)
{
	const struct tfile *f = tb_find(path);

	(void)be;
	if (f) {
		tfile_stat(f, st);
	} else if (is_dir(path)) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFDIR | 0755;
	} else {
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(owns) / sizeof(owns[0]); i++) {
		if (strcmp(owns[i].path, path) == 0) {
			st->st_uid = owns[i].uid;
			st->st_gid = owns[i].gid;
			st->st_mode = (st->st_mode & S_IFMT) | owns[i].mode;
		}
	}
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

	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h), 0);
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

	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h), 0);
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

	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h), 0);
	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h2), 0);
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
	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h), 0);
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

/* Whether the stats as @c sees them hold @what (@want: print them when
 * that is not what the test wants). */
static bool in_view(const struct pf_engine_cred *c, const char *what,
		    bool want)
{
	char *s = pf_engine_stats_json_for(eng, "test", c);
	bool found = s && strstr(s, what);

	if (found != want)
		fprintf(stderr, "%s the stats: %s\n%s\n",
			found ? "in" : "not in", what, s);
	free(s);
	return found;
}

static bool seen_by(const struct pf_engine_cred *c, const char *what)
{
	return in_view(c, what, true);
}

static bool unseen_by(const struct pf_engine_cred *c, const char *what)
{
	return !in_view(c, what, false);
}

/* Writes @text as one plan of @c and closes it; what the plan's stats
 * said of its paths is checked by the caller through @out (its own view,
 * before the close). */
static void plan_as(const struct pf_engine_cred *c, const char *text,
		    const char *want)
{
	struct pf_engine_hint *h;

	ck_assert_int_eq(pf_engine_hint_open(eng, c, &h), 0);
	ck_assert_int_eq(hwrite(h, text, 0), (int)strlen(text));
	ck_assert(seen_by(c, want));
	pf_engine_hint_close(eng, h);
}

START_TEST(test_plan_reads_only_what_its_writer_may)
{
	struct pf_engine_cred nob = { .uid = 65534, .gid = 65534 };
	struct pf_engine_cred root = { .uid = 0, .owner = true };
	struct pf_engine_cred user = { .uid = 1000, .gid = 1000 };
	struct pf_engine_cred grp = { .uid = 2000, .gid = 3000, .ngroups = 1,
				      .groups = { 1000 } };
	struct pf_engine_cred other = { .uid = 2000, .gid = 3000 };
	struct pf_engine_totals t;
	struct pf_engine_hint *h;

	tb_add_file("hid/x", 50000, NULL);
	/* root's 0600 file, a file below a 0700 directory, a file that
	 * does not exist: all three missing alike; the readable one is
	 * fetched, and nothing else */
	ck_assert_int_eq(pf_engine_hint_open(eng, &nob, &h), 0);
	ck_assert_int_eq(hwrite(h, "a\nsmall\nhid/x\nnone\n", 0), 19);
	ck_assert(seen_by(&nob, "\"declared\": 4, \"missing\": 3,"));
	ck_assert(fetched(100000));
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_fetched, 100000);
	pf_engine_hint_close(eng, h);
	/* root may read both */
	plan_as(&root, "a 0 4096\nhid/x\nnone\n",
		"\"declared\": 3, \"missing\": 1,");
	/* a user's 0640 file: its owner, its group, not another */
	plan_as(&user, "b 0 4096\n", "\"declared\": 1, \"missing\": 0,");
	plan_as(&grp, "b 0 4096\n", "\"declared\": 1, \"missing\": 0,");
	plan_as(&other, "b 0 4096\n", "\"declared\": 1, \"missing\": 1,");
	/* the daemon's own (NULL): unchecked */
	plan_as(NULL, "a 0 4096\nhid/x\n", "\"declared\": 2, \"missing\": 0,");
}
END_TEST

START_TEST(test_plan_caps)
{
	static struct pf_engine_hint *hs[PF_HINTSET_MAX];
	struct pf_engine_cred c = { .gid = 100 };
	struct pf_engine_cred owner = { .uid = 0, .owner = true };
	struct pf_engine_hint *h;
	unsigned n = 0;
	size_t len = 120000 * 6;
	char *text = malloc(len + 1);

	/* one user: PF_PLANS_PER_USER plans */
	c.uid = 65534;
	for (unsigned i = 0; i < PF_PLANS_PER_USER; i++)
		ck_assert_int_eq(pf_engine_hint_open(eng, &c, &hs[n++]), 0);
	ck_assert_int_eq(pf_engine_hint_open(eng, &c, &h), -EMFILE);
	/* other users together: all but the owner's reserve */
	for (c.uid = 1; n < PF_HINTSET_MAX - PF_PLANS_OWNER_RESERVE; c.uid++)
		for (unsigned i = 0; i < PF_PLANS_PER_USER; i++)
			ck_assert_int_eq(pf_engine_hint_open(eng, &c, &hs[n++]),
					 0);
	ck_assert_int_eq(pf_engine_hint_open(eng, &c, &h), -EMFILE);
	/* the owner can still open its plans */
	ck_assert_int_eq(pf_engine_hint_open(eng, &owner, &h), 0);
	pf_engine_hint_close(eng, h);
	ck_assert_int_eq(pf_engine_hint_open(eng, NULL, &h), 0);
	pf_engine_hint_close(eng, h);
	while (n)
		pf_engine_hint_close(eng, hs[--n]);

	/* entries: another user gets a quarter of the mount's (max_memory
	 * 64M / 4 / 36 bytes = 466033; 116508 each); the owner more */
	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < len; i += 6)
		memcpy(text + i, "small\n", 6);
	text[len] = '\0';
	c.uid = 65534;
	ck_assert_int_eq(pf_engine_hint_open(eng, &c, &h), 0);
	ck_assert_int_eq(hwrite(h, text, 0), -ENOSPC);
	ck_assert(seen_by(&c, "more than their share"));
	/* 100000 entries fit */
	text[100000 * 6] = '\0';
	ck_assert_int_eq(hwrite(h, text, 0), 100000 * 6);
	pf_engine_hint_close(eng, h);
	text[100000 * 6] = 's';
	ck_assert_int_eq(pf_engine_hint_open(eng, &owner, &h), 0);
	ck_assert_int_eq(hwrite(h, text, 0), (int)len);
	pf_engine_hint_close(eng, h);
	free(text);
}
END_TEST

START_TEST(test_stats_as_each_user_sees_them)
{
	struct pf_engine_cred nob = { .uid = 65534, .gid = 65534 };
	struct pf_engine_cred nob2 = { .uid = 65533, .gid = 65534 };
	struct pf_engine_cred owner = { .uid = 0, .owner = true };
	struct pf_engine_hint *mine, *theirs;

	/* a stream of "a", which names the file */
	read_sync(rq, 0, 65536);
	ck_assert_int_eq(pf_engine_hint_open(eng, &nob, &mine), 0);
	ck_assert_int_eq(hwrite(mine, "small\nnone\n", 0), 11);
	ck_assert_int_eq(pf_engine_hint_open(eng, &owner, &theirs), 0);
	ck_assert_int_eq(hwrite(theirs, "b 0 4096\n", 0), 9);
	/* the owner sees every plan and the stream */
	ck_assert(seen_by(&owner, "\"declared\": 2, \"missing\": 1,"));
	ck_assert(seen_by(&owner, "\"declared\": 1, \"missing\": 0,"));
	ck_assert(seen_by(&owner, "{\"file\": \"a\""));
	ck_assert(seen_by(NULL, "{\"file\": \"a\""));
	/* nobody its own plan and the totals, no stream, no other plan */
	ck_assert(seen_by(&nob, "\"declared\": 2, \"missing\": 1,"));
	ck_assert(seen_by(&nob, "\"totals\": {\"reads\": "));
	ck_assert(unseen_by(&nob, "\"declared\": 1, \"missing\": 0,"));
	ck_assert(unseen_by(&nob, "\"file\":"));
	/* another user: not nobody's plan either */
	ck_assert(unseen_by(&nob2, "\"declared\": 2, \"missing\": 1,"));
	pf_engine_hint_close(eng, mine);
	pf_engine_hint_close(eng, theirs);
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
	tcase_add_test(tc, test_plan_reads_only_what_its_writer_may);
	tcase_add_test(tc, test_plan_caps);
	tcase_add_test(tc, test_stats_as_each_user_sees_them);
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
