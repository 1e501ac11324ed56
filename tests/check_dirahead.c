/*
 * check_dirahead.c - read-ahead across files and the background fill
 * (src/dirahead.c, src/nextfile.c): readers opening the files of a
 * directory in name order (one, N on N directories, N ranks striding one),
 * shuffled readers (no read-ahead across files, a fill when the tree fits,
 * none when it does not, a stop when the pattern changes) and the
 * fill of one file: only for a reader in random order for sure.
 *
 * The backend (engine_harness.h's) holds a tree of NDIRS directories of
 * NFILES small files whose bytes are a function of (file, offset); its
 * reads complete inside submit.  The engine's clock is the test's: the
 * readers' opens are XGAP_MS apart and the backend's opens take none of it
 * (so 4 files are kept ahead); pf_dirahead_ahead() has its own test.
 */
#include "engine_harness.h"

#define NDIRS 4
#define NFILES 64
#define XGAP_MS 10

static uint64_t big_size;	/* when set: every file is this big */

/* The tree: file f of directory d is "d<d>/f<f>", tb.files[d * NFILES +
 * f], its bytes tfile_byte()'s. */
static void tree_up(void)
{
	char path[32];

	tb_reset(&t_ops_dir);
	for (unsigned d = 0; d < NDIRS; d++) {
		for (unsigned f = 0; f < NFILES; f++) {
			unsigned id = d * NFILES + f;

			snprintf(path, sizeof(path), "d%u/f%03u", d, f);
			tb_add_file(path,
				    big_size ? big_size : 100000 + 3000 * (id % 7),
				    NULL);
		}
	}
	tb.autocomplete = 1;
}

static void engine_up(uint64_t max_memory, int fill)
{
	struct pf_engine_cfg cfg;

	harness_cfg(&cfg, max_memory, 16);
	cfg.fill = fill;
	engine_start(&cfg);
}

static void setup_tree(void)
{
	fake_clock = 1;
	tree_up();
	engine_up(256u << 20, 1);
}

/* ---- readers ----------------------------------------------------------- */

/*
 * A reader's open, whole read (checked byte for byte) and close of file
 * @f of directory @d, as the front end makes them (the efile stays, as an
 * inode does).  Returns whether every READ was a hit.
 */
static bool read_whole(unsigned d, unsigned f)
{
	const struct tfile *tf = &tb.files[d * NFILES + f];
	struct pf_engine_totals t0;
	struct pf_engine_totals t;
	struct pf_efile *e;

	advance_ms(XGAP_MS);
	e = tfile_open(tf->id);
	pf_engine_totals(eng, &t0);
	read_wait(e, -1, 0, tf->size, rq);
	assert_file_bytes(rq, tf, 0, tf->size);
	pf_engine_totals(eng, &t);
	pf_efile_close(e);
	return t.misses == t0.misses && t.waits == t0.waits;
}

/* Waits (a bounded while) for the next-file threads to go quiet. */
static void settle(void)
{
	struct pf_engine_totals t;
	uint64_t last = ~0ull;

	for (int i = 0; i < 300; i++) {
		usleep(10000);
		pf_engine_totals(eng, &t);
		if (t.inflight == 0 && t.next_files == last && i > 5)
			return;
		last = t.next_files;
	}
}

/* The number after "@name": in the stats. */
static uint64_t stats_num(const char *name)
{
	char *js = pf_engine_stats_json(eng, "test");
	char pat[64];
	const char *p;
	uint64_t v;

	ck_assert_ptr_nonnull(js);
	snprintf(pat, sizeof(pat), "\"%s\": ", name);
	p = strstr(js, pat);
	ck_assert_ptr_nonnull(p);
	v = strtoull(p + strlen(pat), NULL, 10);
	free(js);
	return v;
}

/* ---- tests ------------------------------------------------------------- */

START_TEST(test_ahead_rule)
{
	/* 50 ms opens, a reader opening a file every 10 ms: 2 x 10 + 2 */
	ck_assert_uint_eq(pf_dirahead_ahead(50000000, 10000000, 1, 32), 22);
	/* 4 ranks striding, the directory sees an open each 10 ms: each
	 * rank opens one each 40 ms */
	ck_assert_uint_eq(pf_dirahead_ahead(50000000, 10000000, 4, 32), 8);
	/* bounded; nothing learned yet: 4 */
	ck_assert_uint_eq(pf_dirahead_ahead(50000000, 1000000, 1, 32), 32);
	ck_assert_uint_eq(pf_dirahead_ahead(0, 10000000, 1, 32), 4);
	/* a slow reader still keeps 2 */
	ck_assert_uint_eq(pf_dirahead_ahead(1000, 1000000000, 1, 32), 4);
}
END_TEST

START_TEST(test_in_order_one_dir)
{
	struct pf_engine_totals t;
	unsigned hits = 0;

	for (unsigned f = 0; f < 3; f++)
		read_whole(0, f);
	settle();
	pf_engine_totals(eng, &t);
	/* learned at the third open: the next files are opened ahead */
	ck_assert_uint_ge(t.next_files, 4);
	for (unsigned f = 3; f < 40; f++) {
		if (read_whole(0, f))
			hits++;
		settle();
	}
	pf_engine_totals(eng, &t);
	/* the files read ahead went to their reader: no second open */
	ck_assert_uint_ge(t.next_taken, 30);
	ck_assert_uint_ge(hits, 35);
	ck_assert_uint_le(tb.opens, 40 + 32);
	ck_assert(stats_has("\"dirs_in_order\": 1"));
	ck_assert(stats_has("\"state\": \"off\""));
}
END_TEST

/* A directory's first open: the small files after it are read ahead at
 * once (a guess: 4 MiB of them, 32 files of about 100 KB at most), so the
 * reader's second and later files do not wait. */
START_TEST(test_first_open_guesses)
{
	struct pf_engine_totals t;
	unsigned hits = 0;

	read_whole(2, 0);
	/* the listing comes (a next-file thread), then the guess's opens */
	for (int i = 0; i < 500 && stats_num("asked") < 32; i++)
		usleep(10000);
	settle();
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(stats_num("asked"), 32);
	ck_assert_uint_ge(t.next_files, 32);
	for (unsigned f = 1; f <= 32; f++)
		if (read_whole(2, f))
			hits++;
	ck_assert_uint_eq(hits, 32);
}
END_TEST

/*
 * A reader's guess and its follows never ask for a file it already read
 * in this pass, even once that file is gone from memory: a shuffled reader
 * (bench/tierfile.sh) read it and will not again; asking for it fetched it
 * a second time (one more look-up in the shared tier, or a store read).
 */
START_TEST(test_no_ask_of_a_file_read)
{
	unsigned id = 0 * NFILES + 5;
	uint64_t guessed;

	read_whole(0, 5);
	/* the listing, then the first open's guess: f006 and on */
	for (int i = 0; i < 500 && stats_num("asked") < 8; i++)
		usleep(10000);
	settle();
	guessed = stats_num("asked");
	ck_assert_uint_ge(guessed, 8);
	/* f005 let go of: no efile by its path, no block */
	pf_efile_retire(efiles[id]);
	/* f002, f003, f004 follow: f005 and on are wanted ahead; all but
	 * f005 were asked already, f005 was read */
	read_whole(0, 2);
	read_whole(0, 3);
	read_whole(0, 4);
	settle();
	ck_assert_uint_eq(stats_num("asked"), guessed);
}
END_TEST

START_TEST(test_in_order_n_dirs)
{
	struct pf_engine_totals t;
	unsigned hits = 0;

	for (unsigned f = 0; f < 20; f++) {
		for (unsigned d = 0; d < NDIRS; d++)
			if (read_whole(d, f) && f >= 4)
				hits++;
		settle();
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(hits, 16 * NDIRS - 4);
	ck_assert(stats_has("\"dirs_in_order\": 4"));
	ck_assert(stats_has("\"state\": \"off\""));
}
END_TEST

START_TEST(test_n_ranks_striding)
{
	/* 4 ranks take files r, r+4, r+8 ... of one directory, not quite in
	 * step: rank order changes every round */
	static const unsigned order[4][4] = {
		{ 0, 1, 2, 3 }, { 1, 0, 3, 2 }, { 2, 3, 1, 0 }, { 3, 2, 0, 1 },
	};
	unsigned hits = 0;

	for (unsigned round = 0; round < 14; round++) {
		for (unsigned k = 0; k < 4; k++) {
			unsigned f = round * 4 + order[round % 4][k];

			if (read_whole(0, f) && round >= 2)
				hits++;
		}
		settle();
	}
	ck_assert_uint_ge(hits, 12 * 4 - 4);
	ck_assert(stats_has("\"state\": \"off\""));
}
END_TEST

/* Opens file @f of directory 0 and reads its first 64 KiB (checked); then
 * closes it unless @keep. */
static void read_head(unsigned f, bool keep)
{
	struct pf_efile *e;

	advance_ms(1);
	e = tfile_open(f);
	read_wait(e, -1, 0, 64 << 10, rq);
	assert_file_bytes(rq, &tb.files[f], 0, 64 << 10);
	if (!keep)
		pf_efile_close(e);
}

/*
 * N readers, each on its own big file, opening file 0 ... 3 of a directory
 * in the same few milliseconds: not one reader going through the
 * directory, nothing is opened ahead.  One reader that reads and closes
 * each big file before the next is: the files ahead get their first
 * windows, not their whole bytes.
 */
START_TEST(test_big_files_open_at_once)
{
	struct pf_engine_totals t0;
	struct pf_engine_totals t;
	uint64_t small = 4u << 20;	/* 4 fetches of 1 MiB > 2 min_window */

	for (unsigned f = 0; f < 4; f++)
		read_head(f, true);
	settle();
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.next_files, 0);
	for (unsigned f = 0; f < 4; f++)
		pf_efile_close(efiles[f]);

	pf_engine_totals(eng, &t0);
	for (unsigned f = 10; f < 14; f++) {
		read_head(f, false);
		settle();
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.next_files, 1);
	/* the readers' own early windows and the files ahead's first ones */
	ck_assert_uint_le(t.bytes_fetched - t0.bytes_fetched,
			  (t.next_files + 4) * small);
}
END_TEST

static void setup_big(void)
{
	big_size = 32u << 20;
	setup_tree();
}

static void teardown_big(void)
{
	teardown();
	big_size = 0;
}

/* File k of a shuffle that never follows (37 is prime to 64). */
static unsigned shuffled(unsigned k)
{
	return (k * 37 + 11) % NFILES;
}

START_TEST(test_random_fill_fits)
{
	struct pf_engine_totals t;
	unsigned hits = 0;
	unsigned before;
	uint64_t asked;

	for (unsigned k = 0; k < 2; k++)
		read_whole(k % 2, shuffled(k / 2));
	/* a directory's first open guesses a reader in name order (32 small
	 * files each), if its listing came before a second open there */
	settle();
	asked = stats_num("asked");
	ck_assert_uint_le(asked, 64);
	for (unsigned k = 2; k < 20; k++)
		read_whole(k % 2, shuffled(k / 2));
	pf_engine_totals(eng, &t);
	/* then no read-ahead across files for a random reader */
	ck_assert_uint_eq(stats_num("asked"), asked);
	/* the whole tree (every directory: the opens' common root) is filled
	 * in the background */
	ck_assert(stats_wait("\"state\": \"done\""));
	ck_assert(stats_has("\"root\": \"\""));
	/*
	 * Opens the first 20 reads asked of the opener threads may still be
	 * on their way on a loaded machine: wait until none has come for
	 * 100 ms, then no read below may cause one.
	 */
	settle();
	before = __atomic_load_n(&tb.opens, __ATOMIC_RELAXED);
	for (int i = 0; i < 300; i++) {
		usleep(100000);
		if (__atomic_load_n(&tb.opens, __ATOMIC_RELAXED) ==
		    before)
			break;
		before = __atomic_load_n(&tb.opens, __ATOMIC_RELAXED);
	}
	/* every file is in memory and held open: no round trip, no wait */
	for (unsigned k = 20; k < 84; k++)
		if (read_whole(k % NDIRS, shuffled(k / NDIRS)))
			hits++;
	ck_assert_uint_eq(hits, 64);
	ck_assert_uint_eq(tb.opens, before);
	ck_assert(stats_has("\"held\": 256"));
}
END_TEST

/* The engine anew with @max_memory and @fill, then a reader of 24 files
 * of 2 directories in shuffled order. */
static void restart_shuffled(uint64_t max_memory, int fill)
{
	engine_stop();
	engine_up(max_memory, fill);
	for (unsigned k = 0; k < 24; k++)
		read_whole(k % 2, shuffled(k / 2));
}

START_TEST(test_random_fill_too_big)
{
	/* the tree is 4 x 64 files of ~110 KiB: 27 MiB, more than 3/4 of
	 * 16 MiB */
	restart_shuffled(16u << 20, 1);
	ck_assert(stats_wait("\"state\": \"too_big\""));
	ck_assert(stats_has("\"held\": 0"));
}
END_TEST

START_TEST(test_random_fill_off)
{
	restart_shuffled(256u << 20, 0);
	settle();
	ck_assert(stats_has("\"state\": \"off\""));
}
END_TEST

START_TEST(test_fill_stops_when_in_order)
{
	/* a small tree (1 directory) so the fill is still running when the
	 * readers change: the fill takes its files in name order, the
	 * readers go in order from the end */
	unsigned k;

	/* (opens made before the directory's listing came count only as
	 * far as they are remembered: go on until the fill starts) */
	for (k = 0; k < NFILES && stats_quiet("\"state\": \"off\"", true);
	     k++)
		read_whole(0, shuffled(k));
	for (int i = 0; i < 2000 && stats_quiet("\"state\": \"off\"", true);
	     i++)
		usleep(20000);
	ck_assert(!stats_quiet("\"state\": \"off\"", true));
	for (unsigned f = 40; f < 64; f++)
		read_whole(1, f);
	for (int i = 0; i < 2000 &&
			!stats_quiet("\"state\": \"stopped\"", true) &&
			!stats_quiet("\"state\": \"done\"", true); i++)
		usleep(20000);
	/* it may have finished first on a fast machine: then it is done */
	ck_assert(stats_quiet("\"state\": \"stopped\"", true) ||
		  stats_has("\"state\": \"done\""));
	if (stats_quiet("\"state\": \"stopped\"", true))
		ck_assert(stats_has("\"held\": 0"));
}
END_TEST

/* ---- the fill of one file: a random reader for sure ------------------ */

static struct pf_tracker *tracker_up(void)
{
	struct pf_pattern_cfg pc;
	struct pf_tracker *t;

	pf_pattern_cfg_default(&pc);
	t = pf_tracker_new(&pc);
	ck_assert_ptr_nonnull(t);
	return t;
}

/* does any stream of @t start the fill of its file? */
static bool any_sure(const struct pf_tracker *t, bool *random_seen)
{
	bool sure = false;

	for (unsigned i = 0; i < pf_tracker_count(t); i++) {
		const struct pf_stream *st = pf_tracker_stream(t, i);

		if (st->pattern == PF_PAT_RANDOM)
			*random_seen = true;
		if (pf_fill_random_sure(t, st))
			sure = true;
	}
	return sure;
}

START_TEST(test_fill_not_for_strided_in_flight)
{
	/* rank 1 of 4 with 1 MiB records: its first 4 records in flight at
	 * once are RANDOM (the scatter), then one record at a time make it
	 * STRIDED.  None of it must start the fill: tests/mount_pattern.sh's
	 * "strided" reader over slowfs had the whole 128 MiB file fetched
	 * for 32 MiB read when it did */
	struct pf_tracker *t = tracker_up();
	uint64_t now = 1000000000ull;
	unsigned ids[4];
	bool random_seen = false;
	bool strided = false;

	for (unsigned r = 0; r < 4; r++) {
		uint64_t off = (1 + 4 * r) * (1ull << 20);

		ids[r] = pf_tracker_observe(t, off, 1u << 20, now)->id;
		ck_assert(!any_sure(t, &random_seen));
	}
	/* the case is real: the batch in flight looked RANDOM */
	ck_assert(random_seen);
	now += 2000000;
	for (unsigned r = 0; r < 4; r++)
		pf_tracker_done(t, ids[r], now);
	for (unsigned r = 4; r < 128; r++) {
		uint64_t off = (1 + 4 * r) * (1ull << 20);
		const struct pf_stream *st;

		st = pf_tracker_observe(t, off, 1u << 20, now);
		ck_assert(!any_sure(t, &random_seen));
		now += 2000000;
		pf_tracker_done(t, st->id, now);
		ck_assert(!any_sure(t, &random_seen));
		strided = strided || st->pattern == PF_PAT_STRIDED;
		now += r % 4 == 3 ? 20000000 : 100000;
	}
	ck_assert(strided);
	pf_tracker_free(t);
}
END_TEST

START_TEST(test_fill_for_random_reader)
{
	/* random preads of 4-64 KiB at 4 KiB-aligned offsets of 128 MiB:
	 * not at first, surely after a few dozen */
	struct pf_tracker *t = tracker_up();
	uint64_t now = 1000000000ull;
	uint64_t x = 88172645463325252ull;
	bool random_seen = false;
	bool sure = false;

	for (unsigned k = 0; k < 100 && !sure; k++) {
		const struct pf_stream *st;
		uint64_t off, len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		off = (x % 32768) * 4096;
		len = 4096 * (1 + (x >> 20) % 16);
		st = pf_tracker_observe(t, off, len, now);
		if (k < PF_FILL_RANDOM_READS - 1)
			ck_assert(!pf_fill_random_sure(t, st));
		now += 2000000;
		pf_tracker_done(t, st->id, now);
		sure = any_sure(t, &random_seen);
	}
	ck_assert(sure);
	pf_tracker_free(t);
}
END_TEST

static Suite *dirahead_suite(void)
{
	Suite *s = suite_create("dirahead");
	TCase *tc;

	tc = tcase_create("learner");
	tcase_add_checked_fixture(tc, setup_tree, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ahead_rule);
	tcase_add_test(tc, test_in_order_one_dir);
	tcase_add_test(tc, test_first_open_guesses);
	tcase_add_test(tc, test_no_ask_of_a_file_read);
	tcase_add_test(tc, test_in_order_n_dirs);
	tcase_add_test(tc, test_n_ranks_striding);
	suite_add_tcase(s, tc);
	tc = tcase_create("big");
	tcase_add_checked_fixture(tc, setup_big, teardown_big);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_big_files_open_at_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("fill");
	tcase_add_checked_fixture(tc, setup_tree, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_fill_fits);
	tcase_add_test(tc, test_random_fill_too_big);
	tcase_add_test(tc, test_random_fill_off);
	tcase_add_test(tc, test_fill_stops_when_in_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("fill_one_file");
	tcase_add_test(tc, test_fill_not_for_strided_in_flight);
	tcase_add_test(tc, test_fill_for_random_reader);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dirahead_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
