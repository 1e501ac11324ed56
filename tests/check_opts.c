/*
 * check_opts.c - the command line: sizes, every option's bounds, errors.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pf_opts.h"
#include "pf_suggest.h"

#define RAM (24ull << 30)

static int parse(struct pf_opts *o, char *err, const char *a1,
		 const char *a2, const char *a3, const char *a4)
{
	char *argv[6] = { (char *)"prefetchfs" };
	int argc = 1;

	if (a1)
		argv[argc++] = (char *)a1;
	if (a2)
		argv[argc++] = (char *)a2;
	if (a3)
		argv[argc++] = (char *)a3;
	if (a4)
		argv[argc++] = (char *)a4;
	pf_opts_default(o, RAM);
	err[0] = '\0';
	return pf_opts_parse(o, argc, argv, err, 256);
}

START_TEST(test_sizes)
{
	uint64_t v;

	ck_assert_int_eq(pf_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(pf_parse_size("64K", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(pf_parse_size("1m", &v), 0);
	ck_assert_uint_eq(v, 1u << 20);
	ck_assert_int_eq(pf_parse_size("2G", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(pf_parse_size("1.5G", &v), 0);
	ck_assert_uint_eq(v, 3ull << 29);
	ck_assert_int_eq(pf_parse_size("8MiB", &v), 0);
	ck_assert_uint_eq(v, 8u << 20);
	ck_assert_int_eq(pf_parse_size("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(pf_parse_size("", &v), -EINVAL);
	ck_assert_int_eq(pf_parse_size("-1", &v), -EINVAL);
	ck_assert_int_eq(pf_parse_size("12Q", &v), -EINVAL);
	ck_assert_int_eq(pf_parse_size("1.0000001", &v), -EINVAL);
	ck_assert_int_eq(pf_parse_size("K", &v), -EINVAL);
	ck_assert_int_eq(pf_parse_size("99999999999T", &v), -EINVAL);
}
END_TEST

START_TEST(test_defaults)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "/src", "/mnt", NULL, NULL), 0);
	ck_assert_str_eq(o.source, "/src");
	ck_assert_str_eq(o.mountpoint, "/mnt");
	ck_assert_uint_eq(o.engine.max_memory, 6ull << 30);
	ck_assert_uint_eq(o.engine.prefetch_batches, 2);
	ck_assert_int_eq(o.engine.prefetch, 1);
	ck_assert_uint_eq(o.readahead_kb, 1024);
	ck_assert_int_eq(o.foreground, 0);
	ck_assert_str_eq(o.fuse_opts, "");
}
END_TEST

START_TEST(test_values)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "-o",
			       "max_memory=512M,prefetch=off,"
			       "prefetch_batches=4,fetch_size=256K,"
			       "max_inflight=8,batch_size=8M,block_size=16K",
			       "/s", "/m"),
			 0);
	ck_assert_uint_eq(o.engine.max_memory, 512u << 20);
	ck_assert_int_eq(o.engine.prefetch, 0);
	ck_assert_uint_eq(o.engine.prefetch_batches, 4);
	ck_assert_uint_eq(o.engine.fetch_size, 256u << 10);
	ck_assert_uint_eq(o.engine.max_inflight, 8);
	ck_assert_uint_eq(o.engine.pattern.batch_override, 8u << 20);
	ck_assert_uint_eq(o.engine.block_size, 16u << 10);

	ck_assert_int_eq(parse(&o, err, "-f", "-ocache_timeout=5,gap_ms=10",
			       "/s", "/m"),
			 0);
	ck_assert_int_eq(o.foreground, 1);
	ck_assert(o.attr_timeout == 5 && o.entry_timeout == 5);
	ck_assert_uint_eq(o.engine.pattern.gap_ns, 10000000);
}
END_TEST

START_TEST(test_fuse_and_fstab)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "-o",
			       "ro,_netdev,nofail,x-systemd.automount,"
			       "allow_other,fsname=data,auto_unmount",
			       "/s", "/m"),
			 0);
	/* allow_other brings default_permissions: without it any user
	 * reads files that are 0600 in the source */
	ck_assert_str_eq(o.fuse_opts, "allow_other,fsname=data,auto_unmount,"
				      "default_permissions");
	ck_assert_int_eq(parse(&o, err, "-o",
			       "default_permissions,allow_other", "/s", "/m"),
			 0);
	ck_assert_str_eq(o.fuse_opts, "default_permissions,allow_other");
	ck_assert_int_eq(parse(&o, err, "-o", "auto_unmount", "/s", "/m"), 0);
	ck_assert_str_eq(o.fuse_opts, "auto_unmount");
}
END_TEST

/* Each default --help prints parses back to the value it came from. */
START_TEST(test_table_defaults)
{
	struct pf_opts d;
	struct pf_opts o;
	char err[256];
	char text[160];
	char arg[256];
	unsigned n = 0;

	pf_opts_default(&d, RAM);
	for (const struct pf_opt *t = pf_opt_table; t->name; t++) {
		ck_assert_msg(t->help && *t->help, "%s: no help", t->name);
		pf_opt_default_text(t, &d, text, sizeof(text));
		if (t->type == PF_OT_FUSE || t->type == PF_OT_STR ||
		    (t->flags & PF_OF_MACHINE) || t->alias)
			continue;
		ck_assert_msg(text[0], "%s: no default", t->name);
		snprintf(arg, sizeof(arg), "%s=%s", t->name, text);
		ck_assert_msg(parse(&o, err, "-o", arg, "/s", "/m") == 0,
			      "%s: %s", arg, err);
		o.fetch_size_set = 0;
		o.min_window_set = 0;
		o.max_memory_set = 0;
		ck_assert_msg(memcmp(&o.engine, &d.engine, sizeof(d.engine)) ==
				      0 && o.entry_timeout == d.entry_timeout &&
				      o.attr_timeout == d.attr_timeout &&
				      o.io_engine == d.io_engine &&
				      o.log_level == d.log_level &&
				      o.keep_cache == d.keep_cache &&
				      o.readahead_kb == d.readahead_kb &&
				      o.max_threads == d.max_threads &&
				      o.connect_timeout == d.connect_timeout &&
				      o.timeout == d.timeout &&
				      o.retries == d.retries &&
				      o.trace_seconds == d.trace_seconds &&
				      o.nonempty == d.nonempty,
			      "--help says %s is the default, but it is not",
			      arg);
		n++;
	}
	ck_assert_uint_ge(n, 25);
	/* the documented default is the real one */
	pf_opt_default_text(pf_opt_find("fetch_size"), &d, text, sizeof(text));
	ck_assert_str_eq(text, "1M");
}
END_TEST

START_TEST(test_help_table)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	unsigned rows = 0;
	unsigned opts = 0;

	ck_assert_ptr_nonnull(fp);
	pf_opts_help_table(fp);
	fclose(fp);
	for (const struct pf_opt *t = pf_opt_table; t->name; t++) {
		char cell[80];

		snprintf(cell, sizeof(cell), "| `-o %s%s", t->name,
			 t->arg ? "=" : "`");
		ck_assert_msg(strstr(buf, cell), "no row for %s", t->name);
		opts++;
	}
	for (const char *p = buf; (p = strstr(p, "\n| `-o ")); p++)
		rows++;
	ck_assert_uint_eq(rows, opts);
	ck_assert_ptr_nonnull(
		strstr(buf, "| `-o fetch_size=SIZE` | 1M | 4K to 64M |"));
	ck_assert_ptr_nonnull(
		strstr(buf, "| `-o max_threads=N` | 16 | 1 to 1024 |"));
	free(buf);
}
END_TEST

START_TEST(test_source_and_peers)
{
	struct pf_opts o;
	char err[256];

	/* an unsupported scheme is not taken for a path */
	ck_assert_int_eq(parse(&o, err, "ftp://host/data", "/m", NULL, NULL),
			 -EINVAL);
	ck_assert_msg(strstr(err, "'ftp://' is not supported") &&
		      strstr(err, "s3://") && strstr(err, "https://"), "%s",
		      err);
	ck_assert_int_eq(parse(&o, err, "HTTPS://h/p/", "/m", NULL, NULL), 0);
	ck_assert_int_eq(parse(&o, err, "./odd://dir", "/m", NULL, NULL), 0);
	/* credentials in the URL: refused, and never repeated */
	ck_assert_int_eq(parse(&o, err, "https://bob:s3cret@h/p/", "/m", NULL,
			       NULL), -EINVAL);
	ck_assert_msg(!strstr(err, "s3cret") && !strstr(err, "bob"), "%s", err);
	ck_assert_ptr_nonnull(strstr(err, "AWS_ACCESS_KEY_ID"));
	ck_assert_int_eq(parse(&o, err, "s3://KEY:hunter2@bucket/p", "/m", NULL,
			       NULL), -EINVAL);
	ck_assert_ptr_null(strstr(err, "hunter2"));
	/* an @ in the path is not userinfo */
	ck_assert_int_eq(parse(&o, err, "https://h/p/a@b/", "/m", NULL, NULL),
			 0);
	/* mountpoint-s3's --foreground, s3fs's url= */
	ck_assert_int_eq(parse(&o, err, "--foreground", "s3://b", "/m", NULL),
			 0);
	ck_assert_int_eq(o.foreground, 1);
	ck_assert_int_eq(parse(&o, err, "-o", "url=http://127.0.0.1:9000",
			       "s3://b", "/m"), 0);
	ck_assert_str_eq(o.endpoint, "http://127.0.0.1:9000");
	ck_assert_int_eq(parse(&o, err, "-o", "nonempty,log_file=/tmp/l",
			       "/s", "/m"), 0);
	ck_assert_int_eq(o.nonempty, 1);
	ck_assert_str_eq(o.log_file, "/tmp/l");
}
END_TEST

START_TEST(test_limits)
{
	struct pf_opts o;
	char err[256];

	/* more memory than the machine has: the option and what there is */
	ck_assert_int_eq(parse(&o, err, "-o", "max_memory=100T", "/s", "/m"),
			 -EINVAL);
	ck_assert_msg(strstr(err, "max_memory=100T") && strstr(err, "24.0G"),
		      "%s", err);
	/* a fetch is one vectored read: at most IOV_MAX blocks */
	ck_assert_int_eq(parse(&o, err, "-o", "block_size=4K,fetch_size=8M",
			       "/s", "/m"), -EINVAL);
	ck_assert_msg(strstr(err, "fetch_size=8M") && strstr(err, "block_size"),
		      "%s", err);
	ck_assert_int_eq(parse(&o, err, "-o", "block_size=4K,fetch_size=2M",
			       "/s", "/m"), 0);
	ck_assert_int_eq(parse(&o, err, "-o", "block_size=1M,fetch_size=64M",
			       "/s", "/m"), 0);
	ck_assert_uint_ge(pf_opts_max_fetch(4096), 2u << 20);
	ck_assert_uint_lt(pf_opts_max_fetch(4096), 4u << 20);
}
END_TEST

static void expect_bad(const char *optlist, const char *needle)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "-o", optlist, "/s", "/m"), -EINVAL);
	ck_assert_msg(strstr(err, needle), "error for '%s' was '%s'", optlist,
		      err);
	ck_assert_msg(!strchr(err, '\n'), "one line: '%s'", err);
}

START_TEST(test_bad)
{
	struct pf_opts o;
	char err[256];

	expect_bad("prefetch_batches=1", "prefetch_batches");
	expect_bad("max_memory=lots", "max_memory");
	expect_bad("max_memory=1M", "max_memory");
	expect_bad("block_size=3000", "block_size");
	expect_bad("max_inflight=0", "max_inflight");
	expect_bad("prefetch=maybe", "prefetch");
	expect_bad("frobnicate=1", "unknown option 'frobnicate'");
	expect_bad("rw", "read-only");
	expect_bad("fetch_size=8K,block_size=64K", "fetch_size");
	expect_bad("max_memory=16M,fetch_size=8M", "max_memory");
	expect_bad("log_level=loud", "log_level");
	expect_bad("max_inflight", "needs a value");

	ck_assert_int_eq(parse(&o, err, "/s", NULL, NULL, NULL), -EINVAL);
	ck_assert(strstr(err, "MOUNTPOINT"));
	ck_assert_int_eq(parse(&o, err, "/s", "/m", "/x", NULL), -EINVAL);
	ck_assert(strstr(err, "unexpected argument"));
	ck_assert_int_eq(parse(&o, err, "--bogus", "/s", "/m", NULL), -EINVAL);
	ck_assert(strstr(err, "--bogus"));
	ck_assert_int_eq(parse(&o, err, "/s", "/m", "-o", NULL), -EINVAL);
	ck_assert_int_eq(parse(&o, err, "--help", NULL, NULL, NULL), 0);
	ck_assert_int_eq(o.help, 1);
}
END_TEST

/* -o direct_io: off by default; on, it turns push off whatever push says */
START_TEST(test_direct_io)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "/s", "/m", NULL, NULL), 0);
	ck_assert_int_eq(o.direct_io, 0);
	ck_assert_int_eq(o.engine.push, 1);
	ck_assert_int_eq(parse(&o, err, "-o", "direct_io", "/s", "/m"), 0);
	ck_assert_int_eq(o.direct_io, 1);
	ck_assert_int_eq(o.engine.push, 0);
	ck_assert_int_eq(parse(&o, err, "-o", "push=on,direct_io=on", "/s",
			       "/m"), 0);
	ck_assert_int_eq(o.engine.push, 0);
	ck_assert_int_eq(parse(&o, err, "-o", "direct_io=off", "/s", "/m"),
			 0);
	ck_assert_int_eq(o.direct_io, 0);
	ck_assert_int_eq(o.engine.push, 1);
	expect_bad("direct_io=maybe", "bad value for direct_io");
}
END_TEST

START_TEST(test_object_storage)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, "-o",
			       "endpoint=http://127.0.0.1:9000,region=eu-west-1,"
			       "profile=train,addressing=path,no_sign",
			       "s3://b/p", "/mnt"), 0);
	ck_assert_str_eq(o.endpoint, "http://127.0.0.1:9000");
	ck_assert_str_eq(o.region, "eu-west-1");
	ck_assert_str_eq(o.profile, "train");
	ck_assert_str_eq(o.addressing, "path");
	ck_assert_int_eq(o.no_sign, 1);
	ck_assert_int_eq(o.fetch_size_set, 0);

	ck_assert_int_eq(parse(&o, err, "-o",
			       "manifest=files.txt,cacert=/etc/ca.pem,insecure,"
			       "connect_timeout=3,timeout=7,retries=0,"
			       "fetch_size=8M,min_window=32M",
			       "https://h/p/", "/mnt"), 0);
	ck_assert_str_eq(o.manifest, "files.txt");
	ck_assert_str_eq(o.cacert, "/etc/ca.pem");
	ck_assert_int_eq(o.insecure, 1);
	ck_assert_uint_eq(o.connect_timeout, 3);
	ck_assert_uint_eq(o.timeout, 7);
	ck_assert_uint_eq(o.retries, 0);
	ck_assert_int_eq(o.fetch_size_set, 1);
	ck_assert_int_eq(o.min_window_set, 1);

	/* defaults */
	ck_assert_int_eq(parse(&o, err, "s3://b", "/mnt", NULL, NULL), 0);
	ck_assert_uint_eq(o.connect_timeout, 10);
	ck_assert_uint_eq(o.timeout, 30);
	ck_assert_uint_eq(o.retries, 5);
	ck_assert_int_eq(o.no_sign, 0);
	ck_assert_str_eq(o.endpoint, "");

	/* bad values: one line naming the option */
	ck_assert_int_eq(parse(&o, err, "-o", "addressing=dns", "s3://b",
			       "/mnt"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "addressing"));
	ck_assert_int_eq(parse(&o, err, "-o", "timeout=0", "s3://b", "/mnt"),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "timeout"));
	ck_assert_int_eq(parse(&o, err, "-o", "retries=-1", "s3://b", "/mnt"),
			 -EINVAL);
	ck_assert_int_eq(parse(&o, err, "-o", "no_sign=maybe", "s3://b",
			       "/mnt"), -EINVAL);
	ck_assert_int_eq(parse(&o, err, "-o", "endpoint=", "s3://b", "/mnt"),
			 -EINVAL);
	ck_assert_int_eq(parse(&o, err, "-o", "region", "s3://b", "/mnt"),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "needs a value"));
}
END_TEST

/* The candidate pf_suggest picks for @word among @cands (NULL-ended). */
static const char *suggest(const char *word, const char *const *cands)
{
	static struct pf_suggest s;

	pf_suggest_init(&s, word);
	for (; *cands; cands++)
		pf_suggest_offer(&s, *cands);
	return pf_suggest_best(&s);
}

START_TEST(test_suggest_distance)
{
	static const char *const two[] = { "cache_dir", "cache_size", NULL };
	static const char *const tie[] = { "abcd", "abce", NULL };
	static const char *const pre[] = { "max_memory", "max_window",
					   NULL };

	ck_assert_uint_eq(pf_suggest_distance("", ""), 0);
	ck_assert_uint_eq(pf_suggest_distance("abc", ""), 3);
	ck_assert_uint_eq(pf_suggest_distance("kitten", "sitting"), 3);
	/* a swap of neighbours is one slip, not two */
	ck_assert_uint_eq(pf_suggest_distance("max_memroy", "max_memory"), 1);
	ck_assert_uint_eq(pf_suggest_distance("cachedir", "cache_dir"), 1);
	/* case and '-' for '_' are no difference */
	ck_assert_uint_eq(pf_suggest_distance("Max-Memory", "max_memory"), 0);
	ck_assert_uint_eq(pf_suggest_distance("ca", "abc"), 3);

	ck_assert_str_eq(suggest("cachedir", two), "cache_dir");
	ck_assert_str_eq(suggest("cache_sise", two), "cache_size");
	ck_assert_ptr_null(suggest("frobnicate", two));
	/* two as close: no guess */
	ck_assert_ptr_null(suggest("abcf", tie));
	/* short words allow one slip only */
	ck_assert_ptr_null(suggest("ab", tie));
	/* the start of exactly one name */
	ck_assert_str_eq(suggest("max_mem", pre), "max_memory");
	ck_assert_ptr_null(suggest("max_", pre));
}
END_TEST

START_TEST(test_did_you_mean)
{
	expect_bad("max_memroy=1G", "did you mean 'max_memory'?");
	expect_bad("cachedir=/var/cache/x", "did you mean 'cache_dir'?");
	expect_bad("prefetch_batch=3", "did you mean 'prefetch_batches'?");
	expect_bad("noatme", "did you mean 'noatime'?");
	expect_bad("frobnicate=1", "unknown option 'frobnicate' (see --help)");
}
END_TEST

/* A mistake on the command line: one line that says what to give. */
static void expect_bad_args(const char *a1, const char *a2, const char *a3,
			    const char *needle)
{
	struct pf_opts o;
	char err[256];

	ck_assert_int_eq(parse(&o, err, a1, a2, a3, NULL), -EINVAL);
	ck_assert_msg(strstr(err, needle), "error for '%s %s %s' was '%s'",
		      a1, a2, a3 ? a3 : "", err);
	ck_assert_msg(!strchr(err, '\n'), "one line: '%s'", err);
}

START_TEST(test_flags_and_urls)
{
	/* GNU-style options are -o options */
	expect_bad_args("--max_memory=1G", "/s", "/m",
			"options go after -o (-o max_memory=1G)");
	expect_bad_args("--cache_dir", "/s", "/m", "-o cache_dir=...");
	expect_bad_args("--foregrund", "/s", "/m",
			"did you mean '--foreground'?");
	expect_bad_args("--max_memroy=1G", "/s", "/m",
			"did you mean '-o max_memory'?");
	/* SOURCE and MOUNTPOINT swapped: a URL is no mountpoint, and the
	 * URL is not repeated (it may name a private bucket) */
	expect_bad_args("/mnt/data", "https://example.com/data/", NULL,
			"MOUNTPOINT is a URL (https://...): SOURCE comes "
			"first");
	expect_bad_args("/mnt/data", "s3://bucket/secret/", NULL,
			"(s3://...)");
	{
		struct pf_opts o;
		char err[256];

		ck_assert_int_eq(parse(&o, err, "/mnt/data",
				       "s3://bucket/secret/", NULL, NULL),
				 -EINVAL);
		ck_assert_ptr_null(strstr(err, "secret"));
		/* a path holding "://" is a path */
		ck_assert_int_eq(parse(&o, err, "/s", "/m/a://b", NULL, NULL),
				 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_fuse_and_fstab);
	tcase_add_test(tc, test_bad);
	tcase_add_test(tc, test_table_defaults);
	tcase_add_test(tc, test_help_table);
	tcase_add_test(tc, test_source_and_peers);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_object_storage);
	tcase_add_test(tc, test_direct_io);
	tcase_add_test(tc, test_suggest_distance);
	tcase_add_test(tc, test_did_you_mean);
	tcase_add_test(tc, test_flags_and_urls);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
