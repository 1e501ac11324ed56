/*
 * check_opener.c - the engine's pool of opener threads (opener.c): jobs
 * are taken declared first, then predicted, then speculative, FIFO within
 * each; the idle function runs when nothing is queued; pf_opener_stop()
 * returns only once the jobs in flight returned, calls every queued job
 * once with cancel set, and refuses new jobs.
 *
 * The pool is driven on a bare engine (only e->lock and e->op are used);
 * "blocker" jobs hold every thread until the test opens their gate.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/engine/ahead/ahead_int.h"

struct tjob {
	struct opener_job job;
	int id;
	bool blocker;
	int ran;		/* times run (cancel false) */
	int cancelled;		/* times run with cancel true */
};

static struct pf_engine *eng;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static unsigned blocked;	/* blockers waiting at the gate */
static unsigned released;	/* blockers let through one at a time */
static int order[16];
static unsigned norder;
static unsigned idle_calls;
static int idle_budget;

static void tjob_fn(struct pf_engine *e, struct opener_job *j, bool cancel)
{
	struct tjob *t = (struct tjob *)j;

	(void)e;
	pthread_mutex_lock(&mu);
	if (cancel) {
		t->cancelled++;
	} else if (t->blocker) {
		t->ran++;
		blocked++;
		pthread_cond_broadcast(&cv);
		while (!gate_open && !released)
			pthread_cond_wait(&cv, &mu);
		if (!gate_open)
			released--;
		blocked--;
	} else {
		t->ran++;
		order[norder++] = t->id;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
}

/* under e->lock, from an idle opener thread */
static bool t_idle(struct pf_engine *e)
{
	(void)e;
	idle_calls++;
	if (idle_budget > 0) {
		idle_budget--;
		return true;
	}
	return false;
}

static void setup(void)
{
	eng = calloc(1, sizeof(*eng));
	ck_assert_ptr_nonnull(eng);
	pthread_mutex_init(&eng->lock, NULL);
	gate_open = false;
	blocked = 0;
	released = 0;
	norder = 0;
	idle_calls = 0;
	idle_budget = 0;
	ck_assert_int_eq(pf_opener_start(eng, t_idle), 0);
}

static void teardown(void)
{
	pthread_mutex_lock(&mu);
	gate_open = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pf_opener_free(eng);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
}

static void submit(struct tjob *t, int id, int prio, bool blocker)
{
	memset(t, 0, sizeof(*t));
	t->job.fn = tjob_fn;
	t->job.prio = prio;
	t->id = id;
	t->blocker = blocker;
	pthread_mutex_lock(&eng->lock);
	ck_assert(pf_opener_submit(eng, &t->job));
	pthread_mutex_unlock(&eng->lock);
}

/* every thread of the pool held by a blocker */
static void block_all(struct tjob *b)
{
	for (int i = 0; i < OPENER_THREADS; i++)
		submit(&b[i], 100 + i, OPEN_SPECULATIVE, true);
	pthread_mutex_lock(&mu);
	while (blocked < OPENER_THREADS)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

START_TEST(test_priorities)
{
	static struct tjob b[OPENER_THREADS], j[5];

	block_all(b);
	submit(&j[0], 1, OPEN_SPECULATIVE, false);
	submit(&j[1], 2, OPEN_SPECULATIVE, false);
	submit(&j[2], 3, OPEN_PREDICTED, false);
	submit(&j[3], 4, OPEN_DECLARED, false);
	submit(&j[4], 5, OPEN_DECLARED, false);
	/* one thread free: it takes them all, in priority order */
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	while (norder < 5)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	ck_assert_int_eq(order[0], 4);
	ck_assert_int_eq(order[1], 5);
	ck_assert_int_eq(order[2], 3);
	ck_assert_int_eq(order[3], 1);
	ck_assert_int_eq(order[4], 2);
}
END_TEST

struct stopper {
	pthread_t t;
	int done;
};

static void *stop_main(void *arg)
{
	struct stopper *s = arg;

	pf_opener_stop(eng);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_stop_waits_and_cancels)
{
	static struct tjob b[OPENER_THREADS], j[3], late;
	const struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };
	struct stopper s = { 0 };

	block_all(b);
	for (int i = 0; i < 3; i++)
		submit(&j[i], i + 1, i, false);
	ck_assert_int_eq(pthread_create(&s.t, NULL, stop_main, &s), 0);
	nanosleep(&pause, NULL);
	/* the blockers are jobs in flight: the stop waits for them */
	ck_assert_int_eq(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE), 0);
	pthread_mutex_lock(&eng->lock);
	ck_assert(!pf_opener_running(eng));
	memset(&late, 0, sizeof(late));
	late.job.fn = tjob_fn;
	late.job.prio = OPEN_DECLARED;
	ck_assert(!pf_opener_submit(eng, &late.job));
	pthread_mutex_unlock(&eng->lock);
	pthread_mutex_lock(&mu);
	gate_open = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(s.t, NULL);
	ck_assert_int_eq(s.done, 1);
	for (int i = 0; i < OPENER_THREADS; i++) {
		ck_assert_int_eq(b[i].ran, 1);
		ck_assert_int_eq(b[i].cancelled, 0);
	}
	/* never started: each cancelled once, none run */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(j[i].ran, 0);
		ck_assert_int_eq(j[i].cancelled, 1);
	}
	ck_assert_int_eq(late.ran + late.cancelled, 0);
	ck_assert_uint_eq(norder, 0);
}
END_TEST

START_TEST(test_idle_runs_when_nothing_queued)
{
	const struct timespec ms = { .tv_nsec = 1000 * 1000 };
	int left = 20;

	pthread_mutex_lock(&eng->lock);
	idle_calls = 0;
	idle_budget = 20;
	pf_opener_wake(eng, false);
	pthread_mutex_unlock(&eng->lock);
	for (int i = 0; i < 5000 && left > 0; i++) {
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&eng->lock);
		left = idle_budget;
		pthread_mutex_unlock(&eng->lock);
	}
	pthread_mutex_lock(&eng->lock);
	ck_assert_int_eq(idle_budget, 0);
	/* 20 steps done, then one that found nothing before waiting */
	ck_assert_uint_ge(idle_calls, 21);
	pthread_mutex_unlock(&eng->lock);
}
END_TEST

static Suite *opener_suite(void)
{
	Suite *s = suite_create("opener");
	TCase *tc = tcase_create("pool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_priorities);
	tcase_add_test(tc, test_stop_waits_and_cancels);
	tcase_add_test(tc, test_idle_runs_when_nothing_queued);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(opener_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
