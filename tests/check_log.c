/*
 * check_log.c - the warnings kept for the stats (pf_log_note): each text
 * once, cut to PF_LOG_NOTE_MAX - 1 bytes, at most PF_LOG_NOTES.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_log.h"

/* The kept notes are process-wide: one test sees them all, in order. */
START_TEST(test_notes)
{
	char out[PF_LOG_NOTES][PF_LOG_NOTE_MAX];
	char long_msg[PF_LOG_NOTE_MAX * 2];
	char msg[32];

	pf_log_set_level(PF_LOG_ERR);	/* keep the test's output clean */
	ck_assert_uint_eq(pf_log_notes(out, PF_LOG_NOTES), 0);
	pf_log_note("the server ignores Range");
	pf_log_note("the server ignores Range");
	ck_assert_uint_eq(pf_log_notes(out, PF_LOG_NOTES), 1);
	ck_assert_str_eq(out[0], "the server ignores Range");

	memset(long_msg, 'x', sizeof(long_msg) - 1);
	long_msg[sizeof(long_msg) - 1] = '\0';
	pf_log_note(long_msg);
	ck_assert_uint_eq(pf_log_notes(out, PF_LOG_NOTES), 2);
	ck_assert_uint_eq(strlen(out[1]), PF_LOG_NOTE_MAX - 1);
	/* a copy, not only max */
	ck_assert_uint_eq(pf_log_notes(out, 1), 1);

	for (int i = 0; i < 2 * PF_LOG_NOTES; i++) {
		snprintf(msg, sizeof(msg), "note %d", i);
		pf_log_note(msg);
	}
	ck_assert_uint_eq(pf_log_notes(out, PF_LOG_NOTES), PF_LOG_NOTES);
	ck_assert_str_eq(out[2], "note 0");
	ck_assert_str_eq(out[PF_LOG_NOTES - 1], "note 5");
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_notes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
