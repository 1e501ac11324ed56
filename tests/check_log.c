/*
 * check_log.c - the warnings kept for the stats (pf_log_note): each text
 * once, cut to PF_LOG_NOTE_MAX - 1 bytes, at most PF_LOG_NOTES; a log
 * file's lines carry a time stamp; a syslog socket is told from a file;
 * and the files the daemon writes (pf_log_file_open): 0600 when new, never
 * written or truncated through a symlink, a hard link, a FIFO or another
 * user's file (that case needs root, skipped otherwise).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

static char fdir[64];
static char victim[192];	/* someone's file a link names */
static const char vbytes[] = "someone else's bytes\n";

static void files_setup(void)
{
	FILE *f;

	snprintf(fdir, sizeof(fdir), "/tmp/pftest.logXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(fdir));
	snprintf(victim, sizeof(victim), "%s/victim", fdir);
	f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fputs(vbytes, f);
	fclose(f);
}

static void files_teardown(void)
{
	rm_tree(fdir);
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
	snprintf(p, sizeof(p), "%s/new.log", fdir);
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

	snprintf(p, sizeof(p), "%s/link", fdir);
	ck_assert_int_eq(symlink(victim, p), 0);
	refused(p, O_TRUNC, -ELOOP, "a symlink: refused");
	refused(p, O_APPEND, -ELOOP, "a symlink: refused");
	victim_intact();
	snprintf(p, sizeof(p), "%s/hard", fdir);
	ck_assert_int_eq(link(victim, p), 0);
	refused(p, O_TRUNC, -EPERM, "more than one link");
	victim_intact();
	snprintf(p, sizeof(p), "%s/fifo", fdir);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	refused(p, O_APPEND, -ENXIO, "not a regular file");
	if (geteuid() == 0) {
		snprintf(p, sizeof(p), "%s/theirs", fdir);
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

static bool matches(const char *re, const char *s)
{
	regex_t r;
	bool m;

	ck_assert_int_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	m = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return m;
}

START_TEST(test_stamp)
{
	struct timespec ts = { .tv_sec = 1700000000, .tv_nsec = 123456789 };
	char buf[64];
	char line[2][256];
	FILE *f = tmpfile();
	int saved = dup(2);

	ck_assert_uint_eq(pf_log_stamp(buf, sizeof(buf), &ts), strlen(buf));
	ck_assert_msg(matches("^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:"
			      "[0-5][0-9]:[0-5][0-9]\\.123[+-][0-9]{4}$", buf),
		      "stamp '%s'", buf);
	/* cut, never overrun */
	ck_assert_uint_eq(pf_log_stamp(buf, 8, &ts), 7);

	/* a log file: time, pid, and the level of a warning */
	ck_assert_ptr_nonnull(f);
	fflush(stderr);
	dup2(fileno(f), 2);
	pf_log_set_level(PF_LOG_INFO);
	pf_log_use_file(1);
	pf_warn("a warning %d", 1);
	pf_info("an info line");
	pf_log_use_file(0);
	pf_log_set_level(PF_LOG_ERR);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	ck_assert_ptr_nonnull(fgets(line[0], sizeof(line[0]), f));
	ck_assert_ptr_nonnull(fgets(line[1], sizeof(line[1]), f));
	fclose(f);
	ck_assert_msg(matches("^[0-9-]{10}T[0-9:.]{12}[+-][0-9]{4} "
			      "prefetchfs\\[[0-9]+\\]: warn: a warning 1\n$",
			      line[0]), "line '%s'", line[0]);
	ck_assert_msg(matches("^[0-9-]{10}T[0-9:.]{12}[+-][0-9]{4} "
			      "prefetchfs\\[[0-9]+\\]: an info line\n$",
			      line[1]), "line '%s'", line[1]);
}
END_TEST

START_TEST(test_syslog_socket)
{
	char dir[] = "/tmp/check_log.XXXXXX";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char file[64];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/log", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	ck_assert(!pf_log_syslog_at(sa.sun_path));	/* missing */
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert(pf_log_syslog_at(sa.sun_path));
	close(fd);
	unlink(sa.sun_path);
	fclose(fopen(file, "w"));
	ck_assert(!pf_log_syslog_at(file));		/* not a socket */
	unlink(file);
	rmdir(dir);

	ck_assert_int_eq(pf_log_default_file(file, sizeof(file)), 0);
	ck_assert(strstr(file, "prefetchfs"));
	ck_assert_int_eq(pf_log_default_file(file, 4), -ENAMETOOLONG);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	TCase *tf = tcase_create("files");

	tcase_add_test(tc, test_notes);
	tcase_add_test(tc, test_stamp);
	tcase_add_test(tc, test_syslog_socket);
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
