/*
 * check_pattern_stride.c - strided streams (pattern_stride.c): ranks of
 * equally spaced records, records split into several READs and reordered,
 * and the plan once a stride is learned.
 */
#include "pattern_harness.h"

/* ---- strided ------------------------------------------------------------ */

struct stride_case {
	unsigned r;		/* rank */
	unsigned n;		/* ranks */
	uint64_t rec;		/* record bytes */
	unsigned split;		/* READs per record */
	int shuffled;		/* READs of a record arrive out of order */
	int async;		/* a record's READs all in flight at once */
	unsigned earliest;	/* not STRIDED before this record (0-based) */
	unsigned detect;	/* STRIDED once this record is read */
};

static const struct stride_case stride_cases[] = {
	/* big gaps (more than 16 READs): records are streams of their own */
	{ 1, 4, 1 * MiB, 8, 1, 1, 2, 2 },
	{ 2, 4, 4 * MiB, 4, 1, 1, 2, 2 },
	{ 0, 8, 1 * MiB, 8, 0, 0, 2, 2 },
	{ 7, 8, 512 * KiB, 4, 1, 0, 2, 2 },
	/* one READ a record: they wait in the scatter */
	{ 0, 2, 128 * KiB, 1, 0, 0, 2, 2 },
	{ 5, 16, 128 * KiB, 1, 0, 0, 2, 2 },
	{ 3, 4, 1 * MiB, 1, 0, 0, 2, 2 },
	{ 0, 3, 128 * KiB, 1, 0, 1, 2, 2 },
	/* small gaps, within read-ahead reach: if the first record made a
	 * sequential stream, the next are its islands, and four records are
	 * needed to tell them from reordered read-ahead */
	{ 3, 8, 256 * KiB, 2, 1, 1, 2, 3 },
	{ 1, 2, 512 * KiB, 4, 1, 1, 2, 3 },
	{ 1, 2, 512 * KiB, 4, 0, 0, 2, 3 },
};

START_TEST(test_strided)
{
	const struct stride_case *c = &stride_cases[_i];
	uint64_t stride = c->n * c->rec;
	uint64_t len = c->rec / c->split;
	unsigned id = 0;

	for (unsigned k = 0; k < 12; k++) {
		uint64_t x = c->r * c->rec + k * stride;
		unsigned idx[16];
		unsigned ids[16];

		for (unsigned i = 0; i < c->split; i++)
			idx[i] = i;
		if (c->shuffled)
			shuffle(idx, c->split);
		for (unsigned i = 0; i < c->split; i++) {
			if (c->async) {
				ids[i] = obs(x + idx[i] * len, len);
			} else {
				ids[i] = rd(x + idx[i] * len, len);
				clk += 30 * US;
			}
		}
		clk += 50 * US;
		if (c->async)
			for (unsigned i = 0; i < c->split; i++)
				fin(ids[i]);
		/* the app moves on to its next record */
		clk += 200 * US;
		if (k < c->earliest) {
			ck_assert_int_ne(S(ids[c->split - 1])->pattern,
					 PF_PAT_STRIDED);
			continue;
		}
		if (k < c->detect &&
		    S(ids[c->split - 1])->pattern != PF_PAT_STRIDED)
			continue;
		if (!id)
			id = ids[c->split - 1];
		ck_assert_uint_eq(ids[c->split - 1], id);
		ck_assert_int_eq(S(id)->pattern, PF_PAT_STRIDED);
		ck_assert_uint_eq(S(id)->stride, stride);
		ck_assert_uint_eq(S(id)->record, c->rec);
		ck_assert_uint_eq(S(id)->next_off, x + stride);
		ck_assert_uint_eq(pf_tracker_count(tr), 1);
		ck_assert_uint_eq(S(id)->outstanding, 0);
	}
	/* every READ since detection, and the records it took in */
	ck_assert_uint_eq(S(id)->reads, 12 * c->split);
	ck_assert_uint_eq(S(id)->bytes, 12 * c->rec);
}
END_TEST

START_TEST(test_strided_plan_after_detection)
{
	const uint64_t stride = 4 * MiB;
	const uint64_t fsize = 30 * MiB + 512 * KiB;
	struct pf_plan_cfg pc = { 2, 1 * MiB, 64 * MiB };
	struct pf_extent ext[8];
	unsigned id = 0;
	unsigned n;

	/* rank 1 of 4, 1 MiB records as 8 READs */
	for (unsigned k = 0; k < 4; k++)
		for (unsigned i = 0; i < 8; i++)
			id = rd(1 * MiB + k * stride + i * 128 * KiB,
				128 * KiB);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_STRIDED);
	ck_assert_uint_eq(S(id)->next_off, 17 * MiB);
	/* no burst ended: the batch is the 4 MiB read so far, so windows of
	 * 4 MiB: 8 MiB of records, as far as the file goes */
	ck_assert_uint_eq(S(id)->batch, 4 * MiB);
	ck_assert_uint_eq(pf_plan_window(S(id), &pc), 4 * MiB);
	n = pf_plan(S(id), &pc, fsize, ext, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(ext[0].off, 17 * MiB);
	ck_assert_uint_eq(ext[0].len, 1 * MiB);
	ck_assert_uint_eq(ext[1].off, 21 * MiB);
	ck_assert_uint_eq(ext[2].off, 25 * MiB);
	ck_assert_uint_eq(ext[3].off, 29 * MiB);
	ck_assert_uint_eq(ext[3].len, 1 * MiB);
	/* the next record is cut by the end of the file */
	n = pf_plan(S(id), &pc, 29 * MiB + 300 * KiB, ext, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(ext[3].len, 300 * KiB);
}
END_TEST

/* Several ranks that start together at equal distances are not one
 * strided reader: each becomes its own sequential stream. */
START_TEST(test_strided_needs_finished_records)
{
	unsigned ids[4] = { 0 };

	for (unsigned round = 0; round < 6; round++) {
		unsigned got[4];

		for (unsigned w = 0; w < 4; w++)
			got[w] = obs(w * 64 * MiB + round * 128 * KiB,
				     128 * KiB);
		clk += 100 * US;
		for (unsigned w = 0; w < 4; w++)
			fin(got[w]);
		for (unsigned w = 0; w < 4; w++) {
			ck_assert_int_ne(S(got[w])->pattern, PF_PAT_STRIDED);
			ids[w] = got[w];
		}
	}
	ck_assert_uint_eq(pf_tracker_count(tr), 4);
	for (unsigned w = 0; w < 4; w++) {
		ck_assert_int_eq(S(ids[w])->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(S(ids[w])->next_off,
				  w * 64 * MiB + 6 * 128 * KiB);
		for (unsigned v = 0; v < w; v++)
			ck_assert_uint_ne(ids[v], ids[w]);
	}
}
END_TEST

/*
 * A sequential reader that copies each 8 MiB batch from its end down (a
 * backward memcpy() out of a mapping, with the engine pushing the bytes):
 * the tracker sees the batch's last tripwire page, which moves the frontier
 * to the batch's end (as one READ from the frontier when the engine knows
 * the bytes before it were pushed, as a 4 KiB READ ahead when it does not),
 * then the tripwire page in its middle, 4 MiB behind.  Those 4 KiB READs lie
 * 8 MiB apart; they are late READs of the sequential stream, not the
 * records of a strided one: the stream never turns STRIDED (which would
 * fetch those pages only).  Case @_i: bit k says whether batch k (mod 8)
 * came from the frontier.
 */
static const unsigned backward_cases[] = { 0x00, 0xff, 0xaa, 0x55, 0x01,
					   0xfe, 0x0f, 0xf0 };

START_TEST(test_backward_tripwires_stay_sequential)
{
	unsigned mode = backward_cases[_i];
	unsigned id = 0;

	for (uint64_t off = 0; off < 8 * MiB; off += MiB)
		id = rd(off, MiB);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	for (unsigned i = 0; i < 24; i++) {
		uint64_t b = (8 + 8ull * i) * MiB;

		clk += 40 * MS;
		if ((mode >> (i % 8)) & 1)
			rd(b, 8 * MiB);
		else
			rd(b + 8 * MiB - 4 * KiB, 4 * KiB);
		rd(b + 4 * MiB - 4 * KiB, 4 * KiB);
		/* the sequential stream never fetches pages for records */
		ck_assert_msg(S(id)->pattern != PF_PAT_STRIDED,
			      "batch %u: stride %llu, record %llu", i,
			      (unsigned long long)S(id)->stride,
			      (unsigned long long)S(id)->record);
	}
}
END_TEST

static Suite *pattern_stride_suite(void)
{
	Suite *s = suite_create("pattern_stride");
	TCase *tc;

	tc = tcase_create("strided");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_strided, 0,
			    sizeof(stride_cases) / sizeof(stride_cases[0]));
	tcase_add_test(tc, test_strided_plan_after_detection);
	tcase_add_test(tc, test_strided_needs_finished_records);
	tcase_add_loop_test(tc, test_backward_tripwires_stay_sequential, 0,
			    sizeof(backward_cases) /
				    sizeof(backward_cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return pattern_run(pattern_stride_suite());
}
