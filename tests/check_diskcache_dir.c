/*
 * check_diskcache_dir.c - the disk cache's directory is the daemon's own
 * and its blocks are sealed (diskcache_dir.c, diskcache_mac.c): the
 * modes it creates, the directories it refuses, a symlink, hard link or
 * FIFO planted for each name it uses (refused or removed, the target never
 * touched), blocks and journal records rewritten without the key (never
 * served), a replaced or lost key.  Each test works in its own temporary
 * directory and removes it.  The test of a directory of another owner
 * needs root (it is skipped otherwise).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_diskcache.h"
#include "tmptree.h"

#define BS 4096u
#define JREC 64		/* bytes of a journal record */
#define J_TAG 48	/* offset of a record's tag, */
#define J_RCRC 60	/* of its own CRC32C */

static char basedir[32];
static char tmpdir[64];
static char cdir[128];
static char outside[128];	/* a file of someone else's to protect */

static const char precious[] = "root's own bytes, not the cache's\n";

/* made and removed by the parent: a failed test's process exits before
 * its own teardown (as in check_diskcache.c) */
static void base_setup(void)
{
	snprintf(basedir, sizeof(basedir), "/tmp/pftest.dcdXXXXXX");
	if (!mkdtemp(basedir)) {
		perror("check_diskcache_dir: mkdtemp");
		abort();
	}
}

static void base_teardown(void)
{
	rm_tree(basedir);
}

static void setup(void)
{
	FILE *f;

	snprintf(tmpdir, sizeof(tmpdir), "%s/tXXXXXX", basedir);
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(cdir, sizeof(cdir), "%s/cache", tmpdir);
	snprintf(outside, sizeof(outside), "%s/outside", tmpdir);
	f = fopen(outside, "w");
	ck_assert_ptr_nonnull(f);
	fputs(precious, f);
	fclose(f);
}

static void teardown(void)
{
	rm_tree(tmpdir);
}

static int try_open(uint64_t slots, struct pf_dc **dc, char *err,
		    size_t errlen)
{
	struct pf_dc_cfg cfg = { .size = slots * BS, .block_size = BS };

	*dc = NULL;
	return pf_dc_open(cdir, &cfg, dc, err, errlen);
}

static struct pf_dc *open_dc(void)
{
	struct pf_dc *dc;
	char err[256];
	int ret = try_open(64, &dc, err, sizeof(err));

	ck_assert_msg(ret == 0, "pf_dc_open: %s", err);
	return dc;
}

static struct pf_dc_key key_n(unsigned n)
{
	struct stat st = { .st_size = 1000000 };
	struct pf_dc_key k;
	char path[32];

	snprintf(path, sizeof(path), "file%u", n);
	pf_dc_key_of("src", path, &st, &k);
	return k;
}

static void fill(unsigned n, char *buf)
{
	for (unsigned i = 0; i < BS; i++)
		buf[i] = (char)(n * 31 + i * 7);
}

static void put_n(struct pf_dc *dc, unsigned n)
{
	struct pf_dc_key k = key_n(n);
	char buf[BS];

	fill(n, buf);
	ck_assert_int_ge(pf_dc_put(dc, &k, 0, buf, BS), 0);
}

/* 1: served and exact; 0: not served.  Wrong bytes fail the test. */
static int get_n(struct pf_dc *dc, unsigned n)
{
	struct pf_dc_key k = key_n(n);
	char buf[BS];
	char want[BS];
	int ret = pf_dc_get(dc, &k, 0, buf, BS);

	if (ret == -ENOENT || ret == -EBADMSG)
		return 0;
	ck_assert_int_eq(ret, 0);
	fill(n, want);
	ck_assert_msg(memcmp(buf, want, BS) == 0, "wrong bytes served for %u",
		      n);
	return 1;
}

static void path_in(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", cdir, name);
}

static unsigned mode_of(const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	path_in(p, name);
	ck_assert_msg(lstat(p, &st) == 0, "%s: %s", name, strerror(errno));
	return st.st_mode & 07777;
}

/* The outside file still holds exactly its bytes. */
static void outside_intact(void)
{
	char buf[256];
	FILE *f = fopen(outside, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ck_assert_uint_eq(n, strlen(precious));
	ck_assert(memcmp(buf, precious, n) == 0);
}

START_TEST(test_modes)
{
	static const char *const names[] = { "lock", "key", "data", "journal" };
	struct pf_dc *dc;

	umask(022);
	dc = open_dc();
	put_n(dc, 1);
	ck_assert_uint_eq(mode_of(""), 0700);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(mode_of(names[i]) == 0600, "%s: mode %o",
			      names[i], mode_of(names[i]));
	pf_dc_close(dc);
	/* an older build's 0644 files in a 0755 directory: taken, 0600 */
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[PATH_MAX];

		path_in(p, names[i]);
		ck_assert_int_eq(chmod(p, 0644), 0);
	}
	ck_assert_int_eq(chmod(cdir, 0755), 0);
	dc = open_dc();
	ck_assert_int_eq(get_n(dc, 1), 1);
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_uint_eq(mode_of(names[i]), 0600);
	pf_dc_close(dc);
}
END_TEST

static void refused(int want, const char *why)
{
	struct pf_dc *dc;
	char err[256];
	int ret = try_open(64, &dc, err, sizeof(err));

	ck_assert_msg(ret == want, "pf_dc_open: %d (%s), not %d", ret, err,
		      want);
	ck_assert_ptr_null(dc);
	ck_assert_msg(strstr(err, why) && strstr(err, cdir) &&
		      !strchr(err, '\n'), "message: %s", err);
}

START_TEST(test_dir_refused)
{
	ck_assert_int_eq(mkdir(cdir, 0700), 0);
	ck_assert_int_eq(chmod(cdir, 0777), 0);
	refused(-EPERM, "writable by other users (mode 0777)");
	ck_assert_int_eq(chmod(cdir, 01777), 0);
	refused(-EPERM, "writable by other users");
	ck_assert_int_eq(chmod(cdir, 0770), 0);
	refused(-EPERM, "writable by its group");
	/* nothing was made in a refused directory */
	{
		char p[PATH_MAX];

		path_in(p, "lock");
		ck_assert_int_eq(access(p, F_OK), -1);
	}
	ck_assert_int_eq(rmdir(cdir), 0);
	/* a symlink to a directory of ours */
	ck_assert_int_eq(symlink(tmpdir, cdir), 0);
	refused(-ELOOP, "is a symlink");
	ck_assert_int_eq(unlink(cdir), 0);
	/* not a directory */
	ck_assert_int_eq(symlink(outside, cdir), 0);
	refused(-ELOOP, "is a symlink");
	ck_assert_int_eq(unlink(cdir), 0);
	ck_assert_int_eq(link(outside, cdir), 0);
	refused(-ENOTDIR, "Not a directory");
	ck_assert_int_eq(unlink(cdir), 0);
	outside_intact();
}
END_TEST

START_TEST(test_dir_of_another_user)
{
	if (geteuid() != 0) {
		fprintf(stderr, "test_dir_of_another_user: not root, "
			"skipped\n");
		return;
	}
	ck_assert_int_eq(mkdir(cdir, 0700), 0);
	ck_assert_int_eq(chown(cdir, 65534, 65534), 0);
	refused(-EPERM, "is owned by uid 65534, not by this daemon's uid 0");
}
END_TEST

/* A symlink to the outside file planted for @name in a new directory. */
static void plant(const char *name)
{
	char p[PATH_MAX];

	rm_tree(cdir);
	ck_assert_int_eq(mkdir(cdir, 0700), 0);
	path_in(p, name);
	ck_assert_int_eq(symlink(outside, p), 0);
}

START_TEST(test_symlinks_refused)
{
	static const char *const names[] = { "lock", "key", "data", "journal" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char want[64];

		plant(names[i]);
		snprintf(want, sizeof(want), "'%s' is a symlink: refused",
			 names[i]);
		refused(-ELOOP, want);
		outside_intact();
	}
}
END_TEST

START_TEST(test_temporaries_removed)
{
	static const char *const names[] = { "journal.tmp", "key.tmp" };

	/* a new cache writes both (a new key, then the journal) */
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct pf_dc *dc;
		char p[PATH_MAX];

		plant(names[i]);
		dc = open_dc();
		put_n(dc, 1);
		ck_assert_int_eq(get_n(dc, 1), 1);
		pf_dc_close(dc);
		path_in(p, names[i]);
		ck_assert_int_eq(access(p, F_OK), -1);
		outside_intact();
	}
}
END_TEST

START_TEST(test_links_and_fifos_refused)
{
	char p[PATH_MAX];

	/* a hard link to a file elsewhere */
	rm_tree(cdir);
	ck_assert_int_eq(mkdir(cdir, 0700), 0);
	path_in(p, "data");
	ck_assert_int_eq(link(outside, p), 0);
	refused(-EMLINK, "'data' has 2 links: refused");
	outside_intact();
	/* a FIFO: refused, and the open does not wait for a writer */
	ck_assert_int_eq(unlink(p), 0);
	path_in(p, "key");
	unlink(p);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	refused(-EINVAL, "'key' is not a regular file");
	/* a directory */
	ck_assert_int_eq(unlink(p), 0);
	path_in(p, "journal");
	ck_assert_int_eq(mkdir(p, 0700), 0);
	refused(-EISDIR, "'journal': Is a directory");
}
END_TEST

/* Record @i of the journal, read or written whole. */
static void jrec_io(unsigned i, unsigned char *rec, bool write)
{
	char p[PATH_MAX];
	int fd;

	path_in(p, "journal");
	fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	if (write)
		ck_assert_int_eq(pwrite(fd, rec, JREC, (off_t)i * JREC), JREC);
	else
		ck_assert_int_eq(pread(fd, rec, JREC, (off_t)i * JREC), JREC);
	close(fd);
}

/* Gives record @rec a valid CRC32C of its own, as anyone can. */
static void jrec_fix(unsigned char *rec)
{
	uint32_t c = pf_dc_crc32c(0, rec, J_RCRC);

	memcpy(rec + J_RCRC, &c, 4);
}

START_TEST(test_poisoned_blocks)
{
	struct pf_dc *dc = open_dc();
	unsigned char rec[JREC];
	char p[PATH_MAX];
	char buf[BS];
	uint32_t slot;
	int fd;

	put_n(dc, 1);
	put_n(dc, 2);
	pf_dc_close(dc);
	/*
	 * Record 1 is block 0 of file 1.  Its slot gets file 3's bytes and
	 * the record a tag made without the key (here: the CRC32C of the new
	 * bytes), with a valid record CRC: the record replays, the block
	 * fails its check.
	 */
	jrec_io(1, rec, false);
	memcpy(&slot, rec + 32, 4);
	path_in(p, "data");
	fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	fill(3, buf);
	ck_assert_int_eq(pwrite(fd, buf, BS, (off_t)slot * BS), BS);
	close(fd);
	{
		uint64_t tag = pf_dc_crc32c(0, buf, BS);

		memcpy(rec + J_TAG, &tag, 8);
	}
	jrec_fix(rec);
	jrec_io(1, rec, true);
	/*
	 * Record 2 (file 2's block, its data intact) is made to say it is
	 * block 0 of file 4: the seal binds the bytes to their file.
	 */
	jrec_io(2, rec, false);
	{
		struct pf_dc_key k = key_n(4);

		memcpy(rec + 8, &k.a, 8);
		memcpy(rec + 16, &k.b, 8);
	}
	jrec_fix(rec);
	jrec_io(2, rec, true);
	dc = open_dc();
	ck_assert_int_eq(get_n(dc, 1), 0);
	ck_assert_int_eq(get_n(dc, 4), 0);
	ck_assert_int_eq(get_n(dc, 2), 0);	/* its record is gone */
	{
		struct pf_dc_stats s;

		pf_dc_get_stats(dc, &s);
		ck_assert_uint_eq(s.dropped, 2);
	}
	pf_dc_close(dc);
}
END_TEST

START_TEST(test_key_replaced_or_lost)
{
	struct pf_dc *dc = open_dc();
	struct pf_dc_stats s;
	char p[PATH_MAX];
	int fd;

	for (unsigned n = 0; n < 8; n++)
		put_n(dc, n);
	pf_dc_close(dc);
	/* another key: every block fails its check */
	path_in(p, "key");
	fd = open(p, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "another key, 32 bytes long......",
				PF_DC_KEY_LEN, 0), PF_DC_KEY_LEN);
	close(fd);
	dc = open_dc();
	for (unsigned n = 0; n < 8; n++)
		ck_assert_int_eq(get_n(dc, n), 0);
	pf_dc_get_stats(dc, &s);
	ck_assert_uint_eq(s.dropped, 8);
	for (unsigned n = 0; n < 8; n++)
		put_n(dc, n);
	pf_dc_close(dc);
	/* no key (or a short one): a new one, an empty cache */
	ck_assert_int_eq(truncate(p, 5), 0);
	dc = open_dc();
	pf_dc_get_stats(dc, &s);
	ck_assert_uint_eq(s.blocks, 0);
	put_n(dc, 1);
	pf_dc_close(dc);
	ck_assert_int_eq(unlink(p), 0);
	dc = open_dc();
	pf_dc_get_stats(dc, &s);
	ck_assert_uint_eq(s.blocks, 0);
	ck_assert_uint_eq(mode_of("key"), 0600);
	pf_dc_close(dc);
}
END_TEST

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the check of a block costs: the MAC against the CRC32C before
 * (the best of 5 rounds each, interleaved: the machine is shared). */
START_TEST(test_mac_cost)
{
	struct pf_dc *dc = open_dc();
	struct pf_dc_key k = key_n(1);
	const uint32_t len = 16 << 10;
	const unsigned n = 2048;
	struct pf_dc_sum sum;
	char *buf = malloc(len);
	double crc_s = 1e9;
	double mac_s = 1e9;
	uint32_t c = 0;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5a, len);
	ck_assert_int_eq(pf_dc_seal(dc, &k, 0, 0, buf, len, &sum), 0);
	for (int round = 0; round < 5; round++) {
		double t0 = mono();
		double t;
		bool ok = true;

		for (unsigned i = 0; i < n; i++)
			c += pf_dc_crc32c(c, buf, len);
		t = mono() - t0;
		crc_s = t < crc_s ? t : crc_s;
		t0 = mono();
		for (unsigned i = 0; i < n; i++)
			ok &= pf_dc_verify(dc, &k, 0, 0, buf, len, &sum);
		t = mono() - t0;
		mac_s = t < mac_s ? t : mac_s;
		ck_assert(ok);
	}
	printf("checking a 16 KiB block: CRC32C %.0f MB/s, MAC %.0f MB/s "
	       "(%.1f us a block, %.2fx the CRC's time)\n",
	       n * (double)len / crc_s / 1e6, n * (double)len / mac_s / 1e6,
	       mac_s / n * 1e6, mac_s / crc_s);
	/* one bit off anywhere, another block, another slot: refused */
	buf[len - 1] ^= 1;
	ck_assert(!pf_dc_verify(dc, &k, 0, 0, buf, len, &sum));
	buf[len - 1] ^= 1;
	ck_assert(!pf_dc_verify(dc, &k, 1, 0, buf, len, &sum));
	ck_assert(!pf_dc_verify(dc, &k, 0, 1, buf, len, &sum));
	free(buf);
	pf_dc_close(dc);
}
END_TEST

static Suite *dir_suite(void)
{
	Suite *s = suite_create("diskcache_dir");
	TCase *tc = tcase_create("dir");

	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_dir_refused);
	tcase_add_test(tc, test_dir_of_another_user);
	tcase_add_test(tc, test_symlinks_refused);
	tcase_add_test(tc, test_temporaries_removed);
	tcase_add_test(tc, test_links_and_fifos_refused);
	tcase_add_test(tc, test_poisoned_blocks);
	tcase_add_test(tc, test_key_replaced_or_lost);
	tcase_add_test(tc, test_mac_cost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dir_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
