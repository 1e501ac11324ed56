/*
 * check_s3conf.c - S3 configuration: the s3:// source, region, endpoint
 * and addressing precedence, credentials from the environment and the
 * AWS shared files (in a temporary HOME), and the URLs of objects and
 * listings.  The environment is a table of the test's own.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf_s3conf.h"
#include "tmptree.h"

/* ---- the injected environment ---- */

#define NENV 16
static const char *env_k[NENV];
static const char *env_v[NENV];

static const char *tenv(const char *name)
{
	for (int i = 0; i < NENV; i++)
		if (env_k[i] && strcmp(env_k[i], name) == 0)
			return env_v[i];
	return NULL;
}

static void setenv_t(const char *k, const char *v)
{
	int free_slot = -1;

	for (int i = 0; i < NENV; i++) {
		if (env_k[i] && strcmp(env_k[i], k) == 0) {
			env_v[i] = v;
			return;
		}
		if (!env_k[i] && free_slot < 0)
			free_slot = i;
	}
	ck_assert_int_ge(free_slot, 0);
	env_k[free_slot] = k;
	env_v[free_slot] = v;
}

static void unsetenv_t(const char *k)
{
	for (int i = 0; i < NENV; i++)
		if (env_k[i] && strcmp(env_k[i], k) == 0)
			env_k[i] = NULL;
}

/* ---- a temporary HOME ---- */

static char home[256];
static char credfile[300];
static char conffile[300];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
	char aws[300];

	memset(env_k, 0, sizeof(env_k));
	snprintf(home, sizeof(home), "/tmp/check_s3conf.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(home));
	snprintf(aws, sizeof(aws), "%s/.aws", home);
	ck_assert_int_eq(mkdir(aws, 0700), 0);
	snprintf(credfile, sizeof(credfile), "%s/.aws/credentials", home);
	snprintf(conffile, sizeof(conffile), "%s/.aws/config", home);
	setenv_t("HOME", home);
}

static void teardown(void)
{
	rm_tree(home);
}

/* ---- helpers ---- */

static struct pf_s3_conf conf;
static char err[512];

static int resolve(const char *src, const struct pf_s3_opts *o)
{
	return pf_s3_resolve(src, o, tenv, &conf, err, sizeof(err));
}

static void expect_err(const char *src, const struct pf_s3_opts *o,
		       int want, const char *needle)
{
	int ret = resolve(src, o);

	ck_assert_msg(ret == want, "'%s': got %d (%s), want %d", src, ret,
		      err, want);
	ck_assert_msg(strstr(err, needle), "'%s': error '%s' lacks '%s'",
		      src, err, needle);
	ck_assert_msg(!strchr(err, '\n'), "one line: '%s'", err);
	/* A failed resolve leaves no key behind. */
	ck_assert_str_eq(conf.cred.secret_key, "");
}

static const struct pf_s3_opts anon = { .no_sign = 1 };

static void env_keys(void)
{
	setenv_t("AWS_ACCESS_KEY_ID", "AKIAENVEXAMPLE");
	setenv_t("AWS_SECRET_ACCESS_KEY", "envSecret/With+Slash=");
}

/* ---- the source ---- */

START_TEST(test_source)
{
	static const struct {
		const char *src, *bucket, *prefix;
	} ok[] = {
		{ "s3://my-bucket", "my-bucket", "" },
		{ "s3://my-bucket/", "my-bucket", "" },
		{ "s3://my-bucket///", "my-bucket", "" },
		{ "s3://my-bucket/datasets/c4/", "my-bucket", "datasets/c4/" },
		{ "s3://my-bucket/datasets/c4", "my-bucket", "datasets/c4/" },
		{ "s3://my-bucket//datasets", "my-bucket", "datasets/" },
		{ "s3://my-bucket/a//b", "my-bucket", "a//b/" },
		{ "s3://my-bucket/a b/+%/", "my-bucket", "a b/+%/" },
		{ "S3://abc/x", "abc", "x/" },
		{ "s3://a.b-c.0", "a.b-c.0", "" },
		{ "s3://1.2.3", "1.2.3", "" },
		{ "s3://012345678901234567890123456789012345678901234567890"
		  "123456789012", "012345678901234567890123456789012345678901"
		  "234567890123456789012", "" },
	};
	char src[80];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(resolve(ok[i].src, &anon) == 0, "%s: %s",
			      ok[i].src, err);
		ck_assert_str_eq(conf.bucket, ok[i].bucket);
		ck_assert_str_eq(conf.prefix, ok[i].prefix);
	}

	expect_err("s3://", &anon, -EINVAL, "no bucket name");
	expect_err("s3:///prefix", &anon, -EINVAL, "no bucket name");
	expect_err("/data/set", &anon, -EINVAL, "s3://");
	expect_err("http://bucket/x", &anon, -EINVAL, "s3://");
	expect_err("s3://ab", &anon, -EINVAL, "shorter than 3");
	memset(src, 'b', sizeof(src));
	memcpy(src, "s3://", 5);
	src[5 + 64] = '\0';
	expect_err(src, &anon, -EINVAL, "longer than 63");
	src[5 + 63] = '\0';
	ck_assert_int_eq(resolve(src, &anon), 0);
	expect_err("s3://My-Bucket/x", &anon, -EINVAL,
		   "invalid bucket name 'My-Bucket': upper-case");
	expect_err("s3://my_bucket", &anon, -EINVAL, "only lower-case");
	expect_err("s3://-bucket", &anon, -EINVAL, "start and end");
	expect_err("s3://bucket.", &anon, -EINVAL, "start and end");
	expect_err("s3://a..b", &anon, -EINVAL, "two dots");
	expect_err("s3://192.168.1.10", &anon, -EINVAL, "IP address");
	expect_err("s3://bucket?x=1", &anon, -EINVAL, "invalid bucket name");
	/* A URL with credentials in it is refused without echoing them. */
	expect_err("s3://AKIDX:SECRETX@bucket/p", &anon, -EINVAL,
		   "no user name, password");
	ck_assert_ptr_null(strstr(err, "SECRETX"));
	ck_assert_ptr_null(strstr(err, "AKIDX"));
	ck_assert_int_eq(resolve(NULL, &anon), -EINVAL);
}
END_TEST

START_TEST(test_prefix_too_long)
{
	char src[1200] = "s3://bucket/";
	size_t n = strlen(src);

	memset(src + n, 'k', 1022);
	src[n + 1022] = '\0';
	ck_assert_int_eq(resolve(src, &anon), 0);
	ck_assert_uint_eq(strlen(conf.prefix), 1023);
	ck_assert_int_eq(conf.prefix[1022], '/');
	src[n + 1022] = 'k';
	src[n + 1023] = '\0';
	expect_err(src, &anon, -ENAMETOOLONG, "too long");
}
END_TEST

/* ---- region ---- */

START_TEST(test_region_precedence)
{
	struct pf_s3_opts o = { .no_sign = 1 };

	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "us-east-1");

	write_file(conffile, "[default]\nregion = eu-west-3\n"
			     "[profile other]\nregion = ap-south-1\n");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "eu-west-3");

	setenv_t("AWS_PROFILE", "other");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "ap-south-1");

	setenv_t("AWS_DEFAULT_REGION", "us-west-1");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "us-west-1");

	setenv_t("AWS_REGION", "us-west-2");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "us-west-2");

	o.region = "sa-east-1";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "sa-east-1");
	ck_assert_str_eq(conf.endpoint, "https://s3.sa-east-1.amazonaws.com");

	o.region = "cn-north-1";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint,
			 "https://s3.cn-north-1.amazonaws.com.cn");
	ck_assert_int_eq(conf.path_style, 0);

	o.region = "us-east-1:evil";
	expect_err("s3://bucket", &o, -EINVAL, "bad region");
	ck_assert(strstr(err, "-o region"));
	o.region = NULL;
	setenv_t("AWS_REGION", "a b");
	expect_err("s3://bucket", &o, -EINVAL, "from AWS_REGION");
}
END_TEST

/* ---- endpoint and addressing ---- */

START_TEST(test_endpoint)
{
	struct pf_s3_opts o = { .no_sign = 1 };

	setenv_t("AWS_ENDPOINT_URL", "http://global.example:8000");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint, "http://global.example:8000");

	setenv_t("AWS_ENDPOINT_URL_S3", "https://s3only.example/");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint, "https://s3only.example");

	o.endpoint = "HTTP://MinIO.Local:9000//";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint, "http://minio.local:9000");

	o.endpoint = "http://127.0.0.1:9000";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint, "http://127.0.0.1:9000");
	ck_assert_int_eq(conf.path_style, 1);

	o.endpoint = "http://[::1]:9000/";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.endpoint, "http://[::1]:9000");

	o.endpoint = "ftp://host";
	expect_err("s3://bucket", &o, -EINVAL, "http:// or https://");
	o.endpoint = "127.0.0.1:9000";
	expect_err("s3://bucket", &o, -EINVAL, "http:// or https://");
	o.endpoint = "http://";
	expect_err("s3://bucket", &o, -EINVAL, "no host");
	o.endpoint = "https:///";
	expect_err("s3://bucket", &o, -EINVAL, "no host");
	o.endpoint = "http://host:9000/bucket";
	expect_err("s3://bucket", &o, -EINVAL, "without a path");
	o.endpoint = "http://host?x";
	expect_err("s3://bucket", &o, -EINVAL, "without a path");
	o.endpoint = "http://host:0";
	expect_err("s3://bucket", &o, -EINVAL, "port");
	o.endpoint = "http://host:65536";
	expect_err("s3://bucket", &o, -EINVAL, "port");
	o.endpoint = "http://host:";
	expect_err("s3://bucket", &o, -EINVAL, "port");
	o.endpoint = "http://host:80a";
	expect_err("s3://bucket", &o, -EINVAL, "port");
	o.endpoint = "http://ho st";
	expect_err("s3://bucket", &o, -EINVAL, "host");
	o.endpoint = "http://[::1";
	expect_err("s3://bucket", &o, -EINVAL, "host");
	o.endpoint = "http://user:hunter2@host";
	expect_err("s3://bucket", &o, -EINVAL, "user name or password");
	ck_assert_ptr_null(strstr(err, "hunter2"));
	o.endpoint = NULL;
	setenv_t("AWS_ENDPOINT_URL_S3", "s3.example");
	expect_err("s3://bucket", &o, -EINVAL, "AWS_ENDPOINT_URL_S3");
}
END_TEST

START_TEST(test_addressing)
{
	struct pf_s3_opts o = { .no_sign = 1 };

	/* auto: virtual-hosted on AWS unless the name has dots */
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 0);
	ck_assert_int_eq(resolve("s3://my.bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 1);
	o.addressing = "auto";
	o.endpoint = "https://s3.eu-central-1.amazonaws.com";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 0);
	/* path-style everywhere else */
	o.endpoint = "https://storage.example.com";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 1);
	o.endpoint = "https://notamazonaws.com";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 1);

	o.addressing = "virtual";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 0);
	ck_assert_int_eq(resolve("s3://my.bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 0);
	o.endpoint = "http://127.0.0.1:9000";
	expect_err("s3://bucket", &o, -EINVAL, "addressing=path");
	o.endpoint = "http://[::1]:9000";
	expect_err("s3://bucket", &o, -EINVAL, "addressing=path");

	o.endpoint = NULL;
	o.addressing = "path";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.path_style, 1);

	o.addressing = "dns";
	expect_err("s3://bucket", &o, -EINVAL,
		   "bad value for addressing: 'dns'");
}
END_TEST

/* ---- credentials ---- */

START_TEST(test_cred_env)
{
	env_keys();
	ck_assert_int_eq(resolve("s3://bucket", NULL), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIAENVEXAMPLE");
	ck_assert_str_eq(conf.cred.secret_key, "envSecret/With+Slash=");
	ck_assert_str_eq(conf.cred.session_token, "");
	ck_assert_int_eq(conf.cred.anonymous, 0);
	ck_assert_str_eq(conf.cred.source, "environment");

	setenv_t("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLE//token==");
	ck_assert_int_eq(resolve("s3://bucket", NULL), 0);
	ck_assert_str_eq(conf.cred.session_token,
			 "FwoGZXIvYXdzEXAMPLE//token==");
	ck_assert_str_eq(conf.cred.source, "environment, with session token");

	/* One without the other */
	unsetenv_t("AWS_SECRET_ACCESS_KEY");
	expect_err("s3://bucket", NULL, -ENOKEY,
		   "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
	ck_assert_ptr_null(strstr(err, "AKIAENV"));
	setenv_t("AWS_SECRET_ACCESS_KEY", "envSecret/With+Slash=");
	setenv_t("AWS_ACCESS_KEY_ID", "");	/* empty is unset */
	expect_err("s3://bucket", NULL, -ENOKEY,
		   "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
	ck_assert_ptr_null(strstr(err, "envSecret"));

	/* A key with a blank cannot go into a header. */
	setenv_t("AWS_ACCESS_KEY_ID", "AKIA ENV");
	expect_err("s3://bucket", NULL, -EINVAL, "AWS_ACCESS_KEY_ID contains");
	ck_assert_ptr_null(strstr(err, "AKIA"));
}
END_TEST

START_TEST(test_cred_file)
{
	char want[600];

	write_file(credfile,
		   "# a comment\r\n"
		   "; another\r\n"
		   "[other]\r\n"
		   "aws_access_key_id = AKIAOTHER\r\n"
		   "aws_secret_access_key = otherSecret\r\n"
		   "\r\n"
		   "[ default ]\r\n"
		   "  AWS_Access_Key_ID=AKIADEFAULT  \r\n"
		   "aws_secret_access_key\t=\tdefault/Secret+Key=\r\n"
		   "s3 =\r\n"
		   "    aws_access_key_id = NESTEDNOTAKEY\r\n"
		   "[defaultx]\r\n"
		   "aws_access_key_id = AKIAWRONG\r\n");
	ck_assert_msg(resolve("s3://bucket/p", NULL) == 0, "%s", err);
	ck_assert_str_eq(conf.cred.access_key, "AKIADEFAULT");
	ck_assert_str_eq(conf.cred.secret_key, "default/Secret+Key=");
	ck_assert_str_eq(conf.cred.session_token, "");
	snprintf(want, sizeof(want), "profile default in %s", credfile);
	ck_assert_str_eq(conf.cred.source, want);

	/* AWS_PROFILE picks the section; a session token comes along. */
	write_file(credfile, "[default]\n"
			     "aws_access_key_id=AKIADEFAULT\n"
			     "aws_secret_access_key=defaultSecret\n"
			     "[work]\n"
			     "aws_access_key_id: AKIAWORK\n"
			     "aws_secret_access_key: workSecret\n"
			     "aws_session_token = tok/en+with=\n");
	setenv_t("AWS_PROFILE", "work");
	ck_assert_int_eq(resolve("s3://bucket", NULL), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIAWORK");
	ck_assert_str_eq(conf.cred.secret_key, "workSecret");
	ck_assert_str_eq(conf.cred.session_token, "tok/en+with=");
	ck_assert(strstr(conf.cred.source, "profile work in "));
	ck_assert(strstr(conf.cred.source, "session token"));
}
END_TEST

START_TEST(test_cred_precedence)
{
	struct pf_s3_opts o = { 0 };

	write_file(credfile, "[default]\n"
			     "aws_access_key_id=AKIADEFAULT\n"
			     "aws_secret_access_key=defaultSecret\n"
			     "[work]\n"
			     "aws_access_key_id=AKIAWORK\n"
			     "aws_secret_access_key=workSecret\n");
	/* the default profile */
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIADEFAULT");
	/* the environment beats the profile file, even with AWS_PROFILE */
	env_keys();
	setenv_t("AWS_PROFILE", "work");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIAENVEXAMPLE");
	ck_assert_str_eq(conf.cred.source, "environment");
	/* -o profile beats the environment */
	unsetenv_t("AWS_PROFILE");
	o.profile = "work";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIAWORK");
	ck_assert_str_eq(conf.cred.secret_key, "workSecret");
	/* ... and then a half-set environment does not matter */
	unsetenv_t("AWS_SECRET_ACCESS_KEY");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIAWORK");
	/* no_sign beats everything */
	o.no_sign = 1;
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.anonymous, 1);
	ck_assert_str_eq(conf.cred.access_key, "");
	ck_assert_str_eq(conf.cred.source, "none (no_sign)");
}
END_TEST

START_TEST(test_config_file)
{
	struct pf_s3_opts o = { 0 };
	char path[400];

	/* Keys may live in the config file; the credentials file wins. */
	write_file(conffile, "[default]\n"
			     "region = eu-north-1\n"
			     "[profile  cfg]\n"
			     "region=ap-northeast-1\n"
			     "aws_access_key_id = AKIACONFIG\n"
			     "aws_secret_access_key = configSecret\n"
			     "[cfg]\n"
			     "region = wrong-1\n"
			     "[sso-session cfg]\n"
			     "region = wrong-2\n");
	o.profile = "cfg";
	ck_assert_msg(resolve("s3://bucket", &o) == 0, "%s", err);
	ck_assert_str_eq(conf.region, "ap-northeast-1");
	ck_assert_str_eq(conf.cred.access_key, "AKIACONFIG");
	ck_assert(strstr(conf.cred.source, conffile));
	ck_assert_str_eq(conf.endpoint,
			 "https://s3.ap-northeast-1.amazonaws.com");

	write_file(credfile, "[cfg]\n"
			     "aws_access_key_id = AKIACRED\n"
			     "aws_secret_access_key = credSecret\n"
			     "region = ignored-in-credentials\n");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIACRED");
	ck_assert_str_eq(conf.region, "ap-northeast-1");

	/* AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE, with "~/" */
	snprintf(path, sizeof(path), "%s/myconf", home);
	write_file(path, "[profile cfg]\nregion = me-south-1\n");
	setenv_t("AWS_CONFIG_FILE", "~/myconf");
	snprintf(path, sizeof(path), "%s/mycred", home);
	write_file(path, "[cfg]\naws_access_key_id=AKIAMY\n"
			 "aws_secret_access_key=mySecret\n");
	setenv_t("AWS_SHARED_CREDENTIALS_FILE", path);
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "me-south-1");
	ck_assert_str_eq(conf.cred.access_key, "AKIAMY");
	ck_assert(strstr(conf.cred.source, "/mycred"));

	/* A role profile leaves the credentials to the chain (pf_creds). */
	unsetenv_t("AWS_CONFIG_FILE");
	unsetenv_t("AWS_SHARED_CREDENTIALS_FILE");
	write_file(conffile, "[profile role]\nrole_arn = arn:aws:iam::1:r\n"
			     "source_profile = default\n");
	o.profile = "role";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 1);
	ck_assert_str_eq(conf.cred.source, "");
	ck_assert_str_eq(conf.cred.access_key, "");

	/* A directory where the file should be is an error. */
	unlink(conffile);
	ck_assert_int_eq(mkdir(conffile, 0700), 0);
	o.profile = "cfg";
	expect_err("s3://bucket", &o, -EISDIR, "cannot read");
	ck_assert(strstr(err, conffile));
	rmdir(conffile);
}
END_TEST

START_TEST(test_missing)
{
	struct pf_s3_opts o = { 0 };

	/* No files, no environment: the chain goes on (container, IMDS) */
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 1);
	/* web identity in the environment: no profile is read for keys */
	write_file(credfile, "[default]\naws_access_key_id = AKIADEF\n"
			     "aws_secret_access_key = defSecret\n");
	setenv_t("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 1);
	ck_assert_str_eq(conf.cred.access_key, "");
	/* ... but keys in the environment come first */
	env_keys();
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 0);
	ck_assert_str_eq(conf.cred.source, "environment");
	unsetenv_t("AWS_ACCESS_KEY_ID");
	unsetenv_t("AWS_SECRET_ACCESS_KEY");
	unsetenv_t("AWS_WEB_IDENTITY_TOKEN_FILE");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 0);
	ck_assert_str_eq(conf.cred.access_key, "AKIADEF");
	unlink(credfile);
	/* Missing files are fine when nothing is needed from them. */
	o.no_sign = 1;
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);

	/* A named profile must exist somewhere. */
	o.profile = "nosuch";
	expect_err("s3://bucket", &o, -ENOENT,
		   "AWS profile 'nosuch' (from -o profile) not found in");
	ck_assert(strstr(err, credfile));
	ck_assert(strstr(err, conffile));
	o.profile = NULL;
	o.no_sign = 0;
	env_keys();
	setenv_t("AWS_PROFILE", "nosuch");
	expect_err("s3://bucket", &o, -ENOENT, "from AWS_PROFILE");

	/* A profile with a region but no keys */
	write_file(conffile, "[profile nosuch]\nregion = eu-west-1\n");
	unsetenv_t("AWS_ACCESS_KEY_ID");
	unsetenv_t("AWS_SECRET_ACCESS_KEY");
	expect_err("s3://bucket", &o, -ENOKEY, "has no credentials");

	/* Half a key pair */
	write_file(credfile, "[nosuch]\naws_access_key_id = AKIAHALF\n");
	expect_err("s3://bucket", &o, -ENOKEY,
		   "has aws_access_key_id but no aws_secret_access_key");
	ck_assert(strstr(err, credfile));
	ck_assert_ptr_null(strstr(err, "AKIAHALF"));

	/* No HOME at all */
	unsetenv_t("HOME");
	expect_err("s3://bucket", &o, -ENOENT, "HOME is not set");
	unsetenv_t("AWS_PROFILE");
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(conf.cred.chain, 1);
	env_keys();
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_str_eq(conf.region, "us-east-1");
}
END_TEST

/* No error line and no description ever holds a key. */
START_TEST(test_no_secret_in_messages)
{
	static const char *const secrets[] = {
		"AKIASECRETMARK", "S3cr3tMark/xyz", "T0kenMark+abc",
	};
	struct pf_s3_opts o = { 0 };
	char desc[1024];
	int ret;

	for (int round = 0; round < 8; round++) {
		memset(env_k, 0, sizeof(env_k));
		setenv_t("HOME", home);
		unlink(credfile);
		o = (struct pf_s3_opts){ 0 };
		switch (round) {
		case 0:	/* half env */
			setenv_t("AWS_ACCESS_KEY_ID", secrets[0]);
			break;
		case 1:
			setenv_t("AWS_SECRET_ACCESS_KEY", secrets[1]);
			setenv_t("AWS_SESSION_TOKEN", secrets[2]);
			break;
		case 2:	/* half profile */
			write_file(credfile, "[default]\naws_secret_access_"
					     "key = S3cr3tMark/xyz\n"
					     "aws_session_token="
					     "T0kenMark+abc\n");
			break;
		case 3:
			write_file(credfile, "[default]\naws_access_key_id"
					     " = AKIASECRETMARK\n");
			break;
		case 4:	/* bad characters */
			write_file(credfile, "[default]\naws_access_key_id = "
					     "AKIASECRETMARK\n"
					     "aws_secret_access_key = "
					     "S3cr3tMark/xyz \x01\n");
			break;
		case 5:	/* good keys, later error */
			setenv_t("AWS_ACCESS_KEY_ID", secrets[0]);
			setenv_t("AWS_SECRET_ACCESS_KEY", secrets[1]);
			setenv_t("AWS_SESSION_TOKEN", secrets[2]);
			o.endpoint = "gopher://x";
			break;
		case 6:
			write_file(credfile, "[default]\naws_access_key_id = "
					     "AKIASECRETMARK\n"
					     "aws_secret_access_key = "
					     "S3cr3tMark/xyz\n");
			o.addressing = "sideways";
			break;
		default: /* success: the description */
			write_file(credfile, "[default]\naws_access_key_id = "
					     "AKIASECRETMARK\n"
					     "aws_secret_access_key = "
					     "S3cr3tMark/xyz\n"
					     "aws_session_token="
					     "T0kenMark+abc\n");
			break;
		}
		memset(err, 0, sizeof(err));
		ret = resolve("s3://bucket/p", &o);
		if (round < 7) {
			ck_assert_msg(ret < 0, "round %d succeeded", round);
			ck_assert_msg(err[0], "round %d: no message", round);
		} else {
			ck_assert_int_eq(ret, 0);
			ck_assert_str_eq(conf.cred.session_token,
					 "T0kenMark+abc");
			pf_s3_describe(&conf, err, sizeof(err));
		}
		for (int i = 0; i < 3; i++)
			ck_assert_msg(!strstr(err, secrets[i]),
				      "round %d: '%s'", round, err);
		/* Nor a part of one */
		ck_assert_msg(!strstr(err, "Mark"), "round %d: '%s'", round,
			      err);
	}
	pf_s3_describe(&conf, desc, sizeof(desc));
	ck_assert(strstr(desc, "s3://bucket/p/"));
	ck_assert(strstr(desc, "credentials=profile default in "));
}
END_TEST

START_TEST(test_long_values)
{
	static char tok[5000];

	memset(tok, 'T', sizeof(tok) - 1);
	env_keys();
	setenv_t("AWS_SESSION_TOKEN", tok);
	expect_err("s3://bucket", NULL, -ENAMETOOLONG, "too long");
	ck_assert_ptr_null(strstr(err, "TTTT"));
	tok[4095] = '\0';
	ck_assert_int_eq(resolve("s3://bucket", NULL), 0);
	ck_assert_uint_eq(strlen(conf.cred.session_token), 4095);
}
END_TEST

/* ---- URLs ---- */

START_TEST(test_uri_encode)
{
	static const struct {
		const char *in;
		int keep;
		const char *out;
	} cases[] = {
		{ "", 1, "" },
		{ "AZaz09-_.~", 0, "AZaz09-_.~" },
		{ "a b", 1, "a%20b" },
		{ "a+b", 1, "a%2Bb" },
		{ "100%", 1, "100%25" },
		{ "a/b/c", 1, "a/b/c" },
		{ "a/b/c", 0, "a%2Fb%2Fc" },
		{ "=&?#", 0, "%3D%26%3F%23" },
		{ "caf\xc3\xa9/\xe6\x97\xa5", 1, "caf%C3%A9/%E6%97%A5" },
		{ "*'()!$,;:@[]", 1, "%2A%27%28%29%21%24%2C%3B%3A%40%5B%5D" },
		{ "\x01\x7f\xff", 1, "%01%7F%FF" },
	};
	char out[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = pf_s3_uri_encode(cases[i].in, cases[i].keep, out,
					 sizeof(out));

		ck_assert_str_eq(out, cases[i].out);
		ck_assert_int_eq(n, (int)strlen(cases[i].out));
	}
	/* Exactly fits, then one byte short */
	ck_assert_int_eq(pf_s3_uri_encode("a b", 1, out, 6), 5);
	ck_assert_int_eq(pf_s3_uri_encode("a b", 1, out, 5), -ENAMETOOLONG);
	ck_assert_int_eq(pf_s3_uri_encode("ab", 1, out, 2), -ENAMETOOLONG);
	ck_assert_int_eq(pf_s3_uri_encode("", 1, out, 0), -ENAMETOOLONG);
	ck_assert_int_eq(pf_s3_uri_encode("", 1, out, 1), 0);
}
END_TEST

START_TEST(test_object_url)
{
	struct pf_s3_opts o = { .no_sign = 1 };
	char url[256];

	ck_assert_int_eq(resolve("s3://my-bucket/datasets/c4", &o), 0);
	ck_assert_int_eq(pf_s3_object_url(&conf, "train/shard-00001.json.gz",
					  url, sizeof(url)), (int)strlen(url));
	ck_assert_str_eq(url, "https://my-bucket.s3.us-east-1.amazonaws.com/"
			      "datasets/c4/train/shard-00001.json.gz");
	ck_assert_int_eq(pf_s3_object_url(&conf, "a b+c%d~e/\xc3\xa9t\xc3\xa9",
					  url, sizeof(url)) > 0, 1);
	ck_assert_str_eq(url, "https://my-bucket.s3.us-east-1.amazonaws.com/"
			      "datasets/c4/a%20b%2Bc%25d~e/%C3%A9t%C3%A9");

	o.endpoint = "http://127.0.0.1:9000";
	ck_assert_int_eq(resolve("s3://bucket/pre fix/", &o), 0);
	ck_assert_int_eq(pf_s3_object_url(&conf, "x=1&y", url, sizeof(url)),
			 (int)strlen("http://127.0.0.1:9000/bucket/pre%20fix/"
				     "x%3D1%26y"));
	ck_assert_str_eq(url,
			 "http://127.0.0.1:9000/bucket/pre%20fix/x%3D1%26y");

	o.endpoint = "http://minio.local:9000";
	o.addressing = "virtual";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_eq(pf_s3_object_url(&conf, "k", url, sizeof(url)), 32);
	ck_assert_str_eq(url, "http://bucket.minio.local:9000/k");

	o.endpoint = NULL;
	o.addressing = NULL;
	ck_assert_int_eq(resolve("s3://my.dotted.bucket", &o), 0);
	ck_assert_int_eq(pf_s3_object_url(&conf, "k", url, sizeof(url)) > 0,
			 1);
	ck_assert_str_eq(url, "https://s3.us-east-1.amazonaws.com/"
			      "my.dotted.bucket/k");

	ck_assert_int_eq(pf_s3_object_url(&conf, "", url, sizeof(url)),
			 -EINVAL);
	ck_assert_int_eq(pf_s3_object_url(&conf, "/k", url, sizeof(url)),
			 -EINVAL);
	ck_assert_int_eq(pf_s3_object_url(&conf, "k", url, 20),
			 -ENAMETOOLONG);
	ck_assert_str_eq(url, "");
}
END_TEST

START_TEST(test_list_url)
{
	struct pf_s3_opts o = { .no_sign = 1 };
	char url[512], lp[256];

	ck_assert_int_eq(resolve("s3://my-bucket/datasets/c4", &o), 0);
	ck_assert_int_gt(pf_s3_list_url(&conf, "", NULL, 1000, url,
					sizeof(url), lp, sizeof(lp)), 0);
	ck_assert_str_eq(url, "https://my-bucket.s3.us-east-1.amazonaws.com/"
			      "?delimiter=%2F&list-type=2&max-keys=1000"
			      "&prefix=datasets%2Fc4%2F");
	ck_assert_str_eq(lp, "datasets/c4/");

	ck_assert_int_gt(pf_s3_list_url(&conf, "train/en b", "1/a+b=c==",
					500, url, sizeof(url), lp,
					sizeof(lp)), 0);
	ck_assert_str_eq(url, "https://my-bucket.s3.us-east-1.amazonaws.com/"
			      "?continuation-token=1%2Fa%2Bb%3Dc%3D%3D"
			      "&delimiter=%2F&list-type=2&max-keys=500"
			      "&prefix=datasets%2Fc4%2Ftrain%2Fen%20b%2F");
	ck_assert_str_eq(lp, "datasets/c4/train/en b/");

	/* path-style, the bucket root, default max-keys, empty token */
	o.endpoint = "http://127.0.0.1:9000/";
	ck_assert_int_eq(resolve("s3://bucket", &o), 0);
	ck_assert_int_gt(pf_s3_list_url(&conf, "", "", 0, url, sizeof(url),
					lp, sizeof(lp)), 0);
	ck_assert_str_eq(url, "http://127.0.0.1:9000/bucket?delimiter=%2F"
			      "&list-type=2&max-keys=1000&prefix=");
	ck_assert_str_eq(lp, "");
	ck_assert_int_gt(pf_s3_list_url(&conf, "d\xc3\xa9j\xc3\xa0", NULL, 1,
					url, sizeof(url), lp, sizeof(lp)), 0);
	ck_assert_str_eq(url, "http://127.0.0.1:9000/bucket?delimiter=%2F"
			      "&list-type=2&max-keys=1"
			      "&prefix=d%C3%A9j%C3%A0%2F");

	ck_assert_int_eq(pf_s3_list_url(&conf, "/x", NULL, 1, url,
					sizeof(url), lp, sizeof(lp)), -EINVAL);
	ck_assert_int_eq(pf_s3_list_url(&conf, "x/", NULL, 1, url,
					sizeof(url), lp, sizeof(lp)), -EINVAL);
	ck_assert_int_eq(pf_s3_list_url(&conf, "x", NULL, 1, url, 30, lp,
					sizeof(lp)), -ENAMETOOLONG);
	ck_assert_int_eq(pf_s3_list_url(&conf, "xyz", NULL, 1, url,
					sizeof(url), lp, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_sigv4_describe)
{
	struct pf_s3_opts o = { .no_sign = 1, .region = "eu-west-1" };
	char buf[512];

	ck_assert_int_eq(resolve("s3://bucket/a/b", &o), 0);
	pf_s3_sigv4_param(&conf, buf, sizeof(buf));
	ck_assert_str_eq(buf, "aws:amz:eu-west-1:s3");
	pf_s3_describe(&conf, buf, sizeof(buf));
	ck_assert_str_eq(buf, "s3://bucket/a/b/ region=eu-west-1 "
			      "endpoint=https://s3.eu-west-1.amazonaws.com "
			      "addressing=virtual credentials=none (no_sign)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3conf");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_source);
	tcase_add_test(tc, test_prefix_too_long);
	tcase_add_test(tc, test_region_precedence);
	tcase_add_test(tc, test_endpoint);
	tcase_add_test(tc, test_addressing);
	tcase_add_test(tc, test_cred_env);
	tcase_add_test(tc, test_cred_file);
	tcase_add_test(tc, test_cred_precedence);
	tcase_add_test(tc, test_config_file);
	tcase_add_test(tc, test_missing);
	tcase_add_test(tc, test_no_secret_in_messages);
	tcase_add_test(tc, test_long_values);
	tcase_add_test(tc, test_uri_encode);
	tcase_add_test(tc, test_object_url);
	tcase_add_test(tc, test_list_url);
	tcase_add_test(tc, test_sigv4_describe);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
