/*
 * check_pattern_match.c - where READs go (pattern_match.c): sequential READs
 * of 4 KiB to 1 MiB, with the kernel's out-of-order read-ahead; several
 * readers of one file (far apart, close together, answered together or one
 * at a time); random readers of large and small files (the scatter).
 */
#include "pattern_harness.h"

/* ---- sequential --------------------------------------------------------- */

static void seq_run(uint64_t len, unsigned n)
{
	unsigned id = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned got = rd((uint64_t)i * len, len);

		if (i == 0)
			id = got;
		ck_assert_uint_eq(got, id);
		ck_assert_uint_eq(pf_tracker_count(tr), 1);
		/* known from the fourth READ on */
		if (i >= 3)
			ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(S(id)->next_off, (uint64_t)(i + 1) * len);
	}
	ck_assert_uint_eq(S(id)->reads, n);
	ck_assert_uint_eq(S(id)->bytes, n * len);
	ck_assert_uint_eq(S(id)->outstanding, 0);
	/* no gap yet: the batch is the scan so far */
	ck_assert_uint_eq(S(id)->bursts, 0);
	ck_assert_uint_eq(S(id)->burst_bytes, n * len);
	ck_assert_uint_eq(S(id)->batch, n * len);
	ck_assert_uint_eq(S(id)->stride, 0);
}

START_TEST(test_seq_128k)
{
	seq_run(128 * KiB, 200);
}
END_TEST

START_TEST(test_seq_1m)
{
	seq_run(1 * MiB, 100);
}
END_TEST

START_TEST(test_seq_small_mmap_reads)
{
	/* page faults: 4 KiB .. 128 KiB READs, back to back */
	static const uint64_t sizes[] = { 4 * KiB, 16 * KiB, 128 * KiB,
					  64 * KiB, 4 * KiB, 32 * KiB };
	uint64_t off = 0;
	unsigned id = 0;

	for (unsigned i = 0; i < 60; i++) {
		uint64_t len = sizes[i % 6];
		unsigned got = rd(off, len);

		if (i == 0)
			id = got;
		ck_assert_uint_eq(got, id);
		off += len;
	}
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(S(id)->next_off, off);
}
END_TEST

/*
 * The kernel's asynchronous read-ahead: READs of groups of 4..8 shuffled,
 * the whole group in flight at once, then answered.
 */
static void reorder_groups(uint64_t len, unsigned ngroups)
{
	unsigned id = 0;
	uint64_t base = 0;

	for (unsigned g = 0; g < ngroups; g++) {
		unsigned n = 4 + rnd() % 5;
		unsigned idx[8];
		unsigned ids[8];

		for (unsigned i = 0; i < n; i++)
			idx[i] = i;
		shuffle(idx, n);
		for (unsigned i = 0; i < n; i++) {
			ids[i] = obs(base + idx[i] * len, len);
			if (g == 0 && i == 0)
				id = ids[i];
			if (g > 0) {
				ck_assert_uint_eq(ids[i], id);
				ck_assert_uint_eq(pf_tracker_count(tr), 1);
			}
		}
		if (g == 0)
			id = ids[n - 1];
		ck_assert_uint_eq(S(id)->outstanding, n);
		clk += 100 * US;
		for (unsigned i = 0; i < n; i++)
			fin(ids[i]);
		base += n * len;
		ck_assert_uint_eq(pf_tracker_count(tr), 1);
		ck_assert_uint_eq(S(id)->outstanding, 0);
		ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(S(id)->next_off, base);
		ck_assert_uint_eq(S(id)->bytes, base);
	}
}

/* The first READs arrive as 1, 3, 0, 2: READ 3 waits unmatched until the
 * stream that forms from 1 and 0 reaches it; known after four READs. */
START_TEST(test_seq_reordered_start)
{
	static const unsigned order[] = { 1, 3, 0, 2 };
	unsigned ids[4];

	for (unsigned i = 0; i < 4; i++)
		ids[i] = obs(order[i] * 128 * KiB, 128 * KiB);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_uint_eq(ids[3], pf_tracker_stream(tr, 0)->id);
	ck_assert_int_eq(S(ids[3])->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(S(ids[3])->next_off, 512 * KiB);
	ck_assert_uint_eq(S(ids[3])->reads, 4);
	ck_assert_uint_eq(S(ids[3])->outstanding, 4);
	for (unsigned i = 0; i < 4; i++)
		fin(ids[i]);
	ck_assert_uint_eq(S(ids[3])->outstanding, 0);
}
END_TEST

START_TEST(test_seq_reordered_128k)
{
	reorder_groups(128 * KiB, 60);
}
END_TEST

START_TEST(test_seq_reordered_1m)
{
	reorder_groups(1 * MiB, 40);
}
END_TEST

/*
 * Read-ahead as a pipeline: up to @depth READs in flight, the oldest
 * answered first, arrival order shuffled within blocks of 4..8, and one
 * block in four arriving in the worst order (every other READ first,
 * descending).  From the 9th READ on there is one SEQUENTIAL stream.
 */
static const unsigned pipeline_depths[] = { 4, 6, 9, 12 };

START_TEST(test_seq_reordered_pipeline)
{
	const unsigned depth = pipeline_depths[_i];
	const uint64_t len = 128 * KiB;
	unsigned order[4096];
	unsigned inflight[16];
	unsigned nin = 0;
	unsigned n = 0;
	unsigned id = 0;
	uint64_t hi = 0;

	rng = 1000 + _i;
	while (n < 4000) {
		unsigned b = 4 + rnd() % 5;
		unsigned k = 0;

		for (unsigned i = 0; i < b; i++)
			order[n + i] = n + i;
		if (rnd() % 4 == 0) {
			for (int i = (int)b - 1; i >= 0; i -= 2)
				order[n + k++] = n + (unsigned)i;
			for (int i = (int)b - 2; i >= 0; i -= 2)
				order[n + k++] = n + (unsigned)i;
		} else {
			shuffle(&order[n], b);
		}
		n += b;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned got = obs(order[i] * len, len);

		if (order[i] * len + len > hi)
			hi = order[i] * len + len;
		if (nin == depth) {
			fin(inflight[0]);
			memmove(&inflight[0], &inflight[1],
				(nin - 1) * sizeof(inflight[0]));
			nin--;
		}
		inflight[nin++] = got;
		if (i == 8)
			id = got;
		if (i < 8)
			continue;
		ck_assert_uint_eq(got, id);
		ck_assert_uint_eq(pf_tracker_count(tr), 1);
		ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(S(id)->next_off, hi);
		ck_assert_uint_eq(S(id)->outstanding, nin);
	}
	ck_assert_uint_eq(S(id)->reads, n);
	ck_assert_uint_eq(S(id)->bytes, n * len);
}
END_TEST

/*
 * Nine READs in flight, answered oldest first, and a block arriving as
 * 1, 3, 5, 7 before 0, 2, 4, 6: four equally spaced runs, each "answered"
 * before the next began if completions of the older READs were credited
 * to them.  They are not: still one SEQUENTIAL stream.
 */
START_TEST(test_seq_reordered_not_strided)
{
	static const unsigned blk[8] = { 1, 3, 5, 7, 0, 2, 4, 6 };
	const uint64_t len = 128 * KiB;
	unsigned inflight[16];
	unsigned nin = 0;
	unsigned id = 0;

	for (unsigned i = 0; i < 400; i++) {
		unsigned idx = i < 200 || (i / 8) % 2 ? i : i / 8 * 8 +
							      blk[i % 8];
		unsigned got = obs(idx * len, len);

		if (nin == 9) {
			fin(inflight[0]);
			memmove(&inflight[0], &inflight[1],
				(nin - 1) * sizeof(inflight[0]));
			nin--;
		}
		inflight[nin++] = got;
		if (i == 8)
			id = got;
		if (i < 8)
			continue;
		ck_assert_uint_eq(got, id);
		ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(pf_tracker_count(tr), 1);
	}
}
END_TEST

/* ---- several readers ---------------------------------------------------- */

START_TEST(test_two_readers_far_apart)
{
	unsigned a = 0;
	unsigned b = 0;

	for (unsigned i = 0; i < 100; i++) {
		unsigned ga = rd(i * 128 * KiB, 128 * KiB);
		unsigned gb = rd(64 * MiB + i * 128 * KiB, 128 * KiB);

		if (i == 1) {
			a = ga;
			b = gb;
			ck_assert_uint_ne(a, b);
		}
		if (i < 1)
			continue;
		ck_assert_uint_eq(ga, a);
		ck_assert_uint_eq(gb, b);
		ck_assert_uint_eq(pf_tracker_count(tr), 2);
		if (i >= 3) {
			ck_assert_int_eq(S(a)->pattern, PF_PAT_SEQUENTIAL);
			ck_assert_int_eq(S(b)->pattern, PF_PAT_SEQUENTIAL);
		}
		ck_assert_uint_eq(S(a)->next_off, (i + 1) * 128 * KiB);
		ck_assert_uint_eq(S(b)->next_off,
				  64 * MiB + (i + 1) * 128 * KiB);
	}
	ck_assert_uint_eq(S(a)->reads, 100);
	ck_assert_uint_eq(S(b)->reads, 100);
}
END_TEST

START_TEST(test_two_readers_reordered)
{
	const uint64_t len = 1 * MiB;
	uint64_t base[2] = { 0, 64 * MiB };
	unsigned id[2] = { 0, 0 };

	for (unsigned g = 0; g < 30; g++) {
		unsigned ids[2][6];
		unsigned idx[2][6];

		for (unsigned r = 0; r < 2; r++) {
			for (unsigned i = 0; i < 6; i++)
				idx[r][i] = i;
			shuffle(idx[r], 6);
		}
		/* the two readers' READs interleave */
		for (unsigned i = 0; i < 6; i++)
			for (unsigned r = 0; r < 2; r++)
				ids[r][i] = obs(base[r] + idx[r][i] * len, len);
		clk += 200 * US;
		for (unsigned i = 0; i < 6; i++)
			for (unsigned r = 0; r < 2; r++)
				fin(ids[r][i]);
		for (unsigned r = 0; r < 2; r++) {
			base[r] += 6 * len;
			if (g == 1)
				id[r] = ids[r][5];
			if (g < 1)
				continue;
			for (unsigned i = 0; i < 6; i++)
				ck_assert_uint_eq(ids[r][i], id[r]);
			ck_assert_int_eq(S(id[r])->pattern,
					 PF_PAT_SEQUENTIAL);
			ck_assert_uint_eq(S(id[r])->next_off, base[r]);
		}
		ck_assert_uint_eq(pf_tracker_count(tr), 2);
	}
	ck_assert_uint_ne(id[0], id[1]);
}
END_TEST

/*
 * Eight workers of one DataLoader, each reading its own region, their
 * READs interleaved.  @apart: distance of the regions; @len: READ size;
 * @serial: each READ answered before the next arrives (a fast cache), else
 * a round's READs are in flight together.
 */
static void eight_readers(uint64_t apart, uint64_t len, int serial,
			  unsigned rounds)
{
	unsigned id[8] = { 0 };

	for (unsigned round = 0; round < rounds; round++) {
		unsigned got[8];

		for (unsigned w = 0; w < 8; w++) {
			uint64_t off = w * apart + round * len;

			got[w] = serial ? rd(off, len) : obs(off, len);
		}
		clk += 100 * US;
		if (!serial)
			for (unsigned w = 0; w < 8; w++)
				fin(got[w]);
		if (round < 3)
			continue;
		for (unsigned w = 0; w < 8; w++) {
			if (round == 3)
				id[w] = got[w];
			ck_assert_uint_eq(got[w], id[w]);
			ck_assert_int_eq(S(id[w])->pattern,
					 PF_PAT_SEQUENTIAL);
			ck_assert_uint_eq(S(id[w])->next_off,
					  w * apart + (round + 1) * len);
			for (unsigned v = 0; v < w; v++)
				ck_assert_uint_ne(id[v], id[w]);
		}
		ck_assert_uint_eq(pf_tracker_count(tr), 8);
	}
}

START_TEST(test_eight_readers_far)
{
	eight_readers(256 * MiB, 128 * KiB, 0, 40);
}
END_TEST

START_TEST(test_eight_readers_4m_apart)
{
	/* regions closer than reorder_bytes */
	eight_readers(4 * MiB, 128 * KiB, 0, 30);
}
END_TEST

START_TEST(test_eight_readers_4m_apart_serial)
{
	/* answered one at a time the first READs look like one strided
	 * reader; the next round must undo that */
	eight_readers(4 * MiB, 128 * KiB, 1, 30);
}
END_TEST

START_TEST(test_eight_readers_far_serial_1m)
{
	eight_readers(100 * MiB, 1 * MiB, 1, 30);
}
END_TEST

START_TEST(test_eight_readers_6m_apart_1m)
{
	/* 1 MiB READs: the next region is within read-ahead reach, but the
	 * worker's own second READ continues its first exactly */
	eight_readers(6 * MiB, 1 * MiB, 0, 5);
}
END_TEST

/* As many readers as streams, irregularly apart, answered one at a time:
 * each reader's READs are 31 others apart, yet all become sequential. */
START_TEST(test_many_readers_serial)
{
	unsigned id[32] = { 0 };

	for (unsigned round = 0; round < 40; round++) {
		for (unsigned r = 0; r < 32; r++) {
			unsigned got = rd(reader_base(r) + round * 128 * KiB,
					  128 * KiB);

			if (round == 8)
				id[r] = got;
			if (round >= 8)
				ck_assert_uint_eq(got, id[r]);
		}
	}
	ck_assert_uint_eq(pf_tracker_count(tr), 32);
	for (unsigned r = 0; r < 32; r++) {
		ck_assert_int_eq(S(id[r])->pattern, PF_PAT_SEQUENTIAL);
		ck_assert_uint_eq(S(id[r])->next_off,
				  reader_base(r) + 40 * 128 * KiB);
	}
}
END_TEST

START_TEST(test_exact_frontier_wins)
{
	unsigned a = 0;
	unsigned b = 0;
	unsigned got;

	/* B reads from 4 MiB, then A from 0 up to 3.875 MiB: a READ at A's
	 * frontier that ends at B's start is A's */
	for (unsigned i = 0; i < 4; i++)
		b = rd(4 * MiB + i * 128 * KiB, 128 * KiB);
	for (unsigned i = 0; i < 31; i++) {
		a = rd(i * 128 * KiB, 128 * KiB);
		ck_assert_uint_ne(a, b);
	}
	got = rd(31 * 128 * KiB, 128 * KiB);
	ck_assert_uint_eq(got, a);
	ck_assert_uint_eq(S(a)->next_off, 4 * MiB);
	ck_assert_uint_eq(S(b)->next_off, 4 * MiB + 512 * KiB);
	/* B's next READ is B's, though within reach of A's frontier */
	ck_assert_uint_eq(rd(4 * MiB + 512 * KiB, 128 * KiB), b);
	ck_assert_uint_eq(pf_tracker_count(tr), 2);
	ck_assert_uint_eq(S(a)->reads, 32);
	ck_assert_uint_eq(S(b)->reads, 5);
}
END_TEST

/*
 * B re-reads [2, 4) MiB behind A (who reached 4 MiB) and then jumps ahead
 * to 6 MiB: both A's frontier and the end of B's first run are at 4 MiB.
 * A READ there is A's, though B was used more recently.
 */
START_TEST(test_exact_beats_touch)
{
	unsigned a = 0;
	unsigned b = 0;

	for (unsigned i = 0; i < 32; i++)
		a = rd(i * 128 * KiB, 128 * KiB);
	for (unsigned i = 0; i < 16; i++)
		b = rd(2 * MiB + i * 128 * KiB, 128 * KiB);
	ck_assert_uint_ne(a, b);
	ck_assert_int_eq(S(b)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(rd(6 * MiB, 128 * KiB), b);
	ck_assert_uint_eq(S(b)->next_off, 6 * MiB + 128 * KiB);
	ck_assert_uint_eq(rd(4 * MiB, 128 * KiB), a);
	ck_assert_uint_eq(S(a)->next_off, 4 * MiB + 128 * KiB);
}
END_TEST

START_TEST(test_rereader_gets_own_stream)
{
	unsigned a = 0;
	unsigned b = 0;

	/* A scans 4 MiB; B then reads the same bytes (direct I/O) */
	for (unsigned i = 0; i < 32; i++)
		a = rd(i * 128 * KiB, 128 * KiB);
	for (unsigned i = 0; i < 16; i++) {
		unsigned got = rd(i * 128 * KiB, 128 * KiB);

		ck_assert_uint_ne(got, a);
		if (i == 1)
			b = got;
		if (i >= 1)
			ck_assert_uint_eq(got, b);
	}
	ck_assert_int_eq(S(b)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(S(b)->next_off, 2 * MiB);
	ck_assert_uint_eq(S(a)->next_off, 4 * MiB);
	ck_assert_uint_eq(S(a)->reads, 32);
}
END_TEST

/* ---- random ------------------------------------------------------------- */

START_TEST(test_random_4k)
{
	const uint64_t fsize = 10 * GiB;
	unsigned first_random = 0;

	for (unsigned i = 0; i < 2000; i++) {
		uint64_t off = (rnd64() % (fsize / 4096)) * 4096;
		unsigned id = rd(off, 4096);

		if (!first_random && S(id)->pattern == PF_PAT_RANDOM)
			first_random = i + 1;
		if (i >= 7) {
			ck_assert_int_eq(S(id)->pattern, PF_PAT_RANDOM);
			ck_assert_uint_eq(planned(S(id), fsize), 0);
		}
		ck_assert_uint_eq(planned_all(fsize), 0);
	}
	ck_assert_uint_eq(first_random, 4);
	/* one stream holds them all */
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
}
END_TEST

/*
 * Random READs of files only some hundreds of READs long: neighbours
 * happen by chance here.  What an engine would fetch ahead and never
 * have read must stay small (nothing, for these).
 */
static void random_waste(uint64_t fsize, uint64_t len, unsigned nreads)
{
	uint64_t pages = fsize / 4096;
	unsigned char *st = calloc(pages, 1);	/* 1 read, 2 fetched ahead */
	uint64_t demanded = 0;
	uint64_t wasted = 0;

	ck_assert_ptr_nonnull(st);
	for (unsigned i = 0; i < nreads; i++) {
		uint64_t off = (rnd() % (fsize / len)) * len;
		struct pf_plan_cfg pc = { 2, 4 * MiB, 256 * MiB };
		struct pf_extent ext[64];
		const struct pf_stream *s;
		unsigned n;
		unsigned id = rd(off, len);

		for (uint64_t p = off / 4096; p < (off + len) / 4096; p++) {
			if (!(st[p] & 1))
				demanded += 4096;
			st[p] |= 1;
		}
		s = S(id);
		if (i >= 7)
			ck_assert_int_ne(s->pattern, PF_PAT_SEQUENTIAL);
		n = pf_plan(s, &pc, fsize, ext, 64);
		for (unsigned k = 0; k < n; k++)
			for (uint64_t p = ext[k].off / 4096;
			     p < (ext[k].off + ext[k].len) / 4096; p++)
				if (!st[p])
					st[p] = 2;
	}
	for (uint64_t p = 0; p < pages; p++)
		if (st[p] == 2)
			wasted += 4096;
	free(st);
	ck_assert_uint_eq(wasted, 0);
	ck_assert_uint_gt(demanded, 0);
	ck_assert_uint_le(pf_tracker_count(tr), 32);
}

START_TEST(test_random_small_files)
{
	random_waste(64 * MiB, 4 * KiB, 16384);
	mk();
	random_waste(64 * MiB, 128 * KiB, 512);
	mk();
	random_waste(256 * MiB, 128 * KiB, 2000);
	mk();
	random_waste(1 * GiB, 1 * MiB, 300);
}
END_TEST

/*
 * Random READs of small files over 40 fixed seeds: how many READs found a
 * stream that asked for read-ahead.  A few chance runs of neighbours are
 * unavoidable here; the bounds are the measured counts with some margin,
 * so a weaker defence against chance shows.
 */
static unsigned random_planning(uint64_t fsize, uint64_t len, unsigned nreads)
{
	unsigned n = 0;

	mk();
	for (unsigned i = 0; i < nreads; i++) {
		uint64_t off = (rnd() % (fsize / len)) * len;
		unsigned id = rd(off, len);

		if (planned(S(id), fsize))
			n++;
	}
	return n;
}

START_TEST(test_random_small_files_many_seeds)
{
	unsigned a = 0;
	unsigned b = 0;
	unsigned c = 0;

	for (unsigned seed = 1; seed <= 40; seed++) {
		rng = seed * 7919;
		a += random_planning(64 * MiB, 128 * KiB, 512);
		b += random_planning(256 * MiB, 1 * MiB, 256);
		c += random_planning(1 * GiB, 1 * MiB, 1024);
	}
	/* of 20480, 10240 and 40960 READs */
	ck_assert_uint_le(a, 40);
	ck_assert_uint_le(b, 80);
	ck_assert_uint_le(c, 24);
}
END_TEST

START_TEST(test_random_async)
{
	const uint64_t fsize = 100 * GiB;
	unsigned ids[4];

	/* four random READs in flight at a time */
	for (unsigned i = 0; i < 400; i++) {
		for (unsigned k = 0; k < 4; k++)
			ids[k] = obs((rnd64() % (fsize / 65536)) * 65536,
				     64 * KiB);
		ck_assert_int_eq(S(ids[3])->pattern, PF_PAT_RANDOM);
		clk += 300 * US;
		for (unsigned k = 0; k < 4; k++)
			fin(ids[k]);
		ck_assert_uint_eq(planned_all(fsize), 0);
	}
	ck_assert_uint_eq(S(ids[0])->outstanding, 0);
}
END_TEST

START_TEST(test_random_beside_sequential)
{
	const uint64_t fsize = 10 * GiB;
	unsigned seq = 0;

	for (unsigned i = 0; i < 300; i++) {
		unsigned got = rd(1 * GiB + i * 128 * KiB, 128 * KiB);

		if (i == 1)
			seq = got;
		if (i >= 1)
			ck_assert_uint_eq(got, seq);
		for (unsigned k = 0; k < 3; k++) {
			/* (not right ahead of the sequential reader, where a
			 * READ is read-ahead: see test_random_intrusion) */
			uint64_t page = rnd64() % ((fsize - 2 * GiB) / 4096);
			unsigned r = rd(2 * GiB + page * 4096, 4096);

			ck_assert_uint_ne(r, seq);
			if (i >= 2)
				ck_assert_int_eq(S(r)->pattern,
						 PF_PAT_RANDOM);
		}
		if (i >= 3) {
			ck_assert_int_eq(S(seq)->pattern, PF_PAT_SEQUENTIAL);
			ck_assert_uint_eq(S(seq)->next_off,
					  1 * GiB + (i + 1) * 128 * KiB);
		}
	}
	ck_assert_uint_eq(S(seq)->reads, 300);
	ck_assert_uint_eq(pf_tracker_count(tr), 2);
	/* only the sequential stream asks for read-ahead */
	ck_assert_uint_eq(planned_all(fsize), planned(S(seq), fsize));
}
END_TEST

/* A random READ just ahead of a sequential reader looks like read-ahead
 * that arrived early; the reader goes on through it unharmed. */
START_TEST(test_random_intrusion)
{
	unsigned id = 0;

	for (unsigned i = 0; i < 10; i++)
		id = rd(i * 128 * KiB, 128 * KiB);
	ck_assert_uint_eq(rd(1 * MiB + 300 * KiB, 4096), id);
	ck_assert_uint_eq(S(id)->next_off, 1 * MiB + 304 * KiB);
	for (unsigned i = 10; i < 20; i++) {
		ck_assert_uint_eq(rd(i * 128 * KiB, 128 * KiB), id);
		ck_assert_int_eq(S(id)->pattern, PF_PAT_SEQUENTIAL);
	}
	ck_assert_uint_eq(S(id)->next_off, 20 * 128 * KiB);
	ck_assert_uint_eq(pf_tracker_count(tr), 1);
	ck_assert_uint_eq(S(id)->reads, 21);
}
END_TEST

/* Once a random reader has stopped, new readers are learned as fast as
 * ever: its leftovers do not keep the tracker wary. */
START_TEST(test_after_random_phase)
{
	unsigned seq = 0;
	unsigned str = 0;

	for (unsigned i = 0; i < 300; i++)
		rd((rnd64() % (10 * GiB / 4096)) * 4096, 4096);
	/* a sequential reader: known from its fourth READ */
	for (unsigned i = 0; i < 200; i++) {
		seq = rd(20 * GiB + i * MiB, MiB);
		if (i >= 3)
			ck_assert_int_eq(S(seq)->pattern, PF_PAT_SEQUENTIAL);
	}
	/* a strided reader (rank 1 of 4, 1 MiB records as 8 READs): with
	 * the random READs long gone, three records tell */
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned i = 0; i < 8; i++)
			str = rd(30 * GiB + MiB + k * 4 * MiB +
				 i * 128 * KiB, 128 * KiB);
		clk += 100 * US;
	}
	ck_assert_int_eq(S(str)->pattern, PF_PAT_STRIDED);
	ck_assert_uint_eq(S(str)->next_off, 30 * GiB + 13 * MiB);
	ck_assert_int_eq(S(seq)->pattern, PF_PAT_SEQUENTIAL);
}
END_TEST

START_TEST(test_random_spares_streams)
{
	const uint64_t fsize = 10 * GiB;
	unsigned a = 0;
	unsigned b = 0;

	cfg.max_streams = 3;
	mk();
	for (unsigned i = 0; i < 8; i++) {
		a = rd(i * 128 * KiB, 128 * KiB);
		b = rd(5 * GiB + i * 128 * KiB, 128 * KiB);
	}
	/* random READs from 6 GiB on: none within reach of a and b */
	for (unsigned i = 0; i < 1000; i++)
		rd(6 * GiB + (rnd64() % ((fsize - 6 * GiB) / 4096)) * 4096,
		   4096);
	ck_assert_uint_eq(pf_tracker_count(tr), 3);
	ck_assert_int_eq(S(a)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_int_eq(S(b)->pattern, PF_PAT_SEQUENTIAL);
	ck_assert_uint_eq(rd(8 * 128 * KiB, 128 * KiB), a);
	ck_assert_uint_eq(rd(5 * GiB + 8 * 128 * KiB, 128 * KiB), b);
	ck_assert_uint_eq(S(a)->next_off, 9 * 128 * KiB);
	ck_assert_uint_eq(S(b)->next_off, 5 * GiB + 9 * 128 * KiB);
}
END_TEST

static Suite *pattern_match_suite(void)
{
	Suite *s = suite_create("pattern_match");
	TCase *tc;

	tc = tcase_create("sequential");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_seq_128k);
	tcase_add_test(tc, test_seq_1m);
	tcase_add_test(tc, test_seq_small_mmap_reads);
	tcase_add_test(tc, test_seq_reordered_start);
	tcase_add_test(tc, test_seq_reordered_not_strided);
	tcase_add_test(tc, test_seq_reordered_128k);
	tcase_add_test(tc, test_seq_reordered_1m);
	tcase_add_loop_test(tc, test_seq_reordered_pipeline, 0,
			    sizeof(pipeline_depths) /
				    sizeof(pipeline_depths[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("readers");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_two_readers_far_apart);
	tcase_add_test(tc, test_two_readers_reordered);
	tcase_add_test(tc, test_eight_readers_far);
	tcase_add_test(tc, test_eight_readers_4m_apart);
	tcase_add_test(tc, test_eight_readers_4m_apart_serial);
	tcase_add_test(tc, test_eight_readers_far_serial_1m);
	tcase_add_test(tc, test_eight_readers_6m_apart_1m);
	tcase_add_test(tc, test_many_readers_serial);
	tcase_add_test(tc, test_exact_frontier_wins);
	tcase_add_test(tc, test_exact_beats_touch);
	tcase_add_test(tc, test_rereader_gets_own_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_random_4k);
	tcase_add_test(tc, test_random_small_files);
	tcase_add_test(tc, test_random_small_files_many_seeds);
	tcase_add_test(tc, test_random_async);
	tcase_add_test(tc, test_random_beside_sequential);
	tcase_add_test(tc, test_random_intrusion);
	tcase_add_test(tc, test_after_random_phase);
	tcase_add_test(tc, test_random_spares_streams);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return pattern_run(pattern_match_suite());
}
