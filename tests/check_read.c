/*
 * check_read.c - the READ path (read.c) with READs as -o direct_io sends
 * them: of the reader's own sizes, ending anywhere in a block (a buffer
 * from malloc() sits 16 bytes past a page boundary, so a 1 MiB read()
 * comes as READs of 1 MiB - 16 and 16 bytes).  Read-ahead must not wait
 * for the demand fetch of the block such a READ ends in, nor end its
 * first window off a block boundary; a reader at random offsets must not
 * get whole blocks it did not ask for, and a random stream's miss fetches
 * its READ's pages, not fetch_size.  With read_timeout_ns (an object
 * store's request_timeout) a READ still waiting then gets EIO
 * (read_deadline.c), and the READs that would fetch again a range whose
 * fetch timed out get EIO at once, until that time has passed again.
 */
#include "engine_harness.h"

/* Bytes of the pending bios that start at or after @from. */
static uint64_t pending_from(uint64_t from)
{
	uint64_t n = 0;

	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		if (b->off < from)
			continue;
		for (int i = 0; i < b->iovcnt; i++)
			n += b->iov[i].iov_len;
	}
	return n;
}

/* The pending bio that holds byte @off, its end in *end; false if none. */
static bool pending_holds(uint64_t off, uint64_t *end)
{
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		if (b->off <= off && off < b->off + len) {
			*end = b->off + len;
			return true;
		}
	}
	return false;
}

/*
 * The first READ of a file ends 16 bytes short of a block: the early
 * window goes out with its demand fetch, not once that fetch is back.
 */
START_TEST(test_unaligned_first_read_reads_ahead_at_once)
{
	const size_t size = (128 << 10) - 16;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, size, t_reply, rq);
	ck_assert_int_eq(rq->done, 0);
	/* min_window is 1 MiB here: its rest is in flight already */
	ck_assert_uint_ge(pending_from(128 << 10), (1u << 20) - (128 << 10));
	/* and it ends at a block boundary, where the next window starts:
	 * no fetch of the 16 bytes left over */
	for (struct pf_bio *b = tb.pending; b; b = b->bnext) {
		uint64_t len = 0;

		for (int i = 0; i < b->iovcnt; i++)
			len += b->iov[i].iov_len;
		ck_assert_uint_eq((b->off + len) % (64 << 10), 0);
	}
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, size);
	/* the 16 bytes and the next READ: no fetch of their own */
	read_sync(rq, size, 16);
	assert_bytes(rq, size, 16);
	read_sync(rq, 128 << 10, size);
	assert_bytes(rq, 128 << 10, size);
}
END_TEST

/*
 * A READ that ends in the middle of a block, away from a page boundary:
 * its demand fetch takes that block whole, and read-ahead goes on from
 * the next block at once.
 */
START_TEST(test_demand_fetch_takes_the_last_block_whole)
{
	const size_t size = 100000;	/* in block 1 (64 KiB blocks) */
	uint64_t end = 0;

	memset(rq, 0, offsetof(struct treq, buf));
	pf_engine_read(ef, 0, size, t_reply, rq);
	ck_assert(pending_holds(size, &end));
	ck_assert_uint_ge(end, 128 << 10);
	ck_assert_uint_ge(pending_from(128 << 10), (1u << 20) - (128 << 10));
	while (!rq->done)
		ck_assert_uint_gt(complete_pending(), 0);
	assert_bytes(rq, 0, size);
	read_sync(rq, size, size);
	assert_bytes(rq, size, size);
}
END_TEST

/* A READ far into the file, of a stream not read ahead: only its pages. */
START_TEST(test_random_read_fetches_its_pages_only)
{
	const uint64_t off = (10u << 20) + 1000;
	const size_t size = 3000;
	struct pf_engine_totals t;

	read_sync(rq, off, size);
	assert_bytes(rq, off, size);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_prefetched, 0);
	ck_assert_uint_eq(tb.bytes, 4096);
}
END_TEST

/*
 * A sequential reader's READs answered read-ahead the kernel put in the
 * page cache ahead of the reader; the kernel dropped a page of it before
 * the reader got there (reclaim of clean page cache), and the READ of that
 * hole comes after READs beyond it: it is answered from memory, not
 * fetched again from the store, and the blocks behind still go.
 */
START_TEST(test_reread_of_dropped_page)
{
	struct pf_engine_totals t0, t;

	tb.autocomplete = 1;
	for (uint64_t off = 0; off < (24u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	pf_engine_totals(eng, &t0);
	read_sync(rq, (23u << 20) + 3 * 4096, 4096);
	assert_bytes(rq, (23u << 20) + 3 * 4096, 4096);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_eq(t.waits, t0.waits);
	for (uint64_t off = 24u << 20; off < (56u << 20); off += 1u << 20)
		read_sync(rq, off, 1u << 20);
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.misses, t0.misses);
	ck_assert_uint_le(t.bytes_fetched, FSIZE);
	/* a window or two ahead, not the 56 MiB read */
	ck_assert_uint_le(t.memory_used, 32u << 20);
}
END_TEST

/* The backend's submits, and the bytes the engine had planned ahead,
 * when the last READ was answered. */
static unsigned submits_at_reply;
static uint64_t planned_at_reply;

static void t_reply_counted(void *req, const struct iovec *iov, int iovcnt,
			    int err)
{
	struct pf_engine_totals t;

	pf_engine_totals(eng, &t);
	submits_at_reply = tb.submits;
	planned_at_reply = t.bytes_prefetched;
	t_reply(req, iov, iovcnt, err);
}

/*
 * A READ whose bytes are in memory is answered before the fetches it
 * plans go to the backend: its reader waits for nothing they bring (a
 * tripwire READ that refills the windows waited for their submits); and
 * before they are even planned: planning the next windows took 0.1-0.2 ms
 * when a tripwire READ moved them on, and its reader waited for that
 * (read.c, plan_after_reply()).
 */
START_TEST(test_ready_read_answered_before_its_fetches)
{
	const size_t size = 128 << 10;
	unsigned submitted = 0, before_submits = 0;
	unsigned planned = 0, before_plan = 0;

	for (uint64_t off = 0; off < (32u << 20); off += size) {
		unsigned s0 = tb.submits;
		struct pf_engine_totals t0, t1;

		pf_engine_totals(eng, &t0);
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, size, t_reply_counted, rq);
		pf_engine_totals(eng, &t1);
		if (rq->done && tb.submits > s0) {
			/* answered at once, and it planned fetches */
			submitted++;
			if (submits_at_reply == s0)
				before_submits++;
		}
		if (rq->done && t1.misses == t0.misses &&
		    t1.bytes_prefetched > t0.bytes_prefetched) {
			/* answered at once, and it planned more */
			planned++;
			if (planned_at_reply == t0.bytes_prefetched)
				before_plan++;
		}
		while (!rq->done)
			ck_assert_uint_gt(complete_pending(), 0);
		assert_bytes(rq, off, size);
		complete_pending();	/* read-ahead lands: the next READ hits */
	}
	ck_assert_uint_gt(submitted, 0);
	ck_assert_uint_eq(before_submits, submitted);
	ck_assert_uint_gt(planned, 0);
	ck_assert_uint_eq(before_plan, planned);
}
END_TEST

/*
 * A reader at random offsets of a file that fits no cache (the fill does
 * not take it): every miss fetches its READ's pages, one backend read of
 * them, neither fetch_size (4 MiB here) nor a block more.  The READs are
 * as the kernel sends a memmap reader's page faults (its read-around:
 * 128 KiB around the fault) and as a reader of small records sends them.
 */
static void setup_random(void)
{
	struct pf_engine_cfg cfg;
	struct stat st;

	tb_reset(&t_ops);
	tb_add_file("a", FSIZE, pattern_data(FSIZE, 1));
	harness_cfg(&cfg, 16u << 20, 16);
	cfg.fetch_size = 4u << 20;
	cfg.fill = 1;
	engine_start(&cfg);
	ef = pf_efile_new(eng, "a", 7);
	ck_assert_ptr_nonnull(ef);
	ck_assert_int_eq(pf_efile_open(ef, &st), 0);
}

START_TEST(test_random_miss_fetches_its_read)
{
	uint64_t asked = 0;
	uint32_t x = 7;
	struct pf_engine_totals t;
	char *js;

	/* each READ in its own MiB of the file, in a shuffled order, so
	 * that no READ finds another's bytes */
	for (unsigned i = 0; i < 64; i++) {
		unsigned slot = (i * 37 + 5) % 64;
		bool small = i % 4 == 3;
		uint64_t off, lo, hi, bytes;
		size_t size;
		unsigned of_len = 0;

		x = x * 1103515245u + 12345u;
		off = (uint64_t)slot << 20;
		if (small) {
			off += x % (512u << 10);
			size = 3000;
		} else {
			off += (x % 128) * 4096;
			size = 128u << 10;
		}
		lo = off & ~4095ull;
		hi = (off + size + 4095) & ~4095ull;
		memset(rq, 0, offsetof(struct treq, buf));
		pf_engine_read(ef, off, size, t_reply, rq);
		ck_assert_uint_eq(count_pending_len(0, &bytes, hi - lo,
						    &of_len), 1);
		ck_assert_uint_eq(of_len, 1);
		ck_assert_uint_eq(tb.pending->off, lo);
		complete_pending();
		ck_assert_int_eq(rq->done, 1);
		assert_bytes(rq, off, size);
		asked += hi - lo;
	}
	pf_engine_totals(eng, &t);
	ck_assert_uint_eq(t.bytes_fetched, asked);
	ck_assert_uint_eq(t.bytes_prefetched, 0);
	js = pf_engine_stats_json(eng, "t");
	ck_assert_ptr_nonnull(strstr(js, "\"pattern\": \"random\""));
	ck_assert_ptr_nonnull(strstr(js, "\"state\": \"too_big\""));
	free(js);
}
END_TEST

static void setup_deadline(void)
{
	fake_clock = 1;
	setup_read_timeout_ns = 15000000000ull;
	setup_with(256u << 20, 0, 16, 0);
}

/* Waits (up to 5 s: the deadline thread looks every 100 ms) for @r. */
static bool answered(struct treq *r)
{
	for (int i = 0; i < 5000; i++) {
		if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			return true;
		usleep(1000);
	}
	return false;
}

START_TEST(test_read_waits_no_longer_than_its_deadline)
{
	memset(rq, 0, offsetof(struct treq, buf));
	/* the fetch stays pending: a source that never answers */
	pf_engine_read(ef, 0, 4096, t_reply, rq);
	advance_ms(14000);
	usleep(300000);
	ck_assert_int_eq(__atomic_load_n(&rq->done, __ATOMIC_ACQUIRE), 0);
	advance_ms(1001);
	ck_assert(answered(rq));
	ck_assert_int_eq(rq->err, EIO);
	/* the fetch goes on; once in, the next READ has its bytes */
	complete_pending();
	read_sync(rq, 0, 4096);
	ck_assert_int_eq(rq->err, 0);
	assert_bytes(rq, 0, 4096);
}
END_TEST

START_TEST(test_timed_out_range_fails_at_once)
{
	unsigned submits;

	tb.fail_next = ETIMEDOUT;
	read_sync(rq, 0, 65536);
	ck_assert_int_eq(rq->err, EIO);
	/* the kernel's retry of the READ, page by page: EIO, no refetch */
	submits = tb.submits;
	read_sync(rq, 4096, 4096);
	ck_assert_int_eq(rq->err, EIO);
	ck_assert_uint_eq(tb.submits, submits);
	/* another range is read */
	read_sync(rq, 32u << 20, 4096);
	ck_assert_int_eq(rq->err, 0);
	/* once the time has passed again, the range is fetched again */
	advance_ms(15001);
	submits = tb.submits;
	read_sync(rq, 0, 4096);
	ck_assert_int_eq(rq->err, 0);
	assert_bytes(rq, 0, 4096);
	ck_assert_uint_gt(tb.submits, submits);
}
END_TEST

static Suite *read_suite(void)
{
	Suite *s = suite_create("read");
	TCase *tc;

	tc = tcase_create("unaligned");
	tcase_add_checked_fixture(tc, setup_prefetch, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_unaligned_first_read_reads_ahead_at_once);
	tcase_add_test(tc, test_demand_fetch_takes_the_last_block_whole);
	tcase_add_test(tc, test_random_read_fetches_its_pages_only);
	tcase_add_test(tc, test_ready_read_answered_before_its_fetches);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_add_checked_fixture(tc, setup_random, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_random_miss_fetches_its_read);
	suite_add_tcase(s, tc);

	tc = tcase_create("dropped");
	tcase_add_checked_fixture(tc, setup_batch8, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_reread_of_dropped_page);
	suite_add_tcase(s, tc);

	tc = tcase_create("deadline");
	tcase_add_checked_fixture(tc, setup_deadline, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_read_waits_no_longer_than_its_deadline);
	tcase_add_test(tc, test_timed_out_range_fails_at_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(read_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
