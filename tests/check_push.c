/*
 * check_push.c - read-ahead pushed to the page cache (push.c): the pusher
 * gives whole fetches of a sequential stream to the push function, and the
 * tripwire pages keep the tracker following the reader, on a fake clock.
 * A reader's page cache (pc[]: pages pushed or read) lets a test read as
 * the kernel does: only the pages not in it become READs.
 */
#include <sys/uio.h>

#include "engine_harness.h"

/* ---- pushing to the page cache ----------------------------------------- */

static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t push_cond = PTHREAD_COND_INITIALIZER;
static uint64_t pushed_bytes;
static uint64_t pushed_end;	/* the end of the last push */
static int push_bad;

/* the reader's page cache: pages pushed, or read by READs */
static unsigned char pc[FSIZE / 4096];
/* the push function waits while push_hold is set (a pusher behind) */
static int push_hold;
static int push_calls;
/* bytes pushed in [late_lo, late_hi) by all but the first push call */
static uint64_t late_lo, late_hi, late_bytes;

static void t_push(void *arg, uint64_t tag, const char *path, uint64_t off,
		   const struct iovec *iov, int iovcnt)
{
	(void)arg;
	(void)path;
	pthread_mutex_lock(&push_lock);
	push_calls++;
	pthread_cond_broadcast(&push_cond);
	while (push_hold)
		pthread_cond_wait(&push_cond, &push_lock);
	if (tag != 7 || off % 4096)
		push_bad = 1;
	for (int i = 0; i < iovcnt; i++) {
		if (memcmp(iov[i].iov_base, tb.files[0].data + off,
			   iov[i].iov_len) != 0)
			push_bad = 1;
		for (uint64_t o = off; o < off + iov[i].iov_len; o += 4096)
			pc[o / 4096] = 1;
		if (push_calls > 1 && off < late_hi &&
		    off + iov[i].iov_len > late_lo) {
			uint64_t lo = off > late_lo ? off : late_lo;
			uint64_t hi = off + iov[i].iov_len;

			late_bytes += (hi < late_hi ? hi : late_hi) - lo;
		}
		off += iov[i].iov_len;
		pushed_bytes += iov[i].iov_len;
	}
	pushed_end = off;
	pthread_cond_broadcast(&push_cond);
	pthread_mutex_unlock(&push_lock);
}

/* Waits until the pusher has nothing pinned (it pushed what it had). */
static void push_idle(void)
{
	struct pf_engine_totals t;

	for (;;) {
		pf_engine_totals(eng, &t);
		if (!t.memory_inflight)
			break;
		usleep(1000);
	}
}

/* Waits until the pusher is in a push call. */
static void push_entered(void)
{
	pthread_mutex_lock(&push_lock);
	while (!push_calls)
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
}

/* Lets a held pusher go on. */
static void push_release(void)
{
	pthread_mutex_lock(&push_lock);
	push_hold = 0;
	pthread_cond_broadcast(&push_cond);
	pthread_mutex_unlock(&push_lock);
}

/*
 * A read() of [off, off + size) through the page cache: each run of pages
 * not in it is a READ (checked byte for byte), as the kernel makes them.
 * Returns the READs made.
 */
static unsigned pc_read(uint64_t off, uint64_t size)
{
	unsigned reads = 0;

	while (size) {
		uint64_t run = 0;

		pthread_mutex_lock(&push_lock);
		while (run < size && pc[(off + run) / 4096])
			run += 4096 - (off + run) % 4096;
		off += run < size ? run : size;
		size -= run < size ? run : size;
		run = 0;
		while (run < size && !pc[(off + run) / 4096])
			run += 4096 - (off + run) % 4096;
		pthread_mutex_unlock(&push_lock);
		if (run > size)
			run = size;
		if (!run)
			continue;
		read_sync(rq, off, run);
		assert_bytes(rq, off, run);
		pthread_mutex_lock(&push_lock);
		for (uint64_t o = off; o < off + run; o += 4096 - o % 4096)
			pc[o / 4096] = 1;
		pthread_mutex_unlock(&push_lock);
		reads++;
		off += run;
		size -= run;
	}
	return reads;
}

/* Starts pushing, reads the first 8 MiB of "a" in 1 MiB READs, waits for
 * the pusher thread's first push (a wedged pusher fails the test at its
 * timeout); returns the offset read to. */
static uint64_t push_start_read_8m(void)
{
	uint64_t off;

	tb.autocomplete = 1;
	pushed_bytes = 0;
	pushed_end = 0;
	push_bad = 0;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	pthread_mutex_lock(&push_lock);
	while (!pushed_bytes)
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
	return off;
}

START_TEST(test_push_and_tripwires)
{
	struct pf_engine_totals t;
	const char *js;
	uint64_t off;

	/* a sequential reader: 1 MiB READs until read-ahead is pushed, then
	 * only the READs the page cache would still send: the tripwire
	 * pages, the last page before every half batch (4 MiB of 8) */
	off = push_start_read_8m();
	/* a compute gap (longer than gap_ns) before each tripwire READ */
	for (off += 4u << 20; off <= (48u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
		assert_bytes(rq, off - 4096, 4096);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	ck_assert_uint_gt(pushed_bytes, 16u << 20);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_pushed, pushed_bytes);
	/* pushed bytes are served too (the reader reads them in its page
	 * cache): the 8 MiB of READs, the tripwire pages, and the pushes */
	ck_assert_uint_ge(t.bytes_served, (8u << 20) + t.bytes_pushed);
	/* the tracker followed the reader through the pushed bytes: one
	 * sequential stream, read-ahead up to the end of the file */
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_null(strstr(js, "\"pattern\": \"strided\""));
	free((void *)js);
	ck_assert_uint_ge(t.bytes_fetched, 56u << 20);
}
END_TEST

/*
 * Memory follows read-ahead, not bytes read: a pushed block goes back to
 * the pool once its stream read past it, and the pool reuses those
 * buffers before it maps more.  A sequential reader through 56 MiB of
 * pushed read-ahead, with a budget of 256 MiB: the blocks in use stay
 * within the windows ahead, the pool never maps anywhere near what was
 * read, nothing is fetched twice, and what is held is ahead of the reader.
 */
START_TEST(test_push_releases_consumed)
{
	struct pf_engine_totals t;
	uint64_t off, peak_used = 0;

	off = push_start_read_8m();
	for (off += 4u << 20; off <= (56u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
		assert_bytes(rq, off - 4096, 4096);
		pf_engine_totals(eng, &t);
		if (t.memory_used > peak_used)
			peak_used = t.memory_used;
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	/* the parts add up */
	ck_assert_uint_eq(t.memory_inflight + t.memory_ahead + t.memory_reread,
			  t.memory_used);
	/* nothing fetched twice: the file is 64 MiB */
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_ge(t.bytes_fetched, 56u << 20);
	ck_assert_int_eq(t.fetch_errors, 0);
	/* read-ahead of 8 MiB batches: a few windows, never the 56 MiB read
	 * (before, every pushed block stayed: memory_used grew with it);
	 * the pusher's queue is part of it (its thread may lag behind this
	 * one) */
	ck_assert_uint_le(peak_used, 48u << 20);
	ck_assert_uint_le(t.memory_mapped, 48u << 20);
	/* at the end: at most the 8 MiB left of the file ahead and the 8 MiB
	 * of first READs (before, the whole 64 MiB file) */
	ck_assert_uint_le(t.memory_used, 24u << 20);
	/* cached for re-read: at most the first READs, made before the
	 * stream was known (demand fetches) */
	ck_assert_uint_le(t.memory_reread, 8u << 20);
}
END_TEST

/*
 * The kernel dropped pushed pages the reader had not read yet (reclaim of
 * clean page cache), and the reader's read-ahead sent the READ of that hole
 * with the READ of the next tripwire page.  FUSE workers take them in any
 * order: the tripwire's, answered first, moves the frontier past the hole,
 * whose READ must still be answered from memory, not fetched again from the
 * store (a demand fetch, and a stream of its own).
 */
START_TEST(test_push_hole_after_tripwire)
{
	const uint64_t hole = (11u << 20) + 3 * 4096;
	struct pf_engine_totals t0, t;

	push_start_read_8m();
	/* [8, 12) MiB pushed and unpinned: the pusher has pushed beyond */
	pthread_mutex_lock(&push_lock);
	while (pushed_end <= (12u << 20))
		pthread_cond_wait(&push_cond, &push_lock);
	pthread_mutex_unlock(&push_lock);
	advance_ms(5);
	pf_engine_totals(eng, &t0);
	read_sync(rq, (12u << 20) - 4096, 4096);
	assert_bytes(rq, (12u << 20) - 4096, 4096);
	read_sync(rq, hole, 4096);
	assert_bytes(rq, hole, 4096);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.reads, t0.reads + 2);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_eq(t.waits, t0.waits);
	/* the bytes behind the frontier still go: the next tripwires */
	for (uint64_t off = 16u << 20; off <= (28u << 20); off += 4u << 20) {
		advance_ms(5);
		read_sync(rq, off - 4096, 4096);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_uint_le(t.memory_used, 40u << 20);
}
END_TEST

/*
 * Tripwires every half batch.  A reader of 8 MiB batches (learned, not
 * given) with a compute gap after each, through its page cache, the pusher
 * never behind: once read-ahead is pushed, each batch costs the reader two
 * READs, the tripwires in its middle and at its end, and the stream, its
 * batch and its read-ahead still follow the reader to the end of the file.
 */
START_TEST(test_tripwires_follow_reader)
{
	struct pf_engine_totals t;
	unsigned late_reads = 0;
	unsigned long long batch;
	const char *js, *bp;

	tb.autocomplete = 1;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t b = 0; b < FSIZE; b += 8u << 20) {
		unsigned n = 0;

		advance_ms(5);
		for (uint64_t off = b; off < b + (8u << 20); off += 1u << 20) {
			push_idle();
			n += pc_read(off, 1u << 20);
		}
		if (b >= (16u << 20))
			late_reads += n;
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	/* the batches after the first two: the tripwires, two READs each,
	 * and a few of the kernel's read-around past them */
	ck_assert_uint_le(late_reads, 16);
	pf_engine_totals(eng, &t);
	/* read-ahead followed the reader to the end, pushed, once */
	ck_assert_uint_ge(t.bytes_pushed, 40u << 20);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	/* the tracker still sees the reader's bursts: its batch is 8 MiB, or
	 * 9 with the read-around the batch-end tripwire's READ carries */
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"sequential\""));
	ck_assert_ptr_null(strstr(js, "\"pattern\": \"strided\""));
	bp = strstr(js, "\"batch\": ");
	ck_assert_ptr_nonnull(bp);
	batch = strtoull(bp + strlen("\"batch\": "), NULL, 10);
	ck_assert_uint_ge(batch, 8u << 20);
	ck_assert_uint_le(batch, 9u << 20);
	free((void *)js);
}
END_TEST

/*
 * A pusher behind its reader: while it is stuck in a push, the reader
 * reads on through READs (the pages are not in its page cache) to
 * 16.5 MiB.  Once the pusher goes on, what the reader read is not pushed
 * again (before, every queued fetch was: a second copy of each page, on
 * the CPU the pusher lacked), the fetch the reader is in is pushed from
 * its page on, and the reader goes on without READs but the tripwires.
 */
START_TEST(test_push_skips_what_was_read)
{
	struct pf_engine_totals t;
	unsigned reads = 0;

	tb.autocomplete = 1;
	push_hold = 1;
	late_lo = 8u << 20;
	late_hi = (16u << 20) + (512u << 10);
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	/* the pusher is in its first push, which waits */
	push_entered();
	advance_ms(5);
	for (uint64_t off = 8u << 20; off < (16u << 20); off += 1u << 20)
		ck_assert_uint_eq(pc_read(off, 1u << 20), 1);
	ck_assert_uint_eq(pc_read(16u << 20, 512u << 10), 1);
	push_release();
	push_idle();
	pthread_mutex_lock(&push_lock);
	/* nothing the reader read was pushed after the first push */
	ck_assert_uint_eq(late_bytes, 0);
	/* the rest of the fetch it is in was: [16.5 MiB, 17 MiB) */
	for (uint64_t o = late_hi; o < (17u << 20); o += 4096)
		ck_assert_int_eq(pc[o / 4096], 1);
	pthread_mutex_unlock(&push_lock);
	advance_ms(5);
	reads += pc_read(late_hi, (24u << 20) - late_hi);
	for (uint64_t b = 24u << 20; b < (40u << 20); b += 8u << 20) {
		advance_ms(5);
		for (uint64_t off = b; off < b + (8u << 20); off += 1u << 20) {
			push_idle();
			reads += pc_read(off, 1u << 20);
		}
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	/* the tripwires only: two a batch from 24 MiB on, and two to it */
	ck_assert_uint_le(reads, 6);
	pf_engine_totals(eng, &t);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	ck_assert_int_eq(t.fetch_errors, 0);
}
END_TEST

/*
 * A pusher behind a reader of a mapping: a fault at 12.25 MiB makes the
 * kernel's read-around READ [11.75, 12.75) MiB, which moves the stream's
 * frontier to 12.75 MiB.  The pages below 11.75 MiB that nobody read
 * must still be pushed when the pusher goes on: skipping all behind the
 * frontier (the trip branch's push_from()) left them to the reader's
 * faults, a READ each run of them, and, once their blocks went back to
 * the pool, a fetch of the store each.
 */
START_TEST(test_push_after_read_around)
{
	const uint64_t lo = (11u << 20) + (768u << 10);
	const uint64_t hi = lo + (1u << 20);
	unsigned reads = 0;

	tb.autocomplete = 1;
	push_hold = 1;
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t off = 0; off < (8u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	push_entered();
	advance_ms(5);
	read_sync(rq, lo, hi - lo);
	assert_bytes(rq, lo, hi - lo);
	push_release();
	push_idle();
	pthread_mutex_lock(&push_lock);
	for (uint64_t o = lo; o < hi; o += 4096)
		pc[o / 4096] = 1;
	/* [8 MiB, 11.75 MiB) was pushed, but for the tripwire pages */
	for (uint64_t o = 8u << 20; o < lo; o += 4096) {
		if ((o + 4096) % (4u << 20) == 0)
			continue;
		ck_assert_msg(pc[o / 4096], "page at %llu not pushed",
			      (unsigned long long)o);
	}
	pthread_mutex_unlock(&push_lock);
	/* the reader reads it: the tripwires at most */
	reads = pc_read(8u << 20, lo - (8u << 20));
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	ck_assert_uint_le(reads, 1);
}
END_TEST

/* ---- a reader of a mapping ---------------------------------------------- */

/* batches (8 MiB) whose fetch of the page at 1 MiB into it waits (a slow
 * fetch of the store) */
static unsigned char held[FSIZE >> 23];

static bool bio_held(const struct pf_bio *b)
{
	for (uint64_t i = 0; i < sizeof(held); i++) {
		uint64_t pg = (i << 23) + (1u << 20);

		if (held[i] && b->off <= pg && pg < b->off + bio_len(b))
			return true;
	}
	return false;
}

/* Completes the pending reads but those held; returns how many. */
static unsigned complete_unheld(void)
{
	struct pf_bio *take = NULL;
	struct pf_bio **pp;
	unsigned n = 0;

	pthread_mutex_lock(&tb.lock);
	pp = &tb.pending;
	while (*pp) {
		struct pf_bio *b = *pp;

		if (bio_held(b)) {
			pp = &b->bnext;
			continue;
		}
		*pp = b->bnext;
		b->bnext = take;
		take = b;
		tb.npending--;
	}
	pthread_mutex_unlock(&tb.lock);
	while (take) {
		struct pf_bio *b = take;

		take = b->bnext;
		complete(b);
		n++;
	}
	return n;
}

/* Waits until the pusher has pushed all it can: nothing pinned but the
 * blocks of the held reads. */
static void push_idle_held(void)
{
	struct pf_engine_totals t;
	uint64_t held_bytes;
	unsigned n;

	for (int i = 0; i < 5000; i++) {
		if (complete_unheld())
			continue;
		n = count_pending(-1, &held_bytes);
		pf_engine_totals(eng, &t);
		if (t.memory_inflight <= held_bytes + n * (64u << 10))
			return;
		usleep(1000);
	}
	ck_abort_msg("the pusher did not get through its queue");
}

/* set: a READ ahead of the sequential stream's frontier must move it to
 * the READ's end (the bytes between were pushed, or will be) */
static int check_front;
static uint64_t seq_next_off(void);

/* A READ the kernel makes for a fault: answered, checked, put in pc[]. */
static void map_read(uint64_t off, uint64_t len)
{
	uint64_t front = check_front ? seq_next_off() : 0;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, off, len, t_reply, rq);
	for (int i = 0; i < 5000 && !__atomic_load_n(&rq->done,
						     __ATOMIC_ACQUIRE); i++)
		if (!complete_unheld())
			usleep(1000);
	ck_assert_int_eq(rq->done, 1);
	assert_bytes(rq, off, len);
	if (check_front && off >= front && len == 4096)
		ck_assert_msg(seq_next_off() >= off + len,
			      "READ at %llu left the stream at %llu",
			      (unsigned long long)off,
			      (unsigned long long)seq_next_off());
	pthread_mutex_lock(&push_lock);
	for (uint64_t o = off; o < off + len; o += 4096)
		pc[o / 4096] = 1;
	pthread_mutex_unlock(&push_lock);
}

/*
 * A fault on page @pg: if it is not in the page cache, the kernel's
 * read-around, a READ of each run of pages not in it within the 1 MiB
 * around @pg (as page_cache_ra_unbounded() makes them).
 */
static void map_fault(uint64_t pg)
{
	const uint64_t ra = (1u << 20) / 4096;
	uint64_t lo = pg > ra / 2 ? pg - ra / 2 : 0;
	uint64_t hi = lo + ra < FSIZE / 4096 ? lo + ra : FSIZE / 4096;

	while (lo < hi) {
		uint64_t run = lo;
		bool in;

		pthread_mutex_lock(&push_lock);
		in = pc[pg];
		while (run < hi && !pc[run])
			run++;
		pthread_mutex_unlock(&push_lock);
		if (in)
			break;
		if (run > lo)
			map_read(lo * 4096, (run - lo) * 4096);
		lo = run + 1;
	}
}

/* The frontier of the sequential stream farthest on (0: none). */
static uint64_t seq_next_off(void)
{
	char *js = pf_engine_stats_json(eng, "t");
	const char *p = js;
	uint64_t best = 0;

	ck_assert_ptr_nonnull(js);
	while ((p = strstr(p, "\"pattern\": \"sequential\"")) != NULL) {
		const char *n = strstr(p, "\"next_offset\": ");
		uint64_t v;

		ck_assert_ptr_nonnull(n);
		v = strtoull(n + strlen("\"next_offset\": "), NULL, 10);
		if (v > best)
			best = v;
		p = n;
	}
	free(js);
	return best;
}

/*
 * A reader of a mapping, 8 MiB batches copied out with memcpy(), as glibc
 * copies when source and destination alias within a page (the mapping,
 * and a malloc()ed buffer page-aligned but for malloc's header): a batch's
 * first bytes and its last page first, then backwards, page by page.  The
 * tripwire at the end of a batch is READ first, and one fetch of the batch
 * may still be in flight then (here the one at 1 MiB into each batch from
 * the third on, completed once the last page was touched).  Every
 * tripwire READ ahead of the stream's frontier must move it there all the
 * same (the fetch in flight will be pushed).  Before, it could not: the
 * stream stayed behind, or was lost, until a lower tripwire READ came once
 * the fetch was in, a batch late for the refill, and its read-ahead ran
 * out (bench/suite.sh, mmap batches at slowfs 50 ms: 88-94% wait at
 * 13-25 MB/s; with a tripwire every half batch now and then under load,
 * with one a batch in 3 runs of 9).
 */
static void mmap_reader(void)
{
	struct pf_engine_totals t;

	memset(held + 2, 1, sizeof(held) - 2);
	ck_assert_int_eq(pf_engine_start_push(eng, t_push, NULL), 0);
	for (uint64_t b = 0; b < FSIZE; b += 8u << 20) {
		uint64_t first = b / 4096, last = (b + (8u << 20)) / 4096 - 1;

		advance_ms(40);
		push_idle_held();
		check_front = b >= 16u << 20;
		map_fault(first);
		map_fault(last);
		held[b >> 23] = 0;
		push_idle_held();
		for (uint64_t pg = last; pg-- > first;)
			map_fault(pg);
	}
	pf_engine_stop_push(eng);
	ck_assert_int_eq(push_bad, 0);
	pf_engine_totals(eng, &t);
	/* (a tripwire READ behind the frontier may find its block gone back
	 * to the pool, and fetch the page again) */
	ck_assert_uint_le(t.bytes_fetched, FSIZE + (1u << 20));
	ck_assert_int_eq(t.fetch_errors, 0);
}

START_TEST(test_push_mmap_reader)
{
	mmap_reader();
}
END_TEST

/* The same with the batch given (8 MiB): the last page of every batch is
 * a tripwire, READ while the fetch at 1 MiB into the batch is in flight
 * (main lost the stream: "READ at 37744640 left the stream at 0"). */
START_TEST(test_push_mmap_batch_given)
{
	mmap_reader();
}
END_TEST

static void setup_push(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 16, 8u << 20);
	fake_clock = 0;
}

/* the batch learned from the READs, not given */
static void setup_push_learn(void)
{
	fake_clock = 1;
	setup_with(256u << 20, 1, 16, 0);
	fake_clock = 0;
}

static Suite *push_suite(void)
{
	Suite *s = suite_create("push");
	TCase *tc;

	tc = tcase_create("push");
	tcase_add_checked_fixture(tc, setup_push, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_push_and_tripwires);
	tcase_add_test(tc, test_push_releases_consumed);
	tcase_add_test(tc, test_push_hole_after_tripwire);
	tcase_add_test(tc, test_push_skips_what_was_read);
	tcase_add_test(tc, test_push_after_read_around);
	suite_add_tcase(s, tc);

	tc = tcase_create("tripwires");
	tcase_add_checked_fixture(tc, setup_push_learn, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_tripwires_follow_reader);
	suite_add_tcase(s, tc);

	tc = tcase_create("mmap");
	tcase_add_checked_fixture(tc, setup_push_learn, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_push_mmap_reader);
	suite_add_tcase(s, tc);

	tc = tcase_create("mmap_batch");
	tcase_add_checked_fixture(tc, setup_push, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_push_mmap_batch_given);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(push_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
