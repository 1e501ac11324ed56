/*
 * pattern_harness.h - the harness the pattern suites share: a tracker driven
 * by synthesised READ traces on a fake clock (check_pattern.c the tracker,
 * streams and planner; check_pattern_match.c sequential, several readers,
 * random; check_pattern_stride.c strided; check_pattern_burst.c batches and
 * the adaptive burst gap).  Each suite is its own program, so the state
 * below is each one's own.  Expected values are exact.
 */
#ifndef PATTERN_HARNESS_H
#define PATTERN_HARNESS_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_pattern.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define US 1000ull
#define MS 1000000ull

static struct pf_tracker *tr;
static struct pf_pattern_cfg cfg;
static uint64_t clk;
static uint32_t rng;
static uint64_t done_at;	/* when the trainer's last READ was answered */
static unsigned long_pauses;	/* idles inside batches of gap_ns or more */

/* ---- harness ------------------------------------------------------------ */

static inline uint32_t rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static inline uint64_t rnd64(void)
{
	return ((uint64_t)rnd() << 24) ^ rnd();
}

static inline void mk(void)
{
	pf_tracker_free(tr);
	tr = pf_tracker_new(&cfg);
	ck_assert_ptr_nonnull(tr);
}

static inline void setup(void)
{
	pf_pattern_cfg_default(&cfg);
	tr = NULL;
	mk();
	clk = 1000 * MS;
	rng = 42;
	done_at = clk;
	long_pauses = 0;
}

static inline void teardown(void)
{
	pf_tracker_free(tr);
	tr = NULL;
}

/* A READ arrives; the clock moves on 2 us.  Returns the stream's id. */
static inline unsigned obs(uint64_t off, uint64_t len)
{
	const struct pf_stream *s = pf_tracker_observe(tr, off, len, clk);

	ck_assert_ptr_nonnull(s);
	clk += 2 * US;
	return s->id;
}

static inline void fin(unsigned id)
{
	pf_tracker_done(tr, id, clk);
	clk += 1 * US;
}

/* A synchronous READ: answered 20 us after it arrived. */
static inline unsigned rd(uint64_t off, uint64_t len)
{
	unsigned id = obs(off, len);

	clk += 20 * US;
	fin(id);
	return id;
}

static inline const struct pf_stream *S(unsigned id)
{
	const struct pf_stream *s = pf_tracker_find(tr, id);

	ck_assert_msg(s != NULL, "stream %u is gone", id);
	return s;
}

/*
 * Where reader @r of several starts: irregular distances, because readers
 * that each read a little, one after another, at equal distances are what
 * a strided reader looks like.
 */
static inline uint64_t reader_base(unsigned r)
{
	return r * GiB + (uint64_t)(r * r % 13) * 37 * MiB;
}

static inline void shuffle(unsigned *v, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = rnd() % i;
		unsigned x = v[i - 1];

		v[i - 1] = v[j];
		v[j] = x;
	}
}

/* Planned bytes for stream @s with 2 windows of 1..256 MiB. */
static inline uint64_t planned(const struct pf_stream *s, uint64_t file_size)
{
	struct pf_plan_cfg pc = { 2, 1 * MiB, 256 * MiB };
	struct pf_extent ext[64];
	unsigned n = pf_plan(s, &pc, file_size, ext, 64);
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += ext[i].len;
	return sum;
}

static inline uint64_t planned_all(uint64_t file_size)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < pf_tracker_count(tr); i++)
		sum += planned(pf_tracker_stream(tr, i), file_size);
	return sum;
}

/* Runs @s; the exit status of a suite's main(). */
static inline int pattern_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
