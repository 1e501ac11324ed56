/*
 * check_strbuf.c - strings being built: growable and fixed buffers, sticky
 * errors, JSON quoting, ownership on detach.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pf_strbuf.h"

START_TEST(test_empty_is_a_string)
{
	struct pf_strbuf sb;
	char *s;
	size_t len = 99;

	pf_strbuf_init(&sb, 0);
	ck_assert_str_eq(sb.buf, "");
	ck_assert_uint_eq(sb.len, 0);
	s = pf_strbuf_detach(&sb, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
	pf_strbuf_release(&sb); /* harmless on an empty one */
	ck_assert_str_eq(sb.buf, "");
}
END_TEST

START_TEST(test_grows)
{
	struct pf_strbuf sb;
	char *s;
	size_t len;

	pf_strbuf_init(&sb, 4);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(pf_strbuf_addf(&sb, "%03d,", i), 0);
	ck_assert_uint_eq(sb.len, 4000);
	ck_assert_uint_eq(strlen(sb.buf), 4000);
	ck_assert(memcmp(sb.buf, "000,001,002,", 12) == 0);
	ck_assert(memcmp(sb.buf + 3996, "999,", 4) == 0);
	ck_assert_int_eq(pf_strbuf_addch(&sb, 'x'), 0);
	ck_assert_int_eq(pf_strbuf_addstr(&sb, "yz"), 0);
	ck_assert_int_eq(pf_strbuf_add(&sb, "a\0b", 3), 0); /* NUL inside */
	ck_assert_uint_eq(sb.len, 4006);
	ck_assert(memcmp(sb.buf + 4000, "xyza\0b", 7) == 0);
	s = pf_strbuf_detach(&sb, &len);
	ck_assert_uint_eq(len, 4006);
	ck_assert_str_eq(sb.buf, ""); /* left empty and usable */
	ck_assert_int_eq(pf_strbuf_addstr(&sb, "again"), 0);
	ck_assert_str_eq(sb.buf, "again");
	pf_strbuf_release(&sb);
	free(s);
}
END_TEST

START_TEST(test_addf_exact_fit)
{
	struct pf_strbuf sb;
	char big[600];

	/* a format whose output just fills, then just overflows, the room */
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	pf_strbuf_init(&sb, 10);
	ck_assert_int_eq(pf_strbuf_addf(&sb, "%.10s", big), 0);
	ck_assert_int_eq(pf_strbuf_addf(&sb, "%s", big), 0);
	ck_assert_uint_eq(sb.len, 10 + 599);
	ck_assert_uint_eq(strlen(sb.buf), 609);
	pf_strbuf_release(&sb);
}
END_TEST

START_TEST(test_fixed_truncates_and_sticks)
{
	struct pf_strbuf sb;
	char buf[8];

	pf_strbuf_init_fixed(&sb, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(pf_strbuf_addstr(&sb, "abc"), 0);
	ck_assert_int_eq(pf_strbuf_addstr(&sb, "defgh"), -ENOSPC);
	ck_assert(sb.failed);
	ck_assert_str_eq(buf, "abcdefg"); /* what fit is kept */
	ck_assert_uint_eq(sb.len, 7);
	/* sticky: nothing more, even what would fit */
	ck_assert_int_eq(pf_strbuf_addch(&sb, 'z'), -ENOSPC);
	ck_assert_int_eq(pf_strbuf_add(&sb, "", 0), -ENOSPC);
	ck_assert_str_eq(buf, "abcdefg");
	/* the caller's array is never handed out or freed */
	ck_assert_ptr_null(pf_strbuf_detach(&sb, NULL));
	ck_assert_str_eq(sb.buf, "");
	ck_assert(!sb.failed);
	ck_assert_int_eq(pf_strbuf_addf(&sb, "%d-%s", 42, "longer"), -ENOSPC);
	ck_assert_str_eq(buf, "42-long");
	pf_strbuf_reset(&sb);
	ck_assert_int_eq(pf_strbuf_addf(&sb, "%d", 7), 0);
	ck_assert_str_eq(buf, "7");
	pf_strbuf_release(&sb);
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_fixed_zero_cap)
{
	struct pf_strbuf sb;
	char buf[1] = { 'x' };

	pf_strbuf_init_fixed(&sb, buf, 0);
	ck_assert(sb.failed);
	ck_assert_int_eq(pf_strbuf_addch(&sb, 'a'), -ENOSPC);
	ck_assert_int_eq(buf[0], 'x'); /* never written */
}
END_TEST

START_TEST(test_json)
{
	struct pf_strbuf sb;
	char *s;

	pf_strbuf_init(&sb, 0);
	pf_strbuf_addch(&sb, '[');
	ck_assert_int_eq(pf_strbuf_add_json(&sb, "a\"b\\c\n\xff"), 0);
	pf_strbuf_addch(&sb, ']');
	s = pf_strbuf_detach(&sb, NULL);
	ck_assert_str_eq(s, "[\"a\\\"b\\\\c\\u000a\\u00ff\"]");
	free(s);
}
END_TEST

START_TEST(test_detach_after_failure)
{
	struct pf_strbuf sb;

	pf_strbuf_init(&sb, 0);
	pf_strbuf_addstr(&sb, "partial");
	sb.failed = true; /* as after a failed allocation */
	ck_assert_int_eq(pf_strbuf_addstr(&sb, "more"), -ENOMEM);
	ck_assert_ptr_null(pf_strbuf_detach(&sb, NULL)); /* and released */
	ck_assert_str_eq(sb.buf, "");
	ck_assert(!sb.failed);
}
END_TEST

static Suite *strbuf_suite(void)
{
	Suite *s = suite_create("strbuf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_empty_is_a_string);
	tcase_add_test(tc, test_grows);
	tcase_add_test(tc, test_addf_exact_fit);
	tcase_add_test(tc, test_fixed_truncates_and_sticks);
	tcase_add_test(tc, test_fixed_zero_cap);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_detach_after_failure);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(strbuf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
