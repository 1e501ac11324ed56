/*
 * check_pool.c - the buffer pool: bounded, reused, never given back.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_bounds_and_reuse);
	tcase_add_test(tc, test_rounding_and_args);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
