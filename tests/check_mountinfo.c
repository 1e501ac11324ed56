/*
 * check_mountinfo.c - the mount on top of a path, read from mountinfo
 * text (octal escapes, stacked mounts, optional fields, long lines) and
 * from this process's own /proc/self/mountinfo.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_mountinfo.h"

/* pf_mountinfo_find_fd() over @text written to a temporary file. */
static int find_in(const char *text, const char *mnt,
		   struct pf_mountinfo *mi)
{
	FILE *fp = tmpfile();
	int ret;

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), fp), strlen(text));
	fflush(fp);
	rewind(fp);
	ret = pf_mountinfo_find_fd(fileno(fp), mnt, mi);
	fclose(fp);
	return ret;
}

static const char *const TABLE =
	"22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
	"40 22 0:52 / /mnt/a\\040b rw,nosuid shared:7 master:2 - "
	"fuse.prefetchfs http://h/ rw,user_id=0\n"
	"41 22 0:53 / /mnt/tab\\011\\134x rw - fuse.other src rw\n"
	"42 40 0:60 / /mnt/a\\040b rw - tmpfs tmpfs rw\n"
	"43 22 0:61 / /mnt/c rw - fuse.prefetchfs src rw\n"
	"44 43 0:62 / /mnt/c rw - fuse.prefetchfs src rw\n";

START_TEST(test_escapes_and_stacking)
{
	struct pf_mountinfo mi;

	/* "\040" is a space; the tmpfs mounted on top of it is the one */
	ck_assert_int_eq(find_in(TABLE, "/mnt/a b", &mi), 0);
	ck_assert_uint_eq(mi.maj, 0);
	ck_assert_uint_eq(mi.min, 60);
	ck_assert_str_eq(mi.type, "tmpfs");
	/* a tab and a backslash */
	ck_assert_int_eq(find_in(TABLE, "/mnt/tab\t\\x", &mi), 0);
	ck_assert_uint_eq(mi.min, 53);
	ck_assert_str_eq(mi.type, "fuse.other");
	/* two FUSE mounts on one point: the last listed */
	ck_assert_int_eq(find_in(TABLE, "/mnt/c", &mi), 0);
	ck_assert_uint_eq(mi.min, 62);
	ck_assert(pf_mountinfo_is_fuse(&mi));
	ck_assert_int_eq(find_in(TABLE, "/", &mi), 0);
	ck_assert_uint_eq(mi.maj, 254);
	ck_assert_uint_eq(mi.min, 1);
	ck_assert_str_eq(mi.type, "ext4");
	ck_assert(!pf_mountinfo_is_fuse(&mi));
	/* not the escaped text, nor a prefix or an extension of a point */
	ck_assert_int_eq(find_in(TABLE, "/mnt/a\\040b", &mi), -ENOENT);
	ck_assert_int_eq(find_in(TABLE, "/mnt/a", &mi), -ENOENT);
	ck_assert_int_eq(find_in(TABLE, "/mnt/cc", &mi), -ENOENT);
	ck_assert_int_eq(find_in(TABLE, "/mnt", &mi), -ENOENT);
}
END_TEST

START_TEST(test_bad_and_long_lines)
{
	struct pf_mountinfo mi;
	size_t n = 20000;
	char *text = malloc(n + 512);
	char *p = text;

	ck_assert_ptr_nonnull(text);
	/* no separator, a bad device, a last line without a newline */
	ck_assert_int_eq(find_in("1 2 0:5 / /x rw shared:1 ext4 d rw\n"
				 "1 2 0x5 / /y rw - ext4 d rw\n"
				 "1 2 0:7 / /z rw - ext4 d rw", "/x", &mi),
			 -ENOENT);
	ck_assert_int_eq(find_in("1 2 0x5 / /y rw - ext4 d rw\n", "/y", &mi),
			 -ENOENT);
	ck_assert_int_eq(find_in("1 2 0:7 / /z rw - ext4 d rw", "/z", &mi),
			 -ENOENT);
	/* a line of 20000 bytes is skipped whole, although its end read
	 * alone would be a mount on /z, and the lines around it are read */
	p += sprintf(p, "1 2 0:9 / /z rw - xfs d rw\n1 2 0:8 / /long rw - ");
	memset(p, 'o', n);
	p += n;
	p += sprintf(p, " X 0:7 / /z rw - ext4 d rw\n1 2 0:6 / /w rw - "
		     "ext4 d rw\n");
	ck_assert_int_eq(find_in(text, "/w", &mi), 0);
	ck_assert_uint_eq(mi.min, 6);
	ck_assert_int_eq(find_in(text, "/z", &mi), 0);
	ck_assert_uint_eq(mi.min, 9);
	ck_assert_str_eq(mi.type, "xfs");
	free(text);
}
END_TEST

/* This process's own table: "/" is always mounted, a file never is. */
START_TEST(test_self)
{
	struct pf_mountinfo mi;
	char tmpl[] = "/tmp/check_mountinfo.XXXXXX";
	unsigned maj;
	unsigned min;
	int fd = mkstemp(tmpl);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pf_mountinfo_find("/", &mi), 0);
	ck_assert(mi.type[0] != '\0');
	ck_assert_int_eq(pf_mountinfo_find(tmpl, &mi), -ENOENT);
	ck_assert_int_eq(pf_mountinfo_fuse_dev(tmpl, &maj, &min), -ENOENT);
	close(fd);
	unlink(tmpl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mountinfo");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_escapes_and_stacking);
	tcase_add_test(tc, test_bad_and_long_lines);
	tcase_add_test(tc, test_self);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
