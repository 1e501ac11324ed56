/*
 * check_pattern.c - the pattern tracker (pattern.c): names and defaults,
 * empty and zero-length READs, recycling of streams and their ids, and the
 * planner's output for learned streams (the planner alone: check_plan.c).
 * Matching, strides and bursts have their own suites
 * (check_pattern_match.c, check_pattern_stride.c, check_pattern_burst.c).
 */
#include "pattern_harness.h"

/* ---- basics ------------------------------------------------------------- */

START_TEST(test_names)
{
	ck_assert_str_eq(pf_pattern_name(PF_PAT_UNKNOWN), "unknown");
	ck_assert_str_eq(pf_pattern_name(PF_PAT_SEQUENTIAL), "sequential");
	ck_assert_str_eq(pf_pattern_name(PF_PAT_STRIDED), "strided");
	ck_assert_str_eq(pf_pattern_name(PF_PAT_RANDOM), "random");
	ck_assert_str_eq(pf_pattern_name((enum pf_pattern)77), "unknown");
}
END_TEST

START_TEST(test_defaults)
{
	struct pf_pattern_cfg c;

	memset(&c, 0xff, sizeof(c));
	pf_pattern_cfg_default(&c);
	ck_assert_uint_eq(c.gap_ns, 2 * MS);
	ck_assert_uint_eq(c.reorder_bytes, 8 * MiB);
	ck_assert_uint_eq(c.max_streams, 32);
	ck_assert_uint_eq(c.batch_override, 0);
}
END_TEST

START_TEST(test_empty)
{
	struct pf_plan_cfg pc = { 2, 1 * MiB, 16 * MiB };
	struct pf_extent ext[4];
	struct pf_stream s;
	unsigned id;

	ck_assert_uint_eq(pf_tracker_count(tr), 0);
	ck_assert_ptr_null(pf_tracker_stream(tr, 0));
	ck_assert_ptr_null(pf_tracker_find(tr, 1));
	pf_tracker_done(tr, 1, clk);
	pf_tracker_done(tr, 0, clk);
	ck_assert_uint_eq(pf_plan(NULL, &pc, GiB, ext, 4), 0);
	ck_assert_uint_eq(pf_tracker_count(NULL), 0);
	pf_tracker_free(NULL);

	/* one READ: a stream that knows nothing yet and plans nothing */
	id = obs(5 * MiB, 128 * KiB);
	ck_assert_uint_ne(id, 0);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_ptr_eq(pf_tracker_stream(tr, 0), S(id));
	ck_assert_ptr_null(pf_tracker_stream(tr, 1));
	ck_assert_int_eq(S(id)->pattern, PF_PAT_UNKNOWN);
	ck_assert_uint_eq(S(id)->reads, 1);
	ck_assert_uint_eq(S(id)->bytes, 128 * KiB);
	ck_assert_uint_eq(S(id)->outstanding, 1);
	ck_assert_uint_eq(planned(S(id), GiB), 0);
	fin(id);
	ck_assert_uint_eq(S(id)->outstanding, 0);
	/* unknown ids and extra completions change nothing */
	fin(id);
	fin(id + 1000);
	ck_assert_uint_eq(S(id)->outstanding, 0);

	memset(&s, 0, sizeof(s));
	s.pattern = PF_PAT_UNKNOWN;
	ck_assert_uint_eq(pf_plan(&s, &pc, GiB, ext, 4), 0);
	s.pattern = PF_PAT_RANDOM;
	ck_assert_uint_eq(pf_plan(&s, &pc, GiB, ext, 4), 0);
}
END_TEST

START_TEST(test_zero_length_and_eof_reads)
{
	unsigned a = obs(0, 0);
	unsigned b = obs(UINT64_MAX - 10, 4096);

	ck_assert_uint_ne(a, 0);
	ck_assert_uint_ne(b, 0);
	ck_assert_uint_le(pf_tracker_count(tr), 2);
}
END_TEST

/* ---- streams: recycling and ids ----------------------------------------- */

START_TEST(test_recycle_lru)
{
	unsigned id[6];

	cfg.max_streams = 3;
	mk();
	/* six readers far apart, each reading 4 READs, one after another */
	for (unsigned r = 0; r < 6; r++) {
		for (unsigned i = 0; i < 4; i++)
			id[r] = rd(reader_base(r) + i * 128 * KiB, 128 * KiB);
		ck_assert_uint_le(pf_tracker_count(tr), 3);
		for (unsigned v = 0; v < r; v++)
			ck_assert_uint_gt(id[r], id[v]);
	}
	ck_assert_uint_eq(pf_tracker_count(tr), 3);
	/* the three least recently used are gone, their ids dead */
	for (unsigned r = 0; r < 3; r++)
		ck_assert_ptr_null(pf_tracker_find(tr, id[r]));
	for (unsigned r = 3; r < 6; r++)
		ck_assert_int_eq(S(id[r])->pattern, PF_PAT_SEQUENTIAL);
	/* completing a recycled stream's READ is ignored */
	fin(id[0]);
	/* reader 3 was used least recently: a returning reader 0 evicts it */
	rd(reader_base(0) + 4 * 128 * KiB, 128 * KiB);
	ck_assert_ptr_null(pf_tracker_find(tr, id[3]));
	ck_assert_ptr_nonnull(pf_tracker_find(tr, id[4]));
	ck_assert_ptr_nonnull(pf_tracker_find(tr, id[5]));
	ck_assert_uint_eq(pf_tracker_count(tr), 3);
}
END_TEST

START_TEST(test_recycle_prefers_unpatterned)
{
	unsigned a;
	unsigned b;

	cfg.max_streams = 3;
	mk();
	for (unsigned i = 0; i < 4; i++)
		a = rd(i * 128 * KiB, 128 * KiB);
	/* two READs of a reader that stops: one stream, not yet sequential */
	rd(3 * GiB, 128 * KiB);
	b = rd(3 * GiB + 128 * KiB, 128 * KiB);
	ck_assert_int_eq(S(b)->pattern, PF_PAT_UNKNOWN);
	/* a is older, but sequential: the new readers take b's place */
	for (unsigned r = 0; r < 4; r++)
		for (unsigned i = 0; i < 2; i++)
			rd(reader_base(5 + r) + i * 128 * KiB, 128 * KiB);
	ck_assert_ptr_null(pf_tracker_find(tr, b));
	ck_assert_int_eq(S(a)->pattern, PF_PAT_SEQUENTIAL);
}
END_TEST

START_TEST(test_ids_stable_unique)
{
	unsigned id[3] = { 0 };
	unsigned seen[64];
	unsigned nseen = 0;

	for (unsigned i = 0; i < 50; i++) {
		for (unsigned r = 0; r < 3; r++) {
			unsigned got = rd(reader_base(r) + i * 256 * KiB,
					  256 * KiB);

			if (i == 1)
				id[r] = got;
			if (i >= 1)
				ck_assert_uint_eq(got, id[r]);
		}
	}
	for (unsigned r = 0; r < 3; r++)
		for (unsigned v = 0; v < r; v++)
			ck_assert_uint_ne(id[r], id[v]);
	/* every id any stream ever had is different */
	cfg.max_streams = 2;
	mk();
	for (unsigned r = 0; r < 20; r++) {
		for (unsigned i = 0; i < 3; i++) {
			unsigned got = rd(reader_base(r) + i * MiB, MiB);

			for (unsigned k = 0; k < nseen; k++)
				if (seen[k] == got)
					goto known;
			seen[nseen++] = got;
known:
			ck_assert_ptr_nonnull(pf_tracker_find(tr, got));
		}
	}
	for (unsigned k = 1; k < nseen; k++)
		ck_assert_uint_gt(seen[k], seen[k - 1]);
	ck_assert_uint_ge(nseen, 20);
}
END_TEST

START_TEST(test_one_stream_tracker)
{
	unsigned id = 0;

	cfg.max_streams = 1;
	mk();
	for (unsigned i = 0; i < 20; i++)
		id = rd(i * 128 * KiB, 128 * KiB);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(S(id)->next_off, 20 * 128 * KiB);
	rd(7 * GiB, 4096);
	rd(3 * GiB, 4096);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
}
END_TEST

START_TEST(test_iteration)
{
	unsigned seen = 0;

	for (unsigned i = 0; i < 4; i++)
		for (unsigned r = 0; r < 5; r++)
			rd(reader_base(r) + i * MiB, MiB);
	ck_assert_uint_eq(pf_tracker_count(tr), 5);
	for (unsigned i = 0; i < 5; i++) {
		const struct pf_stream *s = pf_tracker_stream(tr, i);

		ck_assert_ptr_nonnull(s);
		ck_assert_ptr_eq(pf_tracker_find(tr, s->id), s);
		for (unsigned r = 0; r < 5; r++)
			if (s->next_off == reader_base(r) + 4 * MiB)
				seen |= 1u << r;
	}
	ck_assert_uint_eq(seen, 0x1f);
}
END_TEST

/* ---- planner ------------------------------------------------------------ */

START_TEST(test_plan_window)
{
	struct pf_plan_cfg pc = { 2, 4 * MiB, 64 * MiB };
	struct pf_stream s;

	memset(&s, 0, sizeof(s));
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 4 * MiB);
	s.batch = 1 * MiB;
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 4 * MiB);
	s.batch = 10 * MiB;
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 10 * MiB);
	s.batch = 64 * MiB;
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 64 * MiB);
	s.batch = 65 * MiB;
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 64 * MiB);
	s.batch = UINT64_MAX;
	ck_assert_uint_eq(pf_plan_window(&s, &pc), 64 * MiB);
}
END_TEST


START_TEST(test_plan_from_tracker)
{
	struct pf_plan_cfg pc = { 2, 4 * MiB, 64 * MiB };
	struct pf_extent ext[4];
	unsigned id = 0;

	for (unsigned i = 0; i < 3; i++)
		id = rd(i * MiB, MiB);
	/* not sure yet after three READs */
	ck_assert_uint_eq(pf_plan(S(id), &pc, GiB, ext, 4), 0);
	id = rd(3 * MiB, MiB);
	/* 4 MiB read so far; window = max(4 MiB, min 2 MiB) */
	pc.min_window = 2 * MiB;
	ck_assert_uint_eq(pf_plan(S(id), &pc, GiB, ext, 4), 1);
	ck_assert_uint_eq(ext[0].off, 4 * MiB);
	ck_assert_uint_eq(ext[0].len, 8 * MiB);
	pc.min_window = 4 * MiB;
	for (unsigned i = 4; i < 12; i++)
		id = rd(i * MiB, MiB);
	ck_assert_uint_eq(pf_plan(S(id), &pc, GiB, ext, 4), 1);
	ck_assert_uint_eq(ext[0].off, 12 * MiB);
	ck_assert_uint_eq(ext[0].len, 24 * MiB);
	ck_assert_uint_eq(pf_plan(S(id), &pc, 12 * MiB, ext, 4), 0);
}
END_TEST

static Suite *pattern_suite(void)
{
	Suite *s = suite_create("pattern");
	TCase *tc;

	tc = tcase_create("basics");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_zero_length_and_eof_reads);
	suite_add_tcase(s, tc);

	tc = tcase_create("streams");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_recycle_lru);
	tcase_add_test(tc, test_recycle_prefers_unpatterned);
	tcase_add_test(tc, test_ids_stable_unique);
	tcase_add_test(tc, test_one_stream_tracker);
	tcase_add_test(tc, test_iteration);
	suite_add_tcase(s, tc);

	tc = tcase_create("planner");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_plan_window);
	tcase_add_test(tc, test_plan_from_tracker);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return pattern_run(pattern_suite());
}
