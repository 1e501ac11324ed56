/*
 * check_sharedcache.c - the shared tier's keys and values: a value opens
 * only under the keys, key, version, piece and length it was sealed for;
 * forged, corrupted, truncated, wrong-key, wrong-version and replayed
 * values are refused; keys name no path; the secret file is refused when
 * others may read it or it is short; the server list's syntax and the
 * -o shared_cache list split at commas.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_opts.h"
#include "pf_sharedcache.h"
#include "../src/sharedcache/sharedcache_int.h"

static struct pf_sc_keys keys;
static struct pf_sc_fid fid;
static uint8_t plain[PF_SC_PIECE];
static uint8_t out[PF_SC_PIECE];
static uint8_t val[PF_SC_PIECE + PF_SC_SEAL_OVERHEAD];

static void stat_of(struct stat *st, uint64_t size, long sec, long nsec)
{
	memset(st, 0, sizeof(*st));
	st->st_size = (off_t)size;
	st->st_mtim.tv_sec = sec;
	st->st_mtim.tv_nsec = nsec;
}

static void setup(void)
{
	static const char secret[] = "0123456789abcdef-a cluster secret";
	struct stat st;

	ck_assert_int_eq(pf_sc_keys_derive(secret, sizeof(secret) - 1, &keys),
			 0);
	stat_of(&st, 3 * PF_SC_PIECE + 100, 1700000000, 123456789);
	pf_sc_fid_of(&keys, "s3://bkt/data", "train/a.bin", &st, &fid);
	for (size_t i = 0; i < sizeof(plain); i++)
		plain[i] = (uint8_t)(i * 7 + 3);
}

/* Seals piece @piece (@len bytes of plain) into val; its length. */
static int seal(uint64_t piece, uint32_t len, uint8_t key[PF_SC_KEY_BYTES])
{
	int n;

	pf_sc_piece_key(&keys, &fid, piece, key);
	n = pf_sc_seal(&keys, key, &fid, piece, plain, len, val);
	ck_assert_int_eq(n, (int)(len + PF_SC_SEAL_OVERHEAD));
	return n;
}

START_TEST(test_round_trip)
{
	uint8_t key[PF_SC_KEY_BYTES];
	int n = seal(1, PF_SC_PIECE, key);

	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 1, val, (size_t)n,
				      out, PF_SC_PIECE), 0);
	ck_assert_mem_eq(out, plain, PF_SC_PIECE);
	/* a short last piece too */
	n = seal(3, 100, key);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 3, val, (size_t)n,
				      out, 100), 0);
	ck_assert_mem_eq(out, plain, 100);
	/* the plaintext is nowhere in the value */
	ck_assert_ptr_null(memmem(val, (size_t)n, plain, 16));
}
END_TEST

START_TEST(test_corrupted)
{
	uint8_t key[PF_SC_KEY_BYTES];
	int n = seal(0, 4096, key);

	/* every byte of the value, one bit at a time */
	for (int i = 0; i < n; i += 97) {
		val[i] ^= 0x10;
		ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val,
					      (size_t)n, out, 4096), -EBADMSG);
		val[i] ^= 0x10;
	}
	/* the tag's last byte, the nonce's first */
	val[n - 1] ^= 1;
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n, out,
				      4096), -EBADMSG);
	val[n - 1] ^= 1;
	val[1] ^= 1;
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n, out,
				      4096), -EBADMSG);
	val[1] ^= 1;
	/* truncated, extended, another length asked for */
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n - 1,
				      out, 4096), -EBADMSG);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n + 1,
				      out, 4096), -EBADMSG);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n, out,
				      4095), -EBADMSG);
	/* and intact it still opens */
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n, out,
				      4096), 0);
}
END_TEST

START_TEST(test_forged)
{
	uint8_t key[PF_SC_KEY_BYTES];
	int n;

	pf_sc_piece_key(&keys, &fid, 0, key);
	/* plain bytes as a value, of the right length and format byte */
	memset(val, 0, sizeof(val));
	val[0] = 1;
	memcpy(val + 13, plain, 4096);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val,
				      4096 + PF_SC_SEAL_OVERHEAD, out, 4096),
			 -EBADMSG);
	/* what memcached's text protocol lets anyone store */
	memcpy(val, "hello", 5);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, 5, out, 4096),
			 -EBADMSG);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, 0, out, 0),
			 -EBADMSG);
	/* a value of another format */
	n = seal(0, 4096, key);
	val[0] = 2;
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &fid, 0, val, (size_t)n, out,
				      4096), -EBADMSG);
}
END_TEST

START_TEST(test_wrong_secret)
{
	static const char other[] = "0123456789abcdef-another secret!";
	struct pf_sc_keys k2;
	struct pf_sc_fid fid2;
	uint8_t key[PF_SC_KEY_BYTES];
	uint8_t key2[PF_SC_KEY_BYTES];
	struct stat st;
	int n = seal(2, 8192, key);

	ck_assert_int_eq(pf_sc_keys_derive(other, sizeof(other) - 1, &k2), 0);
	stat_of(&st, fid.size, fid.mtime_s, fid.mtime_ns);
	pf_sc_fid_of(&k2, "s3://bkt/data", "train/a.bin", &st, &fid2);
	pf_sc_piece_key(&k2, &fid2, 2, key2);
	/* another secret names the piece differently... */
	ck_assert_mem_ne(key, key2, PF_SC_KEY_BYTES);
	/* ...and opens nothing sealed with this one, under either key */
	ck_assert_int_eq(pf_sc_unseal(&k2, key2, &fid2, 2, val, (size_t)n, out,
				      8192), -EBADMSG);
	ck_assert_int_eq(pf_sc_unseal(&k2, key, &fid, 2, val, (size_t)n, out,
				      8192), -EBADMSG);
	/* a secret shorter than the least is refused */
	ck_assert_int_eq(pf_sc_keys_derive("short", 5, &k2), -EINVAL);
}
END_TEST

START_TEST(test_wrong_version)
{
	uint8_t key[PF_SC_KEY_BYTES];
	uint8_t key2[PF_SC_KEY_BYTES];
	struct pf_sc_fid v2;
	struct stat st;
	int n = seal(1, 4096, key);

	/* the file changed: a new mtime (or ETag hash), the same size */
	stat_of(&st, fid.size, fid.mtime_s, fid.mtime_ns + 1);
	pf_sc_fid_of(&keys, "s3://bkt/data", "train/a.bin", &st, &v2);
	pf_sc_piece_key(&keys, &v2, 1, key2);
	ck_assert_mem_ne(key, key2, PF_SC_KEY_BYTES);
	/* the old value replayed under the new version's key */
	ck_assert_int_eq(pf_sc_unseal(&keys, key2, &v2, 1, val, (size_t)n, out,
				      4096), -EBADMSG);
	/* under the old key but read as the new version */
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &v2, 1, val, (size_t)n, out,
				      4096), -EBADMSG);
	/* another size */
	stat_of(&st, fid.size + 1, fid.mtime_s, fid.mtime_ns);
	pf_sc_fid_of(&keys, "s3://bkt/data", "train/a.bin", &st, &v2);
	ck_assert_int_eq(pf_sc_unseal(&keys, key, &v2, 1, val, (size_t)n, out,
				      4096), -EBADMSG);
}
END_TEST

START_TEST(test_replayed)
{
	uint8_t key0[PF_SC_KEY_BYTES];
	uint8_t key1[PF_SC_KEY_BYTES];
	struct pf_sc_fid other;
	uint8_t okey[PF_SC_KEY_BYTES];
	struct stat st;
	int n;

	pf_sc_piece_key(&keys, &fid, 0, key0);
	n = seal(1, 4096, key1);
	/* piece 1's value stored under piece 0's key */
	ck_assert_int_eq(pf_sc_unseal(&keys, key0, &fid, 0, val, (size_t)n, out,
				      4096), -EBADMSG);
	ck_assert_int_eq(pf_sc_unseal(&keys, key1, &fid, 0, val, (size_t)n, out,
				      4096), -EBADMSG);
	/* under another file's key */
	stat_of(&st, fid.size, fid.mtime_s, fid.mtime_ns);
	pf_sc_fid_of(&keys, "s3://bkt/data", "train/b.bin", &st, &other);
	pf_sc_piece_key(&keys, &other, 1, okey);
	ck_assert_int_eq(pf_sc_unseal(&keys, okey, &other, 1, val, (size_t)n,
				      out, 4096), -EBADMSG);
	/* another source, the same path */
	pf_sc_fid_of(&keys, "s3://bkt/other", "train/a.bin", &st, &other);
	ck_assert_mem_ne(other.id, fid.id, 32);
}
END_TEST

START_TEST(test_keys)
{
	uint8_t key[PF_SC_KEY_BYTES];
	uint8_t again[PF_SC_KEY_BYTES];
	char text[PF_SC_KEY_TEXT + 1];
	struct pf_sc_fid f2;
	struct stat st;

	pf_sc_piece_key(&keys, &fid, 5, key);
	pf_sc_piece_key(&keys, &fid, 5, again);
	ck_assert_mem_eq(key, again, PF_SC_KEY_BYTES);
	pf_sc_piece_key(&keys, &fid, 6, again);
	ck_assert_mem_ne(key, again, PF_SC_KEY_BYTES);
	pf_sc_key_text(key, 'D', text);
	ck_assert_uint_eq(strlen(text), PF_SC_KEY_TEXT);
	ck_assert_int_eq(text[0], 'D');
	ck_assert_uint_eq(strspn(text + 1, "0123456789abcdef"),
			  PF_SC_KEY_TEXT - 1);
	/* source and path do not run together: "ab" + "c" is not "a" + "bc" */
	stat_of(&st, 10, 1, 2);
	pf_sc_fid_of(&keys, "ab", "c", &st, &fid);
	pf_sc_fid_of(&keys, "a", "bc", &st, &f2);
	ck_assert_mem_ne(fid.id, f2.id, 32);
	/* a long path */
	{
		char *p = malloc(8000);

		memset(p, 'x', 7999);
		p[7999] = '\0';
		pf_sc_fid_of(&keys, "src", p, &st, &fid);
		pf_sc_fid_of(&keys, "src", p, &st, &f2);
		ck_assert_mem_eq(fid.id, f2.id, 32);
		free(p);
	}
}
END_TEST

/* Writes @body to a new file of mode @mode; its path (static). */
static const char *secret_file(const char *body, mode_t mode)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/pfsecret.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, body, strlen(body)), (int)strlen(body));
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
	return path;
}

START_TEST(test_secret_file)
{
	struct pf_sc_keys k1;
	struct pf_sc_keys k2;
	char err[256];
	const char *p;

	p = secret_file("0123456789abcdef0123\n", 0600);
	ck_assert_int_eq(pf_sc_secret_load(p, &k1, err, sizeof(err)), 0);
	unlink(p);
	/* the newline does not count */
	p = secret_file("0123456789abcdef0123", 0400);
	ck_assert_int_eq(pf_sc_secret_load(p, &k2, err, sizeof(err)), 0);
	ck_assert_mem_eq(&k1, &k2, sizeof(k1));
	unlink(p);
	p = secret_file("0123456789abcdef0123", 0644);
	ck_assert_int_eq(pf_sc_secret_load(p, &k2, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "readable by group or others"));
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	ck_assert_ptr_null(strchr(err, '\n'));
	unlink(p);
	p = secret_file("0123456789abcdef0123", 0620);
	ck_assert_int_eq(pf_sc_secret_load(p, &k2, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "writable"));
	unlink(p);
	p = secret_file("short\n", 0600);
	ck_assert_int_eq(pf_sc_secret_load(p, &k2, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "at least 16"));
	unlink(p);
	ck_assert_int_eq(pf_sc_secret_load("/nonexistent/s", &k2, err,
					   sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/s"));
}
END_TEST

START_TEST(test_servers)
{
	struct pf_sc_server sv[8];
	char err[256];
	unsigned n;

	ck_assert_int_eq(pf_sc_servers_parse("127.0.0.2:11311,node-7.lan:1,"
					     "[::1]:5, 10.0.0.1", sv, 8, &n,
					     err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(sv[0].host, "127.0.0.2");
	ck_assert_uint_eq(sv[0].port, 11311);
	ck_assert_str_eq(sv[1].host, "node-7.lan");
	ck_assert_str_eq(sv[2].host, "::1");
	ck_assert_uint_eq(sv[2].port, 5);
	ck_assert_str_eq(sv[3].host, "10.0.0.1");
	ck_assert_uint_eq(sv[3].port, 11211);
	ck_assert_int_eq(pf_sc_servers_parse("a:0", sv, 8, &n, err,
					     sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'a:0'"));
	ck_assert_int_eq(pf_sc_servers_parse("a:70000", sv, 8, &n, err,
					     sizeof(err)), -EINVAL);
	ck_assert_int_eq(pf_sc_servers_parse("a:1,,b:2", sv, 8, &n, err,
					     sizeof(err)), -EINVAL);
	ck_assert_int_eq(pf_sc_servers_parse("a b:1", sv, 8, &n, err,
					     sizeof(err)), -EINVAL);
	ck_assert_int_eq(pf_sc_servers_parse("a:1,a:1", sv, 8, &n, err,
					     sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "twice"));
	ck_assert_int_eq(pf_sc_servers_parse("a:1,b:1,c:1", sv, 2, &n, err,
					     sizeof(err)), -E2BIG);
}
END_TEST

START_TEST(test_servers_file)
{
	struct pf_sc_server sv[8];
	char spec[80];
	char err[256];
	unsigned n;
	const char *p = secret_file("# the cluster\n127.0.0.2:11311\n\n"
				    "  127.0.0.3:11312  # node 3\n", 0644);

	snprintf(spec, sizeof(spec), "@%s", p);
	ck_assert_int_eq(pf_sc_servers_load(spec, sv, 8, &n, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(sv[1].host, "127.0.0.3");
	ck_assert_uint_eq(sv[1].port, 11312);
	unlink(p);
	p = secret_file("127.0.0.2:11311\nbad:port\n", 0644);
	snprintf(spec, sizeof(spec), "@%s", p);
	ck_assert_int_eq(pf_sc_servers_load(spec, sv, 8, &n, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "line 2"));
	unlink(p);
}
END_TEST

START_TEST(test_self)
{
	struct pf_sc_server sv[3];
	char err[256];
	unsigned n;
	int idx;

	ck_assert_int_eq(pf_sc_servers_parse("192.0.2.7:11211,127.0.0.3:11212,"
					     "198.51.100.9:11211", sv, 3, &n,
					     err, sizeof(err)), 0);
	/* given */
	ck_assert_int_eq(pf_sc_self_index(sv, n, "127.0.0.3:11212", &idx, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(idx, 1);
	ck_assert_int_eq(pf_sc_self_index(sv, n, "127.0.0.3:1", &idx, err,
					  sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not in the shared_cache list"));
	/* auto: the one with a local address (documentation addresses are
	 * nobody's) */
	ck_assert_int_eq(pf_sc_self_index(sv, n, NULL, &idx, err, sizeof(err)),
			 0);
	ck_assert_int_eq(idx, 1);
	/* two local ones: not known */
	ck_assert_int_eq(pf_sc_servers_parse("127.0.0.2:1,127.0.0.3:1", sv, 3,
					     &n, err, sizeof(err)), 0);
	ck_assert_int_eq(pf_sc_self_index(sv, n, NULL, &idx, err, sizeof(err)),
			 0);
	ck_assert_int_eq(idx, -1);
}
END_TEST

/* Parses "prefetchfs -o @list SRC MNT"; the error (or "") in err. */
static int parse_o(struct pf_opts *o, const char *list, char *err,
		   size_t errlen)
{
	char *argv[] = { (char *)"prefetchfs", (char *)"-o", (char *)list,
			 (char *)"/src", (char *)"/mnt", NULL };

	err[0] = '\0';
	pf_opts_default(o, 4ull << 30);
	return pf_opts_parse(o, 5, argv, err, errlen);
}

START_TEST(test_opts)
{
	static struct pf_opts o;
	char err[512];

	/* -o splits at commas: the servers that follow continue the list */
	ck_assert_int_eq(parse_o(&o, "shared_cache=127.0.0.2:1,127.0.0.3:2,"
				 "nonempty,shared_secret=/s,127.0.0.4:3",
				 err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(parse_o(&o, "shared_cache=127.0.0.2:1,127.0.0.3:2,"
				 "[::1]:4,nonempty,shared_secret=/s,"
				 "shared_lease=0", err, sizeof(err)), 0);
	ck_assert_str_eq(o.shared_cache, "127.0.0.2:1,127.0.0.3:2,[::1]:4");
	ck_assert_int_eq(o.nonempty, 1);
	ck_assert_str_eq(o.shared_secret, "/s");
	ck_assert_uint_eq(o.shared_lease, 0);
	ck_assert_uint_eq(o.shared_timeout, 5);
	ck_assert_int_eq(parse_o(&o, "shared_cache=@/etc/servers,"
				 "shared_secret=/s", err, sizeof(err)), 0);
	ck_assert_str_eq(o.shared_cache, "@/etc/servers");
	/* no secret: one line that says how to make one */
	ck_assert_int_eq(parse_o(&o, "shared_cache=127.0.0.2:1", err,
				 sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "shared_secret"));
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_int_eq(parse_o(&o, "shared_cache=127.0.0.2:x,"
				 "shared_secret=/s", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "bad value for shared_cache"));
	ck_assert_int_eq(parse_o(&o, "shared_secret=/s", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "for shared_cache"));
	ck_assert_int_eq(parse_o(&o, "shared_cache=a:1,shared_secret=/s,"
				 "shared_timeout=0", err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(parse_o(&o, "shared_cache=a:1,shared_secret=/s,"
				 "shared_self=a:1", err, sizeof(err)), 0);
	ck_assert_str_eq(o.shared_self, "a:1");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sharedcache");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_corrupted);
	tcase_add_test(tc, test_forged);
	tcase_add_test(tc, test_wrong_secret);
	tcase_add_test(tc, test_wrong_version);
	tcase_add_test(tc, test_replayed);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_secret_file);
	tcase_add_test(tc, test_servers);
	tcase_add_test(tc, test_servers_file);
	tcase_add_test(tc, test_self);
	tcase_add_test(tc, test_opts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
