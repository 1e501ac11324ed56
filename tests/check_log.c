/*
 * check_log.c - the warnings kept for the stats (pf_log_note): each text
 * once, cut to PF_LOG_NOTE_MAX - 1 bytes, at most PF_LOG_NOTES; and the
 * files the daemon writes (pf_log_file_open): 0600 when new, never written
 * or truncated through a symlink, a hard link, a FIFO or another user's
 * file (that case needs root, skipped otherwise).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_log.h"
#include "tmptree.h"

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

static char dir[64];
static char victim[192];	/* someone's file a link names */
static const char vbytes[] = "someone else's bytes\n";

static void files_setup(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/pftest.logXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs(vbytes, f);
	fclose(f);
}

static void files_teardown(void)
{
	rm_tree(dir);
}

static void victim_intact(void)
{
	char buf[128];
	FILE *f = fopen(victim, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ck_assert_uint_eq(n, strlen(vbytes));
	ck_assert(memcmp(buf, vbytes, n) == 0);
}

static void refused(const char *path, int flags, int want, const char *why)
{
	char err[128];
	int fd = pf_log_file_open(path, flags, err, sizeof(err));

	ck_assert_msg(fd == want, "%s: %d (%s), not %d", path, fd,
		      fd < 0 ? err : "opened", want);
	ck_assert_msg(strstr(err, why), "%s: %s", path, err);
}

START_TEST(test_file_new_and_own)
{
	char p[192];
	char err[128];
	struct stat st;
	int fd;

	umask(022);
	snprintf(p, sizeof(p), "%s/new.log", dir);
	fd = pf_log_file_open(p, O_APPEND, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(write(fd, "one\n", 4), 4);
	close(fd);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* O_APPEND keeps what is there, O_TRUNC empties it */
	fd = pf_log_file_open(p, O_APPEND, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "two\n", 4), 4);
	close(fd);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_size, 8);
	fd = pf_log_file_open(p, O_TRUNC, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	/* opened O_NONBLOCK (a FIFO must not hang it), then blocking */
	ck_assert(!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	close(fd);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
}
END_TEST

START_TEST(test_file_refused)
{
	char p[192];

	snprintf(p, sizeof(p), "%s/link", dir);
	ck_assert_int_eq(symlink(victim, p), 0);
	refused(p, O_TRUNC, -ELOOP, "a symlink: refused");
	refused(p, O_APPEND, -ELOOP, "a symlink: refused");
	victim_intact();
	snprintf(p, sizeof(p), "%s/hard", dir);
	ck_assert_int_eq(link(victim, p), 0);
	refused(p, O_TRUNC, -EPERM, "more than one link");
	victim_intact();
	snprintf(p, sizeof(p), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	refused(p, O_APPEND, -ENXIO, "not a regular file");
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/theirs", dir);
		ck_assert_int_eq(unlink(victim), 0);
		{
			FILE *f = fopen(p, "w");

			ck_assert_ptr_nonnull(f);
			fputs(vbytes, f);
			fclose(f);
		}
		ck_assert_int_eq(chown(p, 65534, 65534), 0);
		refused(p, O_TRUNC, -EPERM, "a file of another user");
		snprintf(victim, sizeof(victim), "%s", p);
		victim_intact();
	}
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	TCase *tf = tcase_create("files");

	tcase_add_test(tc, test_notes);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tf, files_setup, files_teardown);
	tcase_add_test(tf, test_file_new_and_own);
	tcase_add_test(tf, test_file_refused);
	suite_add_tcase(s, tf);
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
