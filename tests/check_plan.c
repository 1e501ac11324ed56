/*
 * check_plan.c - the planner (plan.c) on hand-made streams: sequential and
 * strided windows, clipping, overflow, and pf_plan_ahead()'s policy (the
 * early window, alignment, refills, the next file), and the pieces of the
 * early window.  The planner on streams the tracker learned is in
 * check_pattern.c.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_pattern.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)

/* The policy on top of pf_plan(): early window, alignment, refills, the
 * next file. */
START_TEST(test_plan_ahead)
{
	struct pf_plan_cfg pc = { 2, 1 * MiB, 256 * MiB };
	struct pf_plan_state ps = { 0 };
	struct pf_extent ext[4];
	struct pf_stream s;
	uint64_t horizon;
	uint64_t want;

	/* a reader from offset 0, contiguous so far: one window early */
	memset(&s, 0, sizeof(s));
	s.pattern = PF_PAT_UNKNOWN;
	s.reads = 1;
	s.bytes = s.next_off = 64 * KiB;
	ck_assert_uint_eq(pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4,
					&horizon, &want), 1);
	ck_assert_uint_eq(ext[0].off, 64 * KiB);
	ck_assert_uint_eq(ext[0].len, 1 * MiB);
	ck_assert_uint_eq(horizon, 64 * KiB + 1 * MiB);
	ck_assert_uint_eq(want, 0);
	/* ... not once past min_window, nor for a reader that skipped */
	s.bytes = s.next_off = 2 * MiB;
	ck_assert_uint_eq(pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4,
					&horizon, &want), 0);
	s.next_off = 128 * KiB;
	s.bytes = 64 * KiB;
	ck_assert_uint_eq(pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4,
					&horizon, &want), 0);

	/* sequential: whole blocks; the next file once past the end */
	memset(&s, 0, sizeof(s));
	memset(&ps, 0, sizeof(ps));
	s.pattern = PF_PAT_SEQUENTIAL;
	s.next_off = 1 * MiB + 100;
	ck_assert_uint_eq(pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4,
					&horizon, &want), 1);
	ck_assert_uint_eq(ext[0].off, 1 * MiB);
	ck_assert_uint_eq(ext[0].len, 2 * MiB + 64 * KiB);
	ck_assert_uint_eq(horizon, 3 * MiB + 64 * KiB);
	ck_assert_uint_eq(ps.planned_upto, 1 * MiB + 100);
	ck_assert_uint_eq(want, 0);
	ck_assert_uint_eq(pf_plan_ahead(&s, &pc, 3 * MiB, 64 * KiB, &ps, ext,
					4, &horizon, &want), 1);
	ck_assert_uint_eq(ext[0].off + ext[0].len, 3 * MiB);
	ck_assert_uint_eq(want, 1 * MiB);

	/* a known batch: refilled once a batch was consumed */
	memset(&ps, 0, sizeof(ps));
	s.next_off = 10 * MiB;
	s.batch = 4 * MiB;
	s.bursts = 1;
	s.burst_bytes = 1 * MiB;
	pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4, &horizon, &want);
	ck_assert_uint_eq(horizon, 18 * MiB);	/* nothing ahead: at once */
	ps.planned_upto = 18 * MiB;
	s.next_off = 11 * MiB;
	s.burst_bytes = 2 * MiB;
	pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4, &horizon, &want);
	ck_assert_uint_eq(horizon, 18 * MiB);	/* held back mid-batch */
	s.burst_bytes = 4 * MiB;
	pf_plan_ahead(&s, &pc, GiB, 64 * KiB, &ps, ext, 4, &horizon, &want);
	ck_assert_uint_eq(horizon, 19 * MiB);	/* a batch consumed */
}
END_TEST

/* The first window of a file read from its start goes out in pieces. */
START_TEST(test_plan_piece_end)
{
	struct pf_plan_cfg pc = { 2, 16 * MiB, 256 * MiB };
	struct pf_stream s;

	memset(&s, 0, sizeof(s));
	s.pattern = PF_PAT_UNKNOWN;
	s.reads = 1;
	s.bytes = s.next_off = 1 * MiB;
	/* pieces of min_window / PF_PLAN_PIECES, ending on their multiples */
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 1 * MiB),
			  2 * MiB);
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 2 * MiB),
			  4 * MiB);
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB,
					    6 * MiB + 5), 8 * MiB);
	/* past the first half of the window: no cap */
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 8 * MiB), 0);
	/* sequential from the start too */
	s.pattern = PF_PAT_SEQUENTIAL;
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 3 * MiB),
			  4 * MiB);
	/* a reader that did not start at offset 0: none */
	s.next_off = 3 * MiB;
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 3 * MiB), 0);
	/* a piece is at least one block */
	s.next_off = s.bytes;
	pc.min_window = 256 * KiB;
	ck_assert_uint_eq(pf_plan_piece_end(&s, &pc, 64 * KiB, 0), 64 * KiB);
	ck_assert_uint_eq(pf_plan_piece_end(NULL, &pc, 64 * KiB, 0), 0);
}
END_TEST

START_TEST(test_plan_sequential)
{
	struct pf_plan_cfg pc = { 2, 4 * MiB, 64 * MiB };
	struct pf_extent ext[4];
	struct pf_stream s;

	memset(&s, 0, sizeof(s));
	s.pattern = PF_PAT_SEQUENTIAL;
	s.next_off = 10 * MiB;
	ck_assert_uint_eq(pf_plan(&s, &pc, GiB, ext, 4), 1);
	ck_assert_uint_eq(ext[0].off, 10 * MiB);
	ck_assert_uint_eq(ext[0].len, 8 * MiB);
	s.batch = 24 * MiB;
	pc.windows = 3;
	ck_assert_uint_eq(pf_plan(&s, &pc, GiB, ext, 4), 1);
	ck_assert_uint_eq(ext[0].len, 72 * MiB);
	/* clipped at the end of the file */
	ck_assert_uint_eq(pf_plan(&s, &pc, 20 * MiB + 5, ext, 4), 1);
	ck_assert_uint_eq(ext[0].off, 10 * MiB);
	ck_assert_uint_eq(ext[0].len, 10 * MiB + 5);
	/* nothing past it */
	ck_assert_uint_eq(pf_plan(&s, &pc, 10 * MiB, ext, 4), 0);
	ck_assert_uint_eq(pf_plan(&s, &pc, 5 * MiB, ext, 4), 0);
	ck_assert_uint_eq(pf_plan(&s, &pc, GiB, ext, 0), 0);
	/* no overflow near the top */
	s.next_off = UINT64_MAX - 100;
	ck_assert_uint_eq(pf_plan(&s, &pc, UINT64_MAX, ext, 4), 1);
	ck_assert_uint_eq(ext[0].len, 100);
}
END_TEST

START_TEST(test_plan_strided)
{
	struct pf_plan_cfg pc = { 2, 1 * MiB, 64 * MiB };
	struct pf_extent ext[16];
	struct pf_stream s;
	unsigned n;

	memset(&s, 0, sizeof(s));
	s.pattern = PF_PAT_STRIDED;
	s.next_off = 3 * MiB;
	s.stride = 8 * MiB;
	s.record = 1 * MiB;
	/* 2 windows of 1 MiB: two records */
	n = pf_plan(&s, &pc, GiB, ext, 16);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ext[0].off, 3 * MiB);
	ck_assert_uint_eq(ext[0].len, 1 * MiB);
	ck_assert_uint_eq(ext[1].off, 11 * MiB);
	ck_assert_uint_eq(ext[1].len, 1 * MiB);
	/* 2 windows of 2.5 MiB: records until 5 MiB are reached */
	s.batch = 2 * MiB + 512 * KiB;
	n = pf_plan(&s, &pc, GiB, ext, 16);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(ext[4].off, 35 * MiB);
	/* at most @max */
	n = pf_plan(&s, &pc, GiB, ext, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ext[2].off, 19 * MiB);
	/* clipped by the end of the file: a short last record, none after */
	n = pf_plan(&s, &pc, 19 * MiB + 4096, ext, 16);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ext[2].off, 19 * MiB);
	ck_assert_uint_eq(ext[2].len, 4096);
	n = pf_plan(&s, &pc, 19 * MiB, ext, 16);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(pf_plan(&s, &pc, 3 * MiB, ext, 16), 0);
	/* records split like 4 KiB every 12 KiB, windows of 1 MiB */
	s.next_off = 0;
	s.stride = 12 * KiB;
	s.record = 4 * KiB;
	s.batch = 0;
	n = pf_plan(&s, &pc, GiB, ext, 16);
	ck_assert_uint_eq(n, 16);
	ck_assert_uint_eq(ext[15].off, 15 * 12 * KiB);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_plan_sequential);
	tcase_add_test(tc, test_plan_strided);
	tcase_add_test(tc, test_plan_ahead);
	tcase_add_test(tc, test_plan_piece_end);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
