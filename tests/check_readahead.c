/*
 * check_readahead.c - read-ahead planned by the engine (readahead.c):
 * sequential windows, the early window of a reader from offset zero (its
 * first half in pieces, most of the rest once they arrive) and none
 * elsewhere, waits in it that leave the depth alone, the depth against
 * a simulated store on the fake clock (grown to what Little's law asks of
 * a slow first byte, not grown when the store cannot keep up), many
 * fetches in flight (max_inflight of fetch_size, and shorter ones within
 * the same bytes), the stats file's streams.
 */
#include "engine_harness.h"
#include "../src/engine/engine_int.h"

START_TEST(test_sequential_prefetch)
{
	struct pf_engine_totals t;
	uint64_t off;

	tb.autocomplete = 1;
	for (off = 0; off < FSIZE; off += 128 << 10) {
		read_sync(rq, off, 128 << 10);
		assert_bytes(rq, off, 128 << 10);
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_gt(t.bytes_prefetched, FSIZE / 2);
	/* all but the first few READs found their bytes in memory */
	ck_assert_uint_ge(t.hits, t.reads - 8);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_eq(t.bytes_unused, 0);
}
END_TEST

/* A READ that waits for read-ahead in flight is a wait, never a hit. */
START_TEST(test_wait_for_readahead_is_not_a_hit)
{
	struct pf_engine_totals t;
	const char *js;

	/* a first READ at 0 misses, and a window is read ahead at once */
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	pf_engine_totals(eng, &t);
	ck_assert_uint_gt(t.bytes_prefetched, 256 << 10);
	/* the next READ finds its blocks in flight: it waits for them */
	pf_engine_read(ef, 128 << 10, 128 << 10, t_reply, rq2);
	ck_assert_int_eq(rq2->done, 0);
	complete_until_idle();
	ck_assert(rq->done && rq2->done);
	assert_bytes(rq, 0, 128 << 10);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[0].data + (128 << 10),
				128 << 10), 0);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.reads, 2);
	ck_assert_uint_eq(t.hits, 0);
	ck_assert_uint_eq(t.misses, 1);
	ck_assert_uint_eq(t.waits, 2);
	ck_assert_uint_eq(t.inflight_waits, 1);
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"inflight_waits\": 1,"));
	free((void *)js);
}
END_TEST

START_TEST(test_early_start_from_offset_zero)
{
	struct pf_engine_totals t;

	tb.autocomplete = 1;
	/* a first READ at offset 0: one window ahead at once */
	read_sync(rq, 0, 128 << 10);
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.bytes_prefetched, 512 << 10);
	ck_assert_uint_le(t.bytes_prefetched, 1u << 20);
}
END_TEST

/* The bytes of file "a" pending at the backend in [from, to); *n: how
 * many fetches. */
static uint64_t pending_in(uint64_t from, uint64_t to, unsigned *n)
{
	uint64_t covered = 0;

	*n = 0;
	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		if ((struct tfile *)b->file != &tb.files[0] || b->off < from ||
		    b->off >= to)
			continue;
		covered += len;
		(*n)++;
	}
	pthread_mutex_unlock(&tb.lock);
	return covered;
}

/* Completes one pending fetch of file "a" that starts below @to: 1 if
 * there was one. */
static unsigned complete_one_below(uint64_t to)
{
	struct pf_bio **pp;
	struct pf_bio *b;

	pthread_mutex_lock(&tb.lock);
	for (pp = &tb.pending; *pp && ((*pp)->off >= to ||
				       (struct tfile *)(*pp)->file !=
					       &tb.files[0]);
	     pp = &(*pp)->bnext)
		;
	b = *pp;
	if (b) {
		*pp = b->bnext;
		tb.npending--;
	}
	pthread_mutex_unlock(&tb.lock);
	if (!b)
		return 0;
	complete(b);
	return 1;
}

/*
 * The backend says the first bytes of one pending read of file 0 below @to
 * arrived (pf_bio.started), as the http backend does; each bio once.
 * Returns 1, or 0 if none was left to start.
 */
static struct pf_bio *started_bios[64];
static unsigned nstarted;

/* Was @b started (start_one_below())? */
static bool bio_started(const struct pf_bio *b)
{
	for (unsigned i = 0; i < nstarted; i++)
		if (started_bios[i] == b)
			return true;
	return false;
}

static unsigned start_one_below(uint64_t to)
{
	struct pf_bio *b = NULL;

	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *p = tb.pending; p && !b; p = p->bnext)
		if (!bio_started(p) && p->off < to &&
		    (struct tfile *)p->file == &tb.files[0])
			b = p;
	pthread_mutex_unlock(&tb.lock);
	if (!b)
		return 0;
	ck_assert_ptr_nonnull(b->started);
	ck_assert_uint_lt(nstarted, 64);
	started_bios[nstarted++] = b;
	b->started(b);
	return 1;
}

/*
 * The first half of the early window goes out in pieces of an eighth of
 * min_window (1 MiB here), all at once: the READs that follow the first
 * one are answered as their own piece lands, not when a fetch_size fetch
 * holding them does.  With fetch_size as large as min_window, the rest of
 * the window goes with them.
 */
START_TEST(test_early_window_in_pieces)
{
	uint64_t covered = 0;
	unsigned small = 0;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		covered += len;
		if (b->off < (512 << 10)) {
			/* no piece crosses a piece boundary */
			ck_assert_uint_le(len, 128 << 10);
			ck_assert_uint_le(b->off % (128 << 10) + len, 128 << 10);
			small++;
		}
	}
	/* the READ itself, then three pieces up to half the window */
	ck_assert_uint_eq(small, 4);
	/* the whole early window was asked for at once */
	ck_assert_uint_eq(covered, (1u << 20) + (128 << 10));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
}
END_TEST

/*
 * Another reader's READ in the middle of file "b", left in flight, then the
 * first READ of file 0 from offset zero: its pieces, up to @z, are all
 * that goes out (2 MiB in 512 KiB pieces and the READ).  Returns "b".
 */
static struct pf_efile *early_two_readers(uint64_t z)
{
	struct pf_efile *bf = pf_efile_new(eng, "b", 9);
	struct stat st;
	unsigned n;

	ck_assert_ptr_nonnull(bf);
	ck_assert_int_eq(pf_efile_open(bf, &st), 0);
	memset(rq2, 0, offsetof(struct treq, buf));
	pf_engine_read(bf, 5u << 20, 128 << 10, t_reply, rq2);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	ck_assert_uint_eq(pending_in(0, z, &n), z);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(pending_in(z, FSIZE, &n), 0);
	return bf;
}

/* Everything lands; both READs got their bytes; "b" is closed. */
static void early_two_readers_end(struct pf_efile *bf)
{
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
	complete_until_idle();
	ck_assert(rq2->done);
	ck_assert_int_eq(memcmp(rq2->buf, tb.files[2].data + (5u << 20),
				128 << 10), 0);
	pf_efile_close(bf);
	pf_efile_put(bf);
}

/*
 * min_window 4 MiB, fetch_size 1 MiB, another file being read: the READ
 * and the pieces (up to 2 MiB) go out, the rest of the window once the
 * last piece has landed, so that it does not take bandwidth from them
 * while other readers start too.
 */
START_TEST(test_early_second_half_waits_for_pieces)
{
	const uint64_t z = 2u << 20;
	struct pf_efile *bf = early_two_readers(z);
	unsigned n;

	/* the pieces but one land: still nothing past them */
	while (pending_in(0, z, &n) && n > 1)
		ck_assert_uint_eq(complete_one_below(z), 1);
	ck_assert_uint_eq(pending_in(z, FSIZE, &n), 0);
	/* the last piece lands: then the rest of the window */
	ck_assert_uint_eq(complete_one_below(z), 1);
	ck_assert_uint_eq(pending_in(z, FSIZE, &n),
			  (4u << 20) + (128 << 10) - z);
	early_two_readers_end(bf);
}
END_TEST

/*
 * ... or once the first bytes of every piece arrived (the backend says so:
 * pf_bio.started), one first-byte latency before they land: then their
 * bytes already take the bandwidth, and the rest of the window comes
 * behind them instead of one latency after.
 */
START_TEST(test_early_second_half_when_pieces_arrive)
{
	const uint64_t z = 2u << 20;
	struct pf_efile *bf = early_two_readers(z);
	unsigned n;

	/* all but one piece are arriving: still nothing past them */
	nstarted = 0;
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(start_one_below(z), 1);
	ck_assert_uint_eq(pending_in(z, FSIZE, &n), 0);
	/* the last one too: the rest of the window, none landed yet */
	ck_assert_uint_eq(start_one_below(z), 1);
	ck_assert_uint_eq(pending_in(0, z, &n), z);
	ck_assert_uint_eq(pending_in(z, FSIZE, &n),
			  (4u << 20) + (128 << 10) - z);
	early_two_readers_end(bf);
	/* and the window reads back whole */
	for (uint64_t off = 0; off < (4u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done)
			ck_assert_uint_gt(complete_pending(), 0);
		assert_bytes(rq, off, 128 << 10);
	}
}
END_TEST

/* Bytes of file 0's pending reads whose first bytes have not come. */
static uint64_t pending_unstarted(void)
{
	uint64_t n = 0;

	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext)
		if (!bio_started(b) && (struct tfile *)b->file == &tb.files[0])
			n += bio_len(b);
	pthread_mutex_unlock(&tb.lock);
	return n;
}

/*
 * early_two_readers(@z), then the pieces' first bytes come and they land
 * (shorter than a full fetch: still the ramp), and the reader goes on
 * through them in order, with an idle of @gap_ms (on the fake clock)
 * before its READ at @gap_at.  Returns "b".
 */
static struct pf_efile *ramp_read_pieces(uint64_t z, uint64_t gap_at,
					 unsigned gap_ms)
{
	struct pf_efile *bf = early_two_readers(z);

	nstarted = 0;
	while (start_one_below(z))
		;
	while (complete_one_below(z))
		;
	ck_assert(rq->done);
	assert_bytes(rq, 0, 128 << 10);
	for (uint64_t off = 128 << 10; off < z; off += 128 << 10) {
		if (off == gap_at)
			advance_ms(gap_ms);
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		ck_assert(rq->done);
		assert_bytes(rq, off, 128 << 10);
	}
	return bf;
}

/* The first bytes of every pending read of file 0 come. */
static void start_all(void)
{
	unsigned n;

	pending_in(0, FSIZE, &n);
	while (n--)
		start_one_below(FSIZE);
}

/*
 * A reader found sequential in its ramp (no full read-ahead fetch of its
 * own has landed) while another reader fetches: of the two windows it
 * plans, what waits for a first byte stays within one window (4 MiB here)
 * and the fetch that reached it; the rest goes out as first bytes come.
 */
START_TEST(test_ramp_holds_past_a_window_unstarted)
{
	const uint64_t z = 2u << 20;
	struct pf_efile *bf = ramp_read_pieces(z, 0, 0);
	uint64_t held;

	held = pending_unstarted();
	ck_assert_uint_gt(held, 0);
	ck_assert_uint_le(held, (4u << 20) + (1u << 20));
	/* their first bytes come: what was held back goes out */
	start_all();
	ck_assert_uint_gt(pending_unstarted(), 0);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	early_two_readers_end(bf);
}
END_TEST

/*
 * The same reader with an idle of 3 ms (over gap_ns) before its READ at
 * 1.125 MiB: a burst ended, its batch is 1.125 MiB, and the planner
 * refills when the reader has consumed a batch or has less than a window
 * planned ahead (pf_plan_ahead()), not when first bytes come: with the
 * window planned to 6 MiB, what the ramp held goes out with the reader's
 * next READ.
 */
START_TEST(test_ramp_held_refills_with_reads)
{
	const uint64_t z = 2u << 20;
	struct pf_efile *bf = ramp_read_pieces(z, 9u << 17, 3);

	ck_assert_uint_gt(pending_unstarted(), 0);
	start_all();
	ck_assert_uint_eq(pending_unstarted(), 0);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, z, 128 << 10, t_reply, rq);
	ck_assert_uint_gt(pending_unstarted(), 0);
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, z, 128 << 10);
	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	early_two_readers_end(bf);
}
END_TEST

/* A lone reader (a scan: nothing else in flight) gets its whole early
 * window at once. */
START_TEST(test_early_window_lone_reader)
{
	unsigned n;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, 128 << 10, t_reply, rq);
	ck_assert_uint_eq(pending_in(0, FSIZE, &n), (4u << 20) + (128 << 10));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, 128 << 10);
}
END_TEST

/*
 * READs that wait for read-ahead in flight while a stream is in its first
 * min_window (the early window's latency) leave its depth alone:
 * prefetch_batches windows.
 */
START_TEST(test_early_waits_keep_depth)
{
	struct pf_engine_totals t;
	char *js;
	const char *p;
	uint64_t off;

	/* fetches complete one at a time, oldest first, READs of one early
	 * piece (128 KiB): each lands in a piece still in flight */
	for (off = 0; off < (1u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done)
			ck_assert_uint_gt(complete_oldest(), 0);
		assert_bytes(rq, off, 128 << 10);
	}
	while (complete_pending())
		;
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.inflight_waits, 2);
	js = pf_engine_stats_json(eng, "test");
	ck_assert_ptr_nonnull(js);
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	p = strstr(js, "\"windows_ahead\": ");
	ck_assert_ptr_nonnull(p);
	/* all planned bytes are in: two windows ahead, not more */
	ck_assert_double_le(strtod(p + strlen("\"windows_ahead\": "), NULL),
			    2.0);
	free(js);
}
END_TEST

/*
 * A store simulated on the fake clock: every fetch the engine submits is
 * completed sim_lat_ns after it was submitted (latency: all in parallel),
 * or, with sim_serve_ns, one at a time in submission order, sim_serve_ns
 * each (a store that delivers a fixed rate, however many wait).
 */
#define SIM_MAX 512
static struct {
	struct pf_bio *bio;
	uint64_t due;
} sim[SIM_MAX];
static unsigned nsim;
static uint64_t sim_lat_ns;
static uint64_t sim_serve_ns;
static uint64_t sim_busy_until;
static unsigned sim_slow_every;	/* every Nth fetch takes 4 x sim_lat_ns */
static unsigned sim_count;

static bool sim_known(const struct pf_bio *b)
{
	for (unsigned i = 0; i < nsim; i++)
		if (sim[i].bio == b)
			return true;
	return false;
}

/* @ns pass; the fetches that are due complete. */
static void sim_step(uint64_t ns)
{
	struct pf_bio *fresh[SIM_MAX];
	unsigned nfresh = 0;
	uint64_t now;

	__atomic_add_fetch(&fake_ns, ns, __ATOMIC_RELEASE);
	now = t_now(NULL);
	pthread_mutex_lock(&tb.lock);
	/* tb.pending is newest first */
	for (struct pf_bio *b = tb.pending; b; b = b->bnext)
		if (!sim_known(b)) {
			ck_assert_uint_lt(nfresh, SIM_MAX);
			fresh[nfresh++] = b;
		}
	pthread_mutex_unlock(&tb.lock);
	while (nfresh) {
		uint64_t due = now + sim_lat_ns;

		if (sim_slow_every && ++sim_count % sim_slow_every == 0)
			due = now + 4 * sim_lat_ns;
		if (sim_serve_ns) {
			due = (sim_busy_until > now ? sim_busy_until : now) +
			      sim_serve_ns;
			sim_busy_until = due;
		}
		ck_assert_uint_lt(nsim, SIM_MAX);
		sim[nsim].bio = fresh[--nfresh];
		sim[nsim++].due = due;
	}
	for (unsigned i = 0; i < nsim;) {
		struct pf_bio *b = sim[i].bio;
		struct pf_bio **pp;

		if (sim[i].due > now) {
			i++;
			continue;
		}
		sim[i] = sim[--nsim];
		pthread_mutex_lock(&tb.lock);
		for (pp = &tb.pending; *pp != b; pp = &(*pp)->bnext)
			;
		*pp = b->bnext;
		tb.npending--;
		pthread_mutex_unlock(&tb.lock);
		complete(b);
		/* completions submit more: look again from the start */
		i = 0;
	}
}

/*
 * A reader of file "a" on the simulated store: READs of 128 KiB, and
 * @compute_us after each MiB (its batch).  Returns the depth of its
 * stream at the end.
 */
static unsigned sim_reader(unsigned compute_us)
{
	const uint64_t step = 100000;	/* 0.1 ms */
	unsigned depth = 0;

	nsim = 0;
	sim_busy_until = 0;
	sim_count = 0;
	for (uint64_t off = 0; off < FSIZE; off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done)
			sim_step(step);
		assert_bytes(rq, off, 128 << 10);
		if ((off + (128 << 10)) % (1u << 20) == 0)
			for (unsigned t = 0; t < compute_us * 1000u; t += step)
				sim_step(step);
	}
	while (nsim)
		sim_step(step);
	pthread_mutex_lock(&tb.lock);
	ck_assert_ptr_null(tb.pending);
	pthread_mutex_unlock(&tb.lock);
	for (unsigned i = 0; i < ef->nestreams; i++) {
		unsigned w =
			pf_ra_stream_plan_cfg(eng, &ef->estreams[i]).windows;

		if (ef->estreams[i].id && w > depth)
			depth = w;
	}
	return depth;
}

/*
 * A store with a 25 ms latency and no limit on parallel fetches, a
 * reader of 200 MiB/s (1 MiB batches, 5 ms compute): two windows of 1 MiB
 * are fetched too late, and its waits deepen the stream, to what Little's
 * law asks (200 MiB/s x 25 ms = 5 MiB, plus the batch the refill waits
 * for: 6 windows), not to MAX_DEPTH.
 */
START_TEST(test_depth_grows_with_latency)
{
	unsigned d;

	sim_lat_ns = 25 * 1000000ull;
	sim_serve_ns = 0;
	sim_slow_every = 0;
	d = sim_reader(5000);
	ck_assert_uint_ge(d, 5);
	ck_assert_uint_le(d, 7);
}
END_TEST

/*
 * fetch_size (4 MiB) larger than the windows (1 MiB): the read-ahead
 * fetches end at the windows, and their durations count all the same.
 */
START_TEST(test_depth_grows_big_fetch_size)
{
	unsigned d;

	sim_lat_ns = 25 * 1000000ull;
	sim_serve_ns = 0;
	sim_slow_every = 0;
	d = sim_reader(5000);
	ck_assert_uint_ge(d, 5);
	ck_assert_uint_le(d, 7);
}
END_TEST

/*
 * The same store, but one fetch in 16 takes 100 ms: the READs that wait
 * for those deepen the stream no further than the 25 ms fetches ask
 * (each such wait used to add a window, up to MAX_DEPTH).
 */
START_TEST(test_depth_capped_by_latency)
{
	unsigned d;

	sim_lat_ns = 25 * 1000000ull;
	sim_serve_ns = 0;
	sim_slow_every = 16;
	d = sim_reader(5000);
	ck_assert_uint_ge(d, 5);
	ck_assert_uint_le(d, 7);
}
END_TEST

/*
 * The same reader on a store that delivers 100 MiB/s (256 KiB fetches one
 * at a time, 2.5 ms each): its READs wait whatever the depth, and the
 * fetches only take longer the more are queued.  The two windows cover
 * the store's latency unloaded (one fetch, 2.5 ms): no window more.
 */
START_TEST(test_depth_stays_when_saturated)
{
	struct pf_engine_totals t;
	unsigned d;

	sim_lat_ns = 0;
	sim_serve_ns = 2500000;
	sim_slow_every = 0;
	d = sim_reader(5000);
	pf_engine_totals(eng, &t);
	ck_assert_uint_ge(t.inflight_waits, 16);
	ck_assert_uint_eq(d, 2);
}
END_TEST

START_TEST(test_no_early_start_elsewhere)
{
	struct pf_engine_totals t;

	tb.autocomplete = 1;
	/* a first READ in the middle of the file: nothing beyond it */
	read_sync(rq, 10u << 20, 128 << 10);
	read_sync(rq, 30u << 20, 128 << 10);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_prefetched, 0);
}
END_TEST

/* The fetches pending at the backend: how many of fetch_size (1 MiB), and
 * their bytes. */
static uint64_t pending_bytes(unsigned *full)
{
	uint64_t bytes = 0;

	*full = 0;
	pthread_mutex_lock(&tb.lock);
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		if (len == 1u << 20)
			(*full)++;
		bytes += len;
	}
	pthread_mutex_unlock(&tb.lock);
	return bytes;
}

START_TEST(test_prefetch_keeps_many_in_flight)
{
	struct pf_engine_totals t;
	uint64_t off;
	unsigned full;

	/* 8 MiB batches, 2 windows: once the stream is known, 16 MiB ahead
	 * are asked for at once, max_inflight (16) reads of fetch_size at a
	 * time; the window's shorter pieces may go beside them, within the
	 * same bytes (fetch.c) */
	for (off = 0; off < (4u << 20); off += 128 << 10) {
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, 128 << 10, t_reply, rq);
		while (!rq->done) {
			/* (a READ's own fetch may go past the bytes) */
			ck_assert_uint_le(pending_bytes(&full),
					  (16u << 20) + (128 << 10));
			ck_assert_uint_le(full, 16);
			ck_assert_uint_le(tb.npending, 4 * 16);
			ck_assert_uint_gt(complete_pending(), 0);
		}
	}
	ck_assert_uint_ge(tb.max_pending, 16);
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.inflight, 4 * 16);
}
END_TEST

START_TEST(test_stats_json)
{
	char *js;
	uint64_t off;

	tb.autocomplete = 1;
	for (off = 0; off < (16u << 20); off += 128 << 10)
		read_sync(rq, off, 128 << 10);
	js = pf_engine_stats_json(eng, "test:\"x\"");
	ck_assert_ptr_nonnull(js);
	ck_assert_ptr_nonnull(strstr(js, "\"backend\": \"test:\\\"x\\\"\""));
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_nonnull(strstr(js, "\"file\": \"a\""));
	ck_assert_ptr_nonnull(strstr(js, "\"memory_used\""));
	free(js);
}
END_TEST

/* min_window 4 MiB, on the fake clock: no READ of these tests comes after
 * an idle (gap_ns, 2 ms) that ends a burst unless the test says so; on the
 * wall clock a loaded machine made one, and the planner then refills at
 * with the reader's READs (test_ramp_held_refills_with_reads) */
static void setup_early4(void)
{
	fake_clock = 1;
	setup_min_window = 4u << 20;
	setup_with(256u << 20, 1, 16, 0);
	setup_min_window = 1u << 20;
	fake_clock = 0;
}

static void setup_prefetch_fake(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 1, 1u << 20);
	fake_clock = 0;
}

static uint64_t setup_fetch_size = 256 << 10;

/* 1 MiB batches and windows, fetch_size 256 KiB (setup_fetch_size), on the
 * fake clock */
static void setup_depth(void)
{
	struct pf_engine_cfg cfg;
	struct stat st;

	fake_clock = 1;
	tb_reset(&t_ops);
	tb_add_file("a", FSIZE, pattern_data(FSIZE, 1));
	harness_cfg(&cfg, 256u << 20, 64);
	fake_clock = 0;
	cfg.fetch_size = setup_fetch_size;
	cfg.min_window = 1u << 20;
	cfg.pattern.batch_override = 1u << 20;
	engine_start(&cfg);
	ef = pf_efile_new(eng, "a", 7);
	ck_assert_ptr_nonnull(ef);
	ck_assert_int_eq(pf_efile_open(ef, &st), 0);
}

static void setup_depth_big_fetch(void)
{
	setup_fetch_size = 4u << 20;
	setup_depth();
	setup_fetch_size = 256 << 10;
}

static Suite *readahead_suite(void)
{
	Suite *s = suite_create("readahead");
	TCase *tc;

	tc = tcase_create("prefetch");
	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sequential_prefetch);
	tcase_add_test(tc, test_stats_json);
	tcase_add_test(tc, test_early_start_from_offset_zero);
	tcase_add_test(tc, test_early_window_in_pieces);
	tcase_add_test(tc, test_wait_for_readahead_is_not_a_hit);
	tcase_add_test(tc, test_no_early_start_elsewhere);
	suite_add_tcase(s, tc);

	tc = tcase_create("early");
	tcase_add_checked_fixture(tc, setup_early4, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_early_second_half_waits_for_pieces);
	tcase_add_test(tc, test_early_second_half_when_pieces_arrive);
	tcase_add_test(tc, test_ramp_holds_past_a_window_unstarted);
	tcase_add_test(tc, test_ramp_held_refills_with_reads);
	tcase_add_test(tc, test_early_window_lone_reader);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth");
	tcase_add_checked_fixture(tc, setup_prefetch_fake, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_early_waits_keep_depth);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth_sim");
	tcase_add_checked_fixture(tc, setup_depth, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_depth_grows_with_latency);
	tcase_add_test(tc, test_depth_capped_by_latency);
	tcase_add_test(tc, test_depth_stays_when_saturated);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth_big_fetch");
	tcase_add_checked_fixture(tc, setup_depth_big_fetch, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_depth_grows_big_fetch_size);
	suite_add_tcase(s, tc);

	tc = tcase_create("inflight");
	tcase_add_checked_fixture(tc, setup_batch8, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_prefetch_keeps_many_in_flight);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(readahead_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
