/*
 * check_strbuf.c - strings being built: growable and fixed buffers, sticky
 * errors, JSON quoting, ownership on detach.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json.h"
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

/* The one JSON string decoder, as the listing parser and pf_json use it. */
static int dec(const char *lit, struct pf_strbuf *sb, const char **next)
{
	pf_strbuf_reset(sb);
	return pf_json_string(lit, lit + strlen(lit), sb, next);
}

START_TEST(test_json_string)
{
	struct pf_strbuf sb;
	const char *next;
	const char *in = "\"a\\\"b\\u00e9\\ud83d\\ude00\\n\" tail";
	struct pf_json *j;

	pf_strbuf_init(&sb, 0);
	ck_assert_int_eq(dec(in, &sb, &next), 0);
	ck_assert_str_eq(sb.buf, "a\"b\xc3\xa9\xf0\x9f\x98\x80\n");
	ck_assert_str_eq(next, " tail");
	/* \u0000 is a byte of the string */
	ck_assert_int_eq(dec("\"x\\u0000y\"", &sb, &next), 0);
	ck_assert_uint_eq(sb.len, 3);
	/* lone surrogates: valid JSON, no UTF-8 */
	ck_assert_int_eq(dec("\"\\udc00a\"", &sb, &next),
			 PF_JSON_LONE_SURROGATE);
	ck_assert_int_eq(dec("\"\\ud800a\"", &sb, &next),
			 PF_JSON_LONE_SURROGATE);
	ck_assert_int_eq(dec("\"\\ud800\\u0041\"", &sb, &next),
			 PF_JSON_LONE_SURROGATE);
	ck_assert_str_eq(sb.buf, "A");
	/* not strings */
	ck_assert_int_eq(dec("\"abc", &sb, &next), -EINVAL);
	ck_assert_int_eq(dec("\"a\nb\"", &sb, &next), -EINVAL);
	ck_assert_int_eq(dec("\"\\x\"", &sb, &next), -EINVAL);
	ck_assert_int_eq(dec("\"\\u12\"", &sb, &next), -EINVAL);
	ck_assert_int_eq(dec("\"\\ud800\\uzzzz\"", &sb, &next), -EINVAL);
	ck_assert_int_eq(dec("\"\\", &sb, &next), -EINVAL);
	/* NULL: only skipped */
	ck_assert_int_eq(pf_json_string(in, in + strlen(in), NULL, &next), 0);
	ck_assert_str_eq(next, " tail");
	pf_strbuf_release(&sb);

	/* pf_json refuses what a C string cannot hold */
	ck_assert_int_eq(pf_json_parse("\"a\\u0000\"", 9, &j), -EINVAL);
	ck_assert_int_eq(pf_json_parse("\"\\udc00\"", 8, &j), -EINVAL);
	ck_assert_int_eq(pf_json_parse("\"\\u00e9\"", 8, &j), 0);
	ck_assert_str_eq(j->str, "\xc3\xa9");
	pf_json_free(j);
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
	tcase_add_test(tc, test_json_string);
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
