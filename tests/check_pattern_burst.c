/*
 * check_pattern_burst.c - bursts and batches (pattern_burst.c): batches
 * between compute gaps, and the app's pauses inside batches longer than
 * gap_ns (the adaptive burst gap).
 */
#include "pattern_harness.h"

/* ---- batches ------------------------------------------------------------ */

/* One burst of @n synchronous READs of @len from *off with a few us of app
 * think time between them; returns the stream. */
static unsigned burst(uint64_t *off, uint64_t len, unsigned n)
{
	unsigned id = 0;

	for (unsigned i = 0; i < n; i++) {
		id = rd(*off, len);
		*off += len;
		clk += 5 * US + rnd() % (300 * US);
	}
	return id;
}

START_TEST(test_batch_learned)
{
	uint64_t off = 0;
	unsigned id;

	/* while the first burst goes on, the batch is the bytes so far */
	for (unsigned i = 0; i < 64; i++) {
		id = rd(off, 128 * KiB);
		off += 128 * KiB;
		clk += 50 * US;
		ck_assert_uint_eq(S(id)->batch, (i + 1) * 128 * KiB);
		ck_assert_uint_eq(S(id)->bursts, 0);
	}
	clk += 40 * MS;
	id = burst(&off, 128 * KiB, 64);
	ck_assert_uint_eq(S(id)->bursts, 1);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	ck_assert_uint_eq(S(id)->burst_bytes, 8 * MiB);
	clk += 40 * MS;
	id = burst(&off, 128 * KiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 2);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	ck_assert_uint_eq(S(id)->burst_bytes, 128 * KiB);
	id = burst(&off, 128 * KiB, 63);
	for (unsigned b = 0; b < 5; b++) {
		clk += 40 * MS;
		id = burst(&off, 128 * KiB, 64);
	}
	ck_assert_uint_eq(S(id)->bursts, 7);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
}
END_TEST

/* A short first burst (the reader warming up) is forgotten at once. */
START_TEST(test_batch_second_burst_wins)
{
	uint64_t off = 0;
	unsigned id;

	id = burst(&off, 1 * MiB, 2);
	clk += 40 * MS;
	id = burst(&off, 1 * MiB, 8);
	clk += 40 * MS;
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 2);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	id = burst(&off, 1 * MiB, 7);
	clk += 40 * MS;
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 3);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
}
END_TEST

START_TEST(test_batch_adapts)
{
	uint64_t off = 0;
	unsigned id = 0;

	for (unsigned b = 0; b < 4; b++) {
		id = burst(&off, 1 * MiB, 8);
		clk += 40 * MS;
	}
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 4);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	id = burst(&off, 1 * MiB, 3);
	clk += 40 * MS;
	/* one 4 MiB burst is an outlier ... */
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 5);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	id = burst(&off, 1 * MiB, 3);
	clk += 40 * MS;
	/* ... two are the new batch */
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 6);
	ck_assert_uint_eq(S(id)->batch, 4 * MiB);
	/* and it grows back */
	id = burst(&off, 1 * MiB, 15);
	clk += 40 * MS;
	id = burst(&off, 1 * MiB, 16);
	clk += 40 * MS;
	id = burst(&off, 1 * MiB, 1);
	ck_assert_uint_eq(S(id)->bursts, 8);
	ck_assert_uint_eq(S(id)->batch, 16 * MiB);
}
END_TEST

START_TEST(test_batch_slow_read_no_split)
{
	uint64_t off = 0;
	unsigned id = 0;

	for (unsigned i = 0; i < 32; i++) {
		id = obs(off, 128 * KiB);
		off += 128 * KiB;
		/* READ 10 takes 50 ms; the reader waits for it */
		clk += i == 10 ? 50 * MS : 20 * US;
		fin(id);
		clk += 10 * US;
	}
	/* READ 40 is slow too, but read-ahead READs keep arriving and
	 * completing 5 ms apart while it is outstanding */
	{
		unsigned slow = obs(off, 128 * KiB);

		off += 128 * KiB;
		for (unsigned i = 0; i < 8; i++) {
			clk += 5 * MS;
			id = rd(off, 128 * KiB);
			off += 128 * KiB;
		}
		clk += 1 * MS;
		fin(slow);
	}
	ck_assert_uint_eq(S(id)->bursts, 0);
	ck_assert_uint_eq(S(id)->burst_bytes, 41 * 128 * KiB);
	clk += 40 * MS;
	id = rd(off, 128 * KiB);
	ck_assert_uint_eq(S(id)->bursts, 1);
	ck_assert_uint_eq(S(id)->batch, 41 * 128 * KiB);
}
END_TEST

START_TEST(test_batch_gap_needs_idle_stream)
{
	unsigned a = obs(0, 1 * MiB);
	unsigned b;

	fin(a);
	/* two in flight, one answered, then 10 ms pass: the other is still
	 * outstanding, so the next READ is no new burst */
	b = obs(1 * MiB, 1 * MiB);
	a = obs(2 * MiB, 1 * MiB);
	fin(a);
	clk += 10 * MS;
	ck_assert_uint_eq(obs(3 * MiB, 1 * MiB), b);
	ck_assert_uint_eq(S(b)->bursts, 0);
	ck_assert_uint_eq(S(b)->burst_bytes, 4 * MiB);
	/* all answered, then a gap just under gap_ns: still no burst end */
	fin(b);
	fin(b);
	clk += 2 * MS - 2 * US;
	obs(4 * MiB, 1 * MiB);
	ck_assert_uint_eq(S(b)->bursts, 0);
	fin(b);
	clk += 2 * MS;
	obs(5 * MiB, 1 * MiB);
	ck_assert_uint_eq(S(b)->bursts, 1);
	ck_assert_uint_eq(S(b)->batch, 5 * MiB);
	ck_assert_uint_eq(S(b)->burst_bytes, 1 * MiB);
}
END_TEST

START_TEST(test_batch_strided)
{
	const uint64_t stride = 8 * MiB;
	unsigned id = 0;

	/* rank 2 of 8 with 1 MiB records, 3 records a batch, 40 ms compute */
	for (unsigned b = 0; b < 5; b++) {
		for (unsigned k = 0; k < 3; k++) {
			uint64_t x = 2 * MiB + (b * 3 + k) * stride;

			for (unsigned i = 0; i < 8; i++)
				id = rd(x + i * 128 * KiB, 128 * KiB);
			clk += 100 * US;
		}
		clk += 40 * MS;
	}
	id = rd(2 * MiB + 15 * stride, 128 * KiB);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_STRIDED);
	ck_assert_uint_eq(S(id)->bursts, 5);
	ck_assert_uint_eq(S(id)->batch, 3 * MiB);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
}
END_TEST

START_TEST(test_batch_override)
{
	struct pf_plan_cfg pc = { 2, 1 * MiB, 64 * MiB };
	uint64_t off = 0;
	unsigned id;

	cfg.batch_override = 3 * MiB;
	mk();
	id = rd(0, 128 * KiB);
	ck_assert_uint_eq(S(id)->batch, 3 * MiB);
	for (unsigned b = 0; b < 3; b++) {
		id = burst(&off, 1 * MiB, 8);
		clk += 40 * MS;
	}
	ck_assert_uint_eq(S(id)->batch, 3 * MiB);
	ck_assert_uint_eq(pf_plan_window(S(id), &pc), 3 * MiB);
	ck_assert_uint_eq(planned(S(id), GiB), 6 * MiB);
	id = rd(off, 1 * MiB);
	ck_assert_uint_eq(S(id)->bursts, 3);
	ck_assert_uint_eq(S(id)->batch, 3 * MiB);
}
END_TEST

/* ---- adaptive burst gap ------------------------------------------------- */

/*
 * A trainer on a loaded 2-core VM: the idle time between the answer to one
 * READ and the arrival of the next within a batch is mostly under 1 ms but
 * often 2-4.5 ms (the app copying pages and competing for the CPUs), well
 * over gap_ns; compute between batches is 10 ms to seconds.
 */
static const uint64_t app_idle[] = { 300 * US, 500 * US, 1 * MS,
				     2500 * US, 3500 * US, 4500 * US };

/* The trainer's READ of [off, off+len) arrives @idle after its last one was
 * answered, and is answered 150 us later.  Returns its stream. */
static unsigned tread(uint64_t off, uint64_t len, uint64_t idle)
{
	const struct pf_stream *s;

	clk = done_at + idle;
	s = pf_tracker_observe(tr, off, len, clk);
	ck_assert_ptr_nonnull(s);
	clk += 150 * US;
	pf_tracker_done(tr, s->id, clk);
	done_at = clk;
	return s->id;
}

/* The idle before the next READ inside a batch, drawn from app_idle. */
static uint64_t pause_next(void)
{
	uint64_t d = app_idle[rnd() % 6];

	if (d >= cfg.gap_ns)
		long_pauses++;
	return d;
}

/*
 * @n batches of bytes[b] read as READs of @len from *off, batch b after a
 * compute gap of gaps[b] (none before the first).  From batch @learned on
 * every READ of batch b must see the batch at want[b] (want NULL: 8 MiB)
 * and b - lag[b] bursts completed (lag NULL: none missing).  Returns the
 * stream.
 */
static unsigned trainer(uint64_t *off, uint64_t len, const uint64_t *bytes,
			const uint64_t *gaps, unsigned n, unsigned learned,
			const uint64_t *want, const unsigned *lag)
{
	unsigned id = 0;

	for (unsigned b = 0; b < n; b++) {
		for (uint64_t x = 0; x < bytes[b]; x += len) {
			unsigned got = tread(*off, len,
					     x ? pause_next() :
					     b ? gaps[b] : 0);

			*off += len;
			if (id == 0)
				id = got;
			ck_assert_uint_eq(got, id);
			if (b < learned)
				continue;
			ck_assert_msg(S(id)->batch == (want ? want[b] : 8 * MiB),
				      "batch %u READ at %llu: batch %llu", b,
				      (unsigned long long)x,
				      (unsigned long long)S(id)->batch);
			ck_assert_uint_eq(S(id)->bursts,
					  b - (lag ? lag[b] : 0));
		}
	}
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	return id;
}

static void fill(uint64_t *v, unsigned n, uint64_t x)
{
	for (unsigned i = 0; i < n; i++)
		v[i] = x;
}

/* 8 MiB batches, 40 ms compute, pauses of up to 4.5 ms inside: the batch
 * is right once the first burst ends, and no burst is split in 22 more. */
static void adaptive_run(uint64_t len)
{
	uint64_t bytes[23];
	uint64_t gaps[23];
	uint64_t off = 0;
	unsigned id;

	fill(bytes, 23, 8 * MiB);
	fill(gaps, 23, 40 * MS);
	id = trainer(&off, len, bytes, gaps, 23, 1, NULL, NULL);
	ck_assert_uint_eq(S(id)->bursts, 22);
	/* the pauses were there: a fixed 2 ms gap would split every batch */
	ck_assert_uint_ge(long_pauses, 22 * (8 * MiB / len) / 3);
}

START_TEST(test_gap_adaptive_1m)
{
	adaptive_run(1 * MiB);
}
END_TEST

START_TEST(test_gap_adaptive_128k)
{
	adaptive_run(128 * KiB);
}
END_TEST

/* Compute shrinks to a quarter: 10 ms still ends every burst. */
START_TEST(test_gap_compute_shrinks)
{
	uint64_t bytes[30];
	uint64_t gaps[30];
	uint64_t off = 0;

	fill(bytes, 30, 8 * MiB);
	fill(gaps, 10, 40 * MS);
	fill(gaps + 10, 20, 10 * MS);
	trainer(&off, 1 * MiB, bytes, gaps, 30, 1, NULL, NULL);
}
END_TEST

/* 10 ms compute from the start: the pauses over gap_ns split the first
 * bursts until they are known; those splits are undone, exactly. */
START_TEST(test_gap_compute_10ms)
{
	uint64_t bytes[30];
	uint64_t gaps[30];
	uint64_t off = 0;
	unsigned id;

	fill(bytes, 30, 8 * MiB);
	fill(gaps, 30, 10 * MS);
	id = trainer(&off, 1 * MiB, bytes, gaps, 30, 3, NULL, NULL);
	ck_assert_uint_eq(S(id)->bursts, 29);
}
END_TEST

/* Compute grows tenfold and shrinks back: the batch holds throughout. */
START_TEST(test_gap_compute_grows)
{
	uint64_t bytes[40];
	uint64_t gaps[40];
	unsigned lag[40] = { 0 };
	uint64_t off = 0;

	fill(bytes, 40, 8 * MiB);
	fill(gaps, 10, 40 * MS);
	fill(gaps + 10, 10, 400 * MS);
	/*
	 * Back to 40 ms: under a quarter of the compute gap, so not believed
	 * at first.  Once the burst holds two batches each such idle counts
	 * as a compute gap, and the second makes the median: one burst of
	 * 24 MiB, which the median of the bursts passes over.
	 */
	fill(gaps + 20, 20, 40 * MS);
	lag[20] = 1;
	for (unsigned b = 21; b < 40; b++)
		lag[b] = 2;
	trainer(&off, 1 * MiB, bytes, gaps, 40, 1, NULL, lag);
}
END_TEST

/* Batches of 8 MiB +- 1 MiB (the kernel's read-ahead granularity). */
START_TEST(test_gap_batch_jitter)
{
	static const uint64_t mib[] = { 8, 9, 7 };
	uint64_t bytes[30];
	uint64_t gaps[30];
	uint64_t want[30];
	uint64_t off = 0;

	for (unsigned b = 0; b < 30; b++)
		bytes[b] = mib[b % 3] * MiB;
	fill(gaps, 30, 40 * MS);
	/* 8, then 9 (the newer of two), then always the median: 8 */
	fill(want, 30, 8 * MiB);
	want[2] = 9 * MiB;
	trainer(&off, 1 * MiB, bytes, gaps, 30, 1, want, NULL);
}
END_TEST

/*
 * No history yet: a 3 ms pause after the first READs ends the first burst,
 * as gap_ns alone decides.  Tentatively: the first compute gap more than
 * four times as long shows it was a pause, and the two bursts are joined.
 * Once the compute gap is known, a 3 ms pause ends nothing.
 */
START_TEST(test_gap_first_pause)
{
	uint64_t off = 0;
	unsigned id = 0;

	for (unsigned i = 0; i < 4; i++, off += 1 * MiB)
		id = tread(off, 1 * MiB, i ? 100 * US : 0);
	ck_assert_uint_eq(S(id)->bursts, 0);
	ck_assert_uint_eq(S(id)->batch, 4 * MiB);
	ck_assert_uint_eq(tread(off, 1 * MiB, 3 * MS), id);
	off += 1 * MiB;
	ck_assert_uint_eq(S(id)->bursts, 1);
	ck_assert_uint_eq(S(id)->batch, 4 * MiB);
	ck_assert_uint_eq(S(id)->burst_bytes, 1 * MiB);
	for (unsigned i = 1; i < 4; i++, off += 1 * MiB)
		tread(off, 1 * MiB, 100 * US);
	ck_assert_uint_eq(tread(off, 1 * MiB, 40 * MS), id);
	off += 1 * MiB;
	ck_assert_uint_eq(S(id)->bursts, 1);
	ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	ck_assert_uint_eq(S(id)->burst_bytes, 1 * MiB);
	for (unsigned b = 2; b < 5; b++) {
		for (unsigned i = 1; i < 8; i++, off += 1 * MiB)
			tread(off, 1 * MiB, i == 4 ? 3 * MS : 100 * US);
		ck_assert_uint_eq(S(id)->bursts, b - 1);
		ck_assert_uint_eq(S(id)->burst_bytes, 8 * MiB);
		ck_assert_uint_eq(tread(off, 1 * MiB, 40 * MS), id);
		off += 1 * MiB;
		ck_assert_uint_eq(S(id)->bursts, b);
		ck_assert_uint_eq(S(id)->batch, 8 * MiB);
	}
}
END_TEST

/* A scan with no compute gaps: one burst, the batch is the bytes so far. */
START_TEST(test_gap_plain_scan)
{
	unsigned id = 0;

	for (unsigned i = 0; i < 300; i++) {
		unsigned got = tread(i * MiB, 1 * MiB, i ? 100 * US : 0);

		if (i == 0)
			id = got;
		ck_assert_uint_eq(got, id);
		ck_assert_uint_eq(S(id)->bursts, 0);
		ck_assert_uint_eq(S(id)->burst_bytes, (i + 1) * MiB);
		ck_assert_uint_eq(S(id)->batch, (i + 1) * MiB);
	}
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
}
END_TEST

/*
 * Read-ahead: each 2 MiB of a batch arrives as 16 READs at once, answered
 * one by one 50 us apart; the app pauses (app_idle) between such waves and
 * computes 40 ms between batches.  A wave makes one idle, its first READ.
 */
START_TEST(test_gap_waves)
{
	uint64_t off = 0;
	unsigned first = 0;

	for (unsigned b = 0; b < 20; b++) {
		for (unsigned w = 0; w < 4; w++) {
			unsigned ids[16];

			clk = done_at + (w ? pause_next() : b ? 40 * MS : 0);
			for (unsigned i = 0; i < 16; i++) {
				ids[i] = obs(off, 128 * KiB);
				off += 128 * KiB;
			}
			for (unsigned i = 0; i < 16; i++) {
				clk += 50 * US;
				pf_tracker_done(tr, ids[i], clk);
			}
			done_at = clk;
			if (first == 0)
				first = ids[0];
			if (b == 0)
				continue;
			ck_assert_uint_eq(ids[15], first);
			ck_assert_uint_eq(S(first)->bursts, b);
			ck_assert_uint_eq(S(first)->batch, 8 * MiB);
		}
	}
	ck_assert_int_eq(S(first)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_uint_eq(S(first)->outstanding, 0);
}
END_TEST

static Suite *pattern_burst_suite(void)
{
	Suite *s = suite_create("pattern_burst");
	TCase *tc;

	tc = tcase_create("batch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_batch_learned);
	tcase_add_test(tc, test_batch_second_burst_wins);
	tcase_add_test(tc, test_batch_adapts);
	tcase_add_test(tc, test_batch_slow_read_no_split);
	tcase_add_test(tc, test_batch_gap_needs_idle_stream);
	tcase_add_test(tc, test_batch_strided);
	tcase_add_test(tc, test_batch_override);
	suite_add_tcase(s, tc);

	tc = tcase_create("burst gap");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_gap_adaptive_1m);
	tcase_add_test(tc, test_gap_adaptive_128k);
	tcase_add_test(tc, test_gap_compute_shrinks);
	tcase_add_test(tc, test_gap_compute_10ms);
	tcase_add_test(tc, test_gap_compute_grows);
	tcase_add_test(tc, test_gap_batch_jitter);
	tcase_add_test(tc, test_gap_first_pause);
	tcase_add_test(tc, test_gap_plain_scan);
	tcase_add_test(tc, test_gap_waves);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return pattern_run(pattern_burst_suite());
}
