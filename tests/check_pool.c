/*
 * check_pool.c - the buffer pool: bounded, reused, never given back, and
 * its first buffers faulted in ahead of need.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pf_pool.h"

START_TEST(test_bounds_and_reuse)
{
	struct pf_pool *p;
	void *bufs[100];
	void *again;

	ck_assert_int_eq(pf_pool_new(65536, 100, &p), 0);
	ck_assert_uint_eq(pf_pool_buf_size(p), 65536);
	ck_assert_uint_eq(pf_pool_allocated(p), 0); /* lazy */
	ck_assert_uint_eq(pf_pool_resident(p), 0);
	for (int i = 0; i < 100; i++) {
		bufs[i] = pf_pool_get(p);
		ck_assert_ptr_nonnull(bufs[i]);
		/* page aligned and writable over the whole size */
		ck_assert_uint_eq((uintptr_t)bufs[i] % 4096, 0);
		memset(bufs[i], i, 65536);
	}
	ck_assert_ptr_null(pf_pool_get(p)); /* the budget holds */
	ck_assert_uint_eq(pf_pool_in_use(p), 100);
	for (int i = 0; i < 100; i++) {
		unsigned char *b = bufs[i];

		ck_assert(b[0] == (unsigned char)i && b[65535] == b[0]);
		for (int j = 0; j < i; j++)
			ck_assert_ptr_ne(bufs[i], bufs[j]);
	}
	pf_pool_put(p, bufs[42]);
	ck_assert_uint_eq(pf_pool_in_use(p), 99);
	again = pf_pool_get(p);
	ck_assert_ptr_eq(again, bufs[42]); /* reused, not a new one */
	ck_assert_uint_eq(pf_pool_allocated(p), 100);
	for (int i = 0; i < 100; i++)
		pf_pool_put(p, bufs[i]);
	ck_assert_uint_eq(pf_pool_in_use(p), 0);
	/* cycling never allocates more */
	for (int r = 0; r < 1000; r++)
		pf_pool_put(p, pf_pool_get(p));
	ck_assert_uint_eq(pf_pool_allocated(p), 100);
	pf_pool_free(p);
}
END_TEST

START_TEST(test_rounding_and_args)
{
	struct pf_pool *p;
	void *a;
	void *b;

	ck_assert_int_eq(pf_pool_new(0, 10, &p), -EINVAL);
	ck_assert_int_eq(pf_pool_new(4096, 0, &p), -EINVAL);
	ck_assert_int_eq(pf_pool_new(5000, 3, &p), 0);
	ck_assert_uint_eq(pf_pool_buf_size(p), 8192);
	a = pf_pool_get(p);
	b = pf_pool_get(p);
	ck_assert_uint_ge((uintptr_t)b > (uintptr_t)a ?
				  (uintptr_t)b - (uintptr_t)a :
				  (uintptr_t)a - (uintptr_t)b,
			  8192);
	pf_pool_put(p, a);
	pf_pool_put(p, b);
	pf_pool_free(p);

	/* buffers larger than a slab */
	ck_assert_int_eq(pf_pool_new(16u << 20, 2, &p), 0);
	a = pf_pool_get(p);
	b = pf_pool_get(p);
	ck_assert(a && b);
	memset(a, 1, 16u << 20);
	memset(b, 2, 16u << 20);
	ck_assert_ptr_null(pf_pool_get(p));
	pf_pool_put(p, a);
	pf_pool_put(p, b);
	pf_pool_free(p);
}
END_TEST

/* Are all the pages of @buf (@len bytes) resident, before any write? */
static bool resident(void *buf, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[64];
	size_t n = len / page;

	ck_assert_uint_le(n, sizeof(vec));
	ck_assert_int_eq(mincore(buf, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		if (!(vec[i] & 1))
			return false;
	return true;
}

/* Wait (10 s at most) until the warm-up faulted in @bytes. */
static void wait_warmed(struct pf_pool *p, size_t bytes)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 10000 && pf_pool_warmed(p) < bytes; i++)
		nanosleep(&ms, NULL);
	ck_assert_uint_eq(pf_pool_warmed(p), bytes);
}

START_TEST(test_warm_ahead)
{
	struct pf_pool *p;
	void *bufs[256];
	void *cold;

	/* without the warm-up a new buffer is memory never touched */
	ck_assert_int_eq(pf_pool_new(65536, 256, &p), 0);
	cold = pf_pool_get(p);
	ck_assert(!resident(cold, 65536));
	pf_pool_put(p, cold);
	pf_pool_free(p);

	/* 8 MiB (two slabs of 64 buffers) faulted in ahead, handed out
	 * first, resident before the owner writes them; then cold ones */
	ck_assert_int_eq(pf_pool_new(65536, 256, &p), 0);
	ck_assert_uint_eq(pf_pool_warmed(p), 0);
	ck_assert_int_eq(pf_pool_warm(p, 8u << 20), 0);
	ck_assert_int_eq(pf_pool_warm(p, 8u << 20), -EBUSY);
	wait_warmed(p, 8u << 20);
	ck_assert_uint_eq(pf_pool_allocated(p), 0);
	/* resident although nothing was handed out, and as much while the
	 * warm buffers are handed out */
	ck_assert_uint_eq(pf_pool_resident(p), 8u << 20);
	for (int i = 0; i < 128; i++) {
		bufs[i] = pf_pool_get(p);
		ck_assert_ptr_nonnull(bufs[i]);
		ck_assert_msg(resident(bufs[i], 65536), "buffer %d cold", i);
		memset(bufs[i], i, 65536);
		ck_assert_uint_eq(pf_pool_resident(p), 8u << 20);
	}
	cold = pf_pool_get(p);
	ck_assert_uint_eq(pf_pool_resident(p), 129 * 65536);
	ck_assert(!resident(cold, 65536));
	ck_assert_uint_eq(pf_pool_allocated(p), 129);
	ck_assert_uint_eq(pf_pool_warmed(p), 8u << 20);
	for (int i = 0; i < 128; i++) {
		unsigned char *b = bufs[i];

		ck_assert(b[0] == (unsigned char)i && b[65535] == b[0]);
		pf_pool_put(p, bufs[i]);
	}
	pf_pool_put(p, cold);
	pf_pool_free(p);
}
END_TEST

/* The mount waits for the warm-up (main.c): pf_pool_warm_wait() returns
 * once every slab asked for is warm, at once if none was asked for. */
START_TEST(test_warm_wait)
{
	struct pf_pool *p;

	ck_assert_int_eq(pf_pool_new(65536, 1024, &p), 0);
	ck_assert(pf_pool_warm_wait(p, 0));
	ck_assert_int_eq(pf_pool_warm(p, 32u << 20), 0);
	ck_assert(pf_pool_warm_wait(p, 10000));
	ck_assert_uint_eq(pf_pool_warmed(p), 32u << 20);
	ck_assert_uint_eq(pf_pool_resident(p), 32u << 20);
	pf_pool_free(p);
}
END_TEST

/* THPeligible of the mapping holding @addr in /proc/self/smaps; -1: none. */
static int vma_thp(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t a = (uintptr_t)addr;
	bool in = false;
	int thp = -1;
	char line[512];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= a && a < hi;
		else if (in && sscanf(line, "THPeligible: %d", &v) == 1) {
			thp = v;
			break;
		}
	}
	fclose(f);
	return thp;
}

/* The system's transparent huge page mode: "always", "madvise", "never". */
static const char *thp_mode(char *buf, size_t len)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char *lb, *rb;

	snprintf(buf, len, "never");
	if (!f)
		return buf;
	if (fgets(buf, (int)len, f) && (lb = strchr(buf, '[')) &&
	    (rb = strchr(lb, ']'))) {
		*rb = '\0';
		memmove(buf, lb + 1, (size_t)(rb - lb));
	}
	fclose(f);
	return buf;
}

/* Warm slabs are asked for huge pages, cold ones (faulted in by a fetch
 * carving them: a compaction there is a stall) are not. */
START_TEST(test_warm_slabs_huge)
{
	struct pf_pool *warm, *cold;
	char mode[128];
	void *w, *c;

	thp_mode(mode, sizeof(mode));
	ck_assert_int_eq(pf_pool_new(65536, 256, &warm), 0);
	ck_assert_int_eq(pf_pool_warm(warm, 8u << 20), 0);
	ck_assert(pf_pool_warm_wait(warm, 10000));
	ck_assert_int_eq(pf_pool_new(65536, 256, &cold), 0);
	w = pf_pool_get(warm);
	c = pf_pool_get(cold);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(c);
	if (strcmp(mode, "never") != 0)
		ck_assert_int_eq(vma_thp(w), 1);
	if (strcmp(mode, "madvise") == 0)
		ck_assert_int_eq(vma_thp(c), 0);
	pf_pool_put(warm, w);
	pf_pool_put(cold, c);
	pf_pool_free(warm);
	pf_pool_free(cold);
}
END_TEST

START_TEST(test_warm_within_budget)
{
	struct pf_pool *p;
	void *bufs[100];

	/* asked for more than max_bufs: warms the budget, no more */
	ck_assert_int_eq(pf_pool_new(65536, 100, &p), 0);
	ck_assert_int_eq(pf_pool_warm(p, 1u << 30), 0);
	wait_warmed(p, 100 * 65536);
	for (int i = 0; i < 100; i++) {
		bufs[i] = pf_pool_get(p);
		ck_assert_ptr_nonnull(bufs[i]);
		ck_assert(resident(bufs[i], 65536));
	}
	ck_assert_ptr_null(pf_pool_get(p));
	for (int i = 0; i < 100; i++)
		pf_pool_put(p, bufs[i]);
	pf_pool_free(p);

	/* the owner takes the whole budget while the warm-up runs: every
	 * buffer is had once (the owner waits for a slab being warmed when
	 * the warm-up holds the rest of the budget) */
	for (int r = 0; r < 20; r++) {
		ck_assert_int_eq(pf_pool_new(65536, 100, &p), 0);
		ck_assert_int_eq(pf_pool_warm(p, 100 * 65536), 0);
		for (int i = 0; i < 100; i++) {
			bufs[i] = pf_pool_get(p);
			ck_assert_ptr_nonnull(bufs[i]);
			memset(bufs[i], i, 65536);
			for (int j = 0; j < i; j++)
				ck_assert_ptr_ne(bufs[i], bufs[j]);
		}
		ck_assert_ptr_null(pf_pool_get(p));
		for (int i = 0; i < 100; i++) {
			unsigned char *b = bufs[i];

			ck_assert(b[0] == (unsigned char)i && b[65535] == b[0]);
			pf_pool_put(p, bufs[i]);
		}
		pf_pool_free(p);
	}

	/* the warm-up fills up to what was asked, the owner's cold slabs
	 * included: 4 MiB handed out before, 4 MiB warmed, no more */
	ck_assert_int_eq(pf_pool_new(65536, 256, &p), 0);
	for (int i = 0; i < 64; i++)
		bufs[i] = pf_pool_get(p);
	ck_assert_int_eq(pf_pool_warm(p, 8u << 20), 0);
	wait_warmed(p, 4u << 20);
	usleep(100000);
	ck_assert_uint_eq(pf_pool_warmed(p), 4u << 20);
	ck_assert_uint_eq(pf_pool_resident(p), 8u << 20);
	for (int i = 0; i < 64; i++)
		pf_pool_put(p, bufs[i]);
	pf_pool_free(p);

	/* freed while it warms: stops and gives everything back */
	ck_assert_int_eq(pf_pool_new(65536, 16384, &p), 0);
	ck_assert_int_eq(pf_pool_warm(p, 1u << 30), 0);
	pf_pool_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_bounds_and_reuse);
	tcase_add_test(tc, test_rounding_and_args);
	tcase_add_test(tc, test_warm_ahead);
	tcase_add_test(tc, test_warm_wait);
	tcase_add_test(tc, test_warm_within_budget);
	tcase_add_test(tc, test_warm_slabs_huge);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
