/*
 * check_creds.c - the credential chain (pf_creds.h): the parsers of STS
 * XML and of the metadata, credential_process and SSO JSON; the order of
 * the chain's sources (each pointed at a closed port, so the error names
 * the source that was chosen); credential_process run for real, renewed
 * by the refresh thread before expiry, and EACCES after an expiry that no
 * renewal cured.  The environment is a table of the test's own; HOME is
 * a temporary directory.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_creds.h"
#include "pf_s3conf.h"
#include "tmptree.h"

/* ---- the injected environment ---- */

#define NENV 24
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

static char home[256];
static char conffile[300];
static char credfile[300];

static void write_file(const char *path, const char *text, int mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, (mode_t)mode), 0);
}

static void setup(void)
{
	char aws[300];

	memset(env_k, 0, sizeof(env_k));
	snprintf(home, sizeof(home), "/tmp/check_creds.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(home));
	snprintf(aws, sizeof(aws), "%s/.aws", home);
	ck_assert_int_eq(mkdir(aws, 0700), 0);
	snprintf(conffile, sizeof(conffile), "%s/.aws/config", home);
	snprintf(credfile, sizeof(credfile), "%s/.aws/credentials", home);
	setenv_t("HOME", home);
}

static void teardown(void)
{
	rm_tree(home);
}

/* ---- parsers ---- */

static char err[1024];

START_TEST(test_time)
{
	int64_t t;

	ck_assert_int_eq(pf_creds_parse_time("1970-01-01T00:00:00Z", &t), 0);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(pf_creds_parse_time("2026-11-24T03:00:00Z", &t), 0);
	ck_assert_int_eq(t, 1795489200);
	ck_assert_int_eq(pf_creds_parse_time("2026-11-24T03:00:00.123Z", &t),
			 0);
	ck_assert_int_eq(t, 1795489200);
	ck_assert_int_eq(pf_creds_parse_time("2026-11-24T05:00:00+02:00",
					     &t), 0);
	ck_assert_int_eq(t, 1795489200);
	ck_assert_int_eq(pf_creds_parse_time("2026-11-24T03:00:00", &t),
			 -EINVAL);
	ck_assert_int_eq(pf_creds_parse_time("2026-13-24T03:00:00Z", &t),
			 -EINVAL);
	ck_assert_int_eq(pf_creds_parse_time("", &t), -EINVAL);
	ck_assert_int_eq(pf_creds_parse_time("2026-11-24T03:00:00Zjunk",
					     &t), -EINVAL);
}
END_TEST

static void parse_json_ok(const char *js, enum pf_cred_json kind,
			  const char *ak, const char *tok, int64_t exp)
{
	struct pf_cred_val v;
	int ret = pf_creds_parse_json(js, strlen(js), kind, &v, err,
				      sizeof(err));

	ck_assert_msg(ret == 0, "%s: %d %s", js, ret, err);
	ck_assert_str_eq(v.access_key, ak);
	ck_assert_str_eq(v.session_token, tok);
	ck_assert_int_eq(v.expiry, exp);
}

static void parse_json_bad(const char *js, enum pf_cred_json kind,
			   const char *needle)
{
	struct pf_cred_val v;
	int ret = pf_creds_parse_json(js, strlen(js), kind, &v, err,
				      sizeof(err));

	ck_assert_msg(ret < 0, "%s: accepted", js);
	ck_assert_msg(strstr(err, needle), "%s: '%s' lacks '%s'", js, err,
		      needle);
	ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
	ck_assert_str_eq(v.secret_key, "");
	/* never a value in the message */
	ck_assert_ptr_null(strstr(err, "SeCrEt"));
}

START_TEST(test_json)
{
	parse_json_ok("{\"Code\": \"Success\", \"AccessKeyId\": \"ASIA1\", "
		      "\"SecretAccessKey\": \"s/+=\", \"Token\": \"T1\", "
		      "\"Expiration\": \"2026-11-24T03:00:00Z\"}",
		      PF_CJSON_METADATA, "ASIA1", "T1", 1795489200);
	/* no Code, no Expiration (a container agent may omit both) */
	parse_json_ok("{\"AccessKeyId\": \"ASIA2\", \"SecretAccessKey\": "
		      "\"s\"}", PF_CJSON_METADATA, "ASIA2", "", 0);
	parse_json_ok("{\"Version\": 1, \"AccessKeyId\": \"AKIA3\", "
		      "\"SecretAccessKey\": \"s\", \"SessionToken\": \"T3\", "
		      "\"Expiration\": \"2026-11-24T03:00:00Z\"}",
		      PF_CJSON_PROCESS, "AKIA3", "T3", 1795489200);
	parse_json_ok("{\"roleCredentials\": {\"accessKeyId\": \"ASIA4\", "
		      "\"secretAccessKey\": \"s\", \"sessionToken\": \"T4\", "
		      "\"expiration\": 1795489200000}}", PF_CJSON_SSO,
		      "ASIA4", "T4", 1795489200);

	parse_json_bad("{\"AccessKeyId\": \"ASIA1\", \"SecretAcc", 
		       PF_CJSON_METADATA, "not JSON");
	parse_json_bad("[1, 2]", PF_CJSON_METADATA, "not a JSON object");
	parse_json_bad("{\"Code\": \"AssumeRoleUnauthorizedAccess\"}",
		       PF_CJSON_METADATA, "Code AssumeRoleUnauthorizedAccess");
	parse_json_bad("{\"AccessKeyId\": \"ASIA1\"}", PF_CJSON_METADATA,
		       "no SecretAccessKey");
	parse_json_bad("{\"AccessKeyId\": 5, \"SecretAccessKey\": \"SeCrEt\"}",
		       PF_CJSON_METADATA, "AccessKeyId is not a string");
	parse_json_bad("{\"AccessKeyId\": \"A\", \"SecretAccessKey\": "
		       "\"SeCrEt with blank\"}", PF_CJSON_METADATA,
		       "SecretAccessKey contains a blank");
	parse_json_bad("{\"AccessKeyId\": \"A\", \"SecretAccessKey\": "
		       "\"SeCrEt\", \"Expiration\": \"tomorrow\"}",
		       PF_CJSON_METADATA, "Expiration is not an ISO 8601");
	parse_json_bad("{\"AccessKeyId\": \"A\\u0000B\", \"SecretAccessKey\": "
		       "\"SeCrEt\"}", PF_CJSON_METADATA, "not JSON");
	parse_json_bad("{\"Version\": 2, \"AccessKeyId\": \"A\", "
		       "\"SecretAccessKey\": \"SeCrEt\"}", PF_CJSON_PROCESS,
		       "Version is not 1");
	parse_json_bad("{\"AccessKeyId\": \"A\", \"AccessKeyId\": \"B\", "
		       "\"SecretAccessKey\": \"SeCrEt\"}", PF_CJSON_METADATA,
		       "not JSON");
	parse_json_bad("{}", PF_CJSON_SSO, "no roleCredentials");
	parse_json_bad("{\"AccessKeyId\": \"\", \"SecretAccessKey\": "
		       "\"SeCrEt\"}", PF_CJSON_METADATA, "AccessKeyId is empty");
}
END_TEST

#define STS_OK(act, body)                                                 \
	"<" act "Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">" \
	"<" act "Result>" body "</" act "Result></" act "Response>"

START_TEST(test_sts)
{
	struct pf_cred_val v;
	const char *ok = STS_OK("AssumeRoleWithWebIdentity",
		"<SubjectFromWebIdentityToken>x</SubjectFromWebIdentityToken>"
		"<Credentials><AccessKeyId>ASIAW</AccessKeyId>"
		"<SecretAccessKey>sec/ret+</SecretAccessKey>"
		"<SessionToken>TOK&amp;EN</SessionToken>"
		"<Expiration>2026-11-24T03:00:00Z</Expiration></Credentials>");
	const char *errx = "<ErrorResponse><Error><Type>Sender</Type>"
			   "<Code>AccessDenied</Code><Message>Not authorized "
			   "to perform sts:AssumeRole\n</Message></Error>"
			   "</ErrorResponse>";
	const char *ent = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a "
			  "\"aaaa\">]><r>&a;</r>";
	const char *nocred = STS_OK("AssumeRole", "<AssumedRoleUser/>");
	const char *noexp = STS_OK("AssumeRole",
		"<Credentials><AccessKeyId>A</AccessKeyId>"
		"<SecretAccessKey>s</SecretAccessKey></Credentials>");

	ck_assert_int_eq(pf_creds_parse_sts(ok, strlen(ok), &v, err,
					    sizeof(err)), 0);
	ck_assert_str_eq(v.access_key, "ASIAW");
	ck_assert_str_eq(v.secret_key, "sec/ret+");
	ck_assert_str_eq(v.session_token, "TOK&EN");
	ck_assert_int_eq(v.expiry, 1795489200);

	ck_assert_int_eq(pf_creds_parse_sts(errx, strlen(errx), &v, err,
					    sizeof(err)), -EACCES);
	ck_assert_str_eq(err, "AccessDenied: Not authorized to perform "
			 "sts:AssumeRole ");
	ck_assert_int_eq(pf_creds_parse_sts(ent, strlen(ent), &v, err,
					    sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "entities"));
	ck_assert_int_eq(pf_creds_parse_sts(ok, strlen(ok) / 2, &v, err,
					    sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "not XML"));
	ck_assert_str_eq(v.access_key, "");
	ck_assert_int_eq(pf_creds_parse_sts(nocred, strlen(nocred), &v, err,
					    sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "no Credentials/AccessKeyId"));
	ck_assert_int_eq(pf_creds_parse_sts(noexp, strlen(noexp), &v, err,
					    sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "Expiration"));
	ck_assert_int_eq(pf_creds_parse_sts("", 0, &v, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

START_TEST(test_sso_cache)
{
	const char *js = "{\"startUrl\": \"https://a/start\", \"accessToken\": "
			 "\"tok\", \"expiresAt\": \"2026-11-24T03:00:00Z\"}";
	char tok[64];
	int64_t exp;

	ck_assert_int_eq(pf_creds_parse_sso_cache(js, strlen(js),
						  "https://a/start", tok,
						  sizeof(tok), &exp, err,
						  sizeof(err)), 0);
	ck_assert_str_eq(tok, "tok");
	ck_assert_int_eq(exp, 1795489200);
	ck_assert_int_eq(pf_creds_parse_sso_cache(js, strlen(js),
						  "https://b/start", tok,
						  sizeof(tok), &exp, err,
						  sizeof(err)), -ENOENT);
	js = "{\"startUrl\": \"https://a/start\", \"accessToken\": \"\", "
	     "\"expiresAt\": \"2026-11-24T03:00:00Z\"}";
	ck_assert_int_eq(pf_creds_parse_sso_cache(js, strlen(js),
						  "https://a/start", tok,
						  sizeof(tok), &exp, err,
						  sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "accessToken is empty");
	ck_assert_int_eq(pf_creds_parse_sso_cache("{", 1, "x", tok,
						  sizeof(tok), &exp, err,
						  sizeof(err)), -EINVAL);
}
END_TEST

/* ---- the chain ---- */

static struct pf_s3_conf conf;

/* Resolves and builds the provider; returns pf_creds_new()'s result. */
static int chain(const char *profile, struct pf_creds **out)
{
	struct pf_s3_opts o = { .profile = profile };
	struct pf_creds_cfg cfg = { .env = tenv, .profile = profile };
	int ret;

	*out = NULL;
	ret = pf_s3_resolve("s3://bucket", &o, tenv, &conf, err, sizeof(err));
	if (ret < 0)
		return ret;
	return pf_creds_new(&conf, &cfg, out, err, sizeof(err));
}

static void chain_err(const char *profile, const char *needle)
{
	struct pf_creds *c;
	int ret = chain(profile, &c);

	ck_assert_msg(ret < 0, "accepted (want '%s')", needle);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);
	ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
}

#define CLOSED "http://127.0.0.1:1"

START_TEST(test_order)
{
	struct pf_creds *c;
	struct pf_creds_sig sig;
	char path[400];

	/* 5: nothing but the instance metadata, which does not answer */
	setenv_t("AWS_EC2_METADATA_SERVICE_ENDPOINT", CLOSED);
	chain_err(NULL, "EC2 instance metadata at " CLOSED);
	ck_assert(strstr(err, "tried environment"));
	/* disabled */
	setenv_t("AWS_EC2_METADATA_DISABLED", "true");
	chain_err(NULL, "disabled by AWS_EC2_METADATA_DISABLED");
	setenv_t("AWS_EC2_METADATA_DISABLED", "false");
	/* 4: the container comes before the instance */
	setenv_t("AWS_CONTAINER_CREDENTIALS_FULL_URI", CLOSED "/creds");
	chain_err(NULL, "container credentials endpoint " CLOSED "/creds");
	setenv_t("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.0.0.1/c");
	chain_err(NULL, "must be https");
	setenv_t("AWS_CONTAINER_CREDENTIALS_FULL_URI", NULL);
	setenv_t("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds");
	setenv_t("AWS_CONTAINER_CREDENTIALS_FULL_URI", CLOSED "/creds");
	/* (the relative URI wins, and goes to 169.254.170.2: not tried) */
	/* 3: a profile with a process comes before the container */
	write_file(conffile, "[default]\ncredential_process = /bin/false\n",
		   0600);
	chain_err(NULL, "the credential_process of profile 'default' exited "
		  "with status 1");
	/* 2: web identity comes before the profile */
	setenv_t("AWS_WEB_IDENTITY_TOKEN_FILE", "/nonexistent/token");
	chain_err(NULL, "AWS_ROLE_ARN is not");
	setenv_t("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
	chain_err(NULL, "cannot read the web identity token file "
		  "/nonexistent/token");
	snprintf(path, sizeof(path), "%s/token", home);
	write_file(path, "jwt-SeCrEt\n", 0600);
	setenv_t("AWS_WEB_IDENTITY_TOKEN_FILE", path);
	setenv_t("AWS_ENDPOINT_URL_STS", CLOSED);
	chain_err(NULL, "web identity (role arn:aws:iam::1:role/r");
	ck_assert(strstr(err, "STS at " CLOSED "/"));
	ck_assert_ptr_null(strstr(err, "SeCrEt"));
	/* 1: keys in the environment come first of all */
	setenv_t("AWS_ACCESS_KEY_ID", "AKIAENV");
	setenv_t("AWS_SECRET_ACCESS_KEY", "envSeCrEt");
	ck_assert_int_eq(chain(NULL, &c), 0);
	ck_assert_int_eq(pf_creds_sign(c, &sig), 0);
	ck_assert_str_eq(sig.userpwd, "AKIAENV:envSeCrEt");
	ck_assert_str_eq(sig.token_hdr, "");
	pf_creds_sig_wipe(&sig);
	pf_creds_free(c);
	/* -o profile: that profile alone, even with keys in the env */
	write_file(conffile, "[profile p]\nrole_arn = arn:aws:iam::1:role/x\n"
		   "[profile loop]\nrole_arn = arn:aws:iam::1:role/y\n"
		   "source_profile = loop2\n[profile loop2]\n"
		   "role_arn = arn:aws:iam::1:role/z\nsource_profile = loop\n"
		   "[profile nokeys]\nregion = eu-west-1\n", 0600);
	chain_err("p", "has role_arn but neither source_profile nor "
		  "credential_source");
	chain_err("loop", "source_profile hops");
	chain_err("nokeys", "has no credentials");
}
END_TEST

START_TEST(test_profile_role_sso)
{
	char path[400];

	setenv_t("AWS_EC2_METADATA_DISABLED", "true");
	setenv_t("AWS_ENDPOINT_URL_STS", CLOSED);
	write_file(credfile, "[src]\naws_access_key_id = AKIASRC\n"
		   "aws_secret_access_key = srcSeCrEt\n", 0600);
	write_file(conffile, "[profile r]\nrole_arn = arn:aws:iam::1:role/r\n"
		   "source_profile = src\n"
		   "[profile e]\nrole_arn = arn:aws:iam::1:role/e\n"
		   "credential_source = Environment\n"
		   "[profile s]\nsso_session = corp\nsso_account_id = 1\n"
		   "sso_role_name = R\n"
		   "[sso-session corp]\nsso_start_url = https://x/start\n"
		   "sso_region = eu-west-1\n"
		   "[profile w]\nrole_arn = arn:aws:iam::1:role/w\n"
		   "web_identity_token_file = /nonexistent/w\n", 0600);
	/* AssumeRole is tried against STS with the source's keys */
	chain_err("r", "STS at " CLOSED "/");
	ck_assert(strstr(err, "role arn:aws:iam::1:role/r of profile r"));
	ck_assert(strstr(err, "AssumeRole with keys of profile src"));
	ck_assert_ptr_null(strstr(err, "SeCrEt"));
	chain_err("e", "credential_source Environment, but "
		  "AWS_ACCESS_KEY_ID");
	/* SSO without a cached token says what to run */
	chain_err("s", "run `aws sso login --profile s`");
	ck_assert(strstr(err, "no cached SSO token for https://x/start"));
	/* ... an expired one too */
	snprintf(path, sizeof(path), "%s/.aws/sso", home);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.aws/sso/cache", home);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.aws/sso/cache/a.json", home);
	write_file(path, "{\"startUrl\": \"https://x/start\", \"accessToken\": "
		   "\"t\", \"expiresAt\": \"2001-01-01T00:00:00Z\"}", 0600);
	chain_err("s", "it expired");
	/* a valid one goes to the portal */
	write_file(path, "{\"startUrl\": \"https://x/start\", \"accessToken\": "
		   "\"t\", \"expiresAt\": \"2999-01-01T00:00:00Z\"}", 0600);
	setenv_t("AWS_ENDPOINT_URL_SSO", CLOSED);
	chain_err("s", "SSO portal at " CLOSED);
	/* profile web identity: its token file is read */
	chain_err("w", "cannot read the web identity token file "
		  "/nonexistent/w");
}
END_TEST

/*
 * A credential_process that hands out a new key each run (counting in a
 * file), valid for @life seconds; after @ok_runs runs it fails.
 */
static void process_script(const char *path, const char *count, int life,
			   int ok_runs)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "n=$(cat %s 2>/dev/null || echo 0); n=$((n + 1)); "
		 "echo $n >%s\n"
		 "[ $n -gt %d ] && exit 3\n"
		 "exp=$(date -u -d \"+%d seconds\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
		 "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIAP%%d\", "
		 "\"SecretAccessKey\": \"s%%d\", \"SessionToken\": \"t%%d\", "
		 "\"Expiration\": \"%%s\"}' $n $n $n $exp\n",
		 count, count, ok_runs, life);
	write_file(path, text, 0700);
}

START_TEST(test_process_refresh)
{
	struct pf_creds *c;
	struct pf_creds_sig sig;
	char script[400], count[400], conf_text[600];
	unsigned ok, failed;
	time_t t0;

	snprintf(script, sizeof(script), "%s/proc.sh", home);
	snprintf(count, sizeof(count), "%s/count", home);
	process_script(script, count, 4, 1000);
	snprintf(conf_text, sizeof(conf_text),
		 "[profile p]\ncredential_process = %s\n", script);
	write_file(conffile, conf_text, 0600);
	setenv_t("PF_CREDS_MARGIN_S", "2");
	ck_assert_int_eq(chain("p", &c), 0);
	ck_assert_int_eq(pf_creds_sign(c, &sig), 0);
	ck_assert_str_eq(sig.userpwd, "AKIAP1:s1");
	ck_assert_str_eq(sig.token_hdr, "x-amz-security-token: t1");
	/* renewed in the background 2 s before the 4 s are up */
	t0 = time(NULL);
	while (time(NULL) - t0 < 8) {
		pf_creds_counts(c, &ok, &failed);
		if (ok >= 2)
			break;
		usleep(100000);
		/* signing never fails meanwhile */
		ck_assert_int_eq(pf_creds_sign(c, &sig), 0);
	}
	ck_assert_uint_ge(ok, 2);
	ck_assert_uint_eq(failed, 0);
	ck_assert_int_eq(pf_creds_sign(c, &sig), 0);
	ck_assert_str_ne(sig.userpwd, "AKIAP1:s1");
	pf_creds_sig_wipe(&sig);
	pf_creds_free(c);
}
END_TEST

START_TEST(test_process_expiry)
{
	struct pf_creds *c;
	struct pf_creds_sig sig;
	char script[400], count[400], conf_text[600];
	unsigned ok, failed;
	time_t t0;
	int ret = 0;

	snprintf(script, sizeof(script), "%s/proc.sh", home);
	snprintf(count, sizeof(count), "%s/count", home);
	/* one good run, then every renewal fails */
	process_script(script, count, 3, 1);
	snprintf(conf_text, sizeof(conf_text),
		 "[profile p]\ncredential_process = %s\n", script);
	write_file(conffile, conf_text, 0600);
	setenv_t("PF_CREDS_MARGIN_S", "1");
	ck_assert_int_eq(chain("p", &c), 0);
	ck_assert_int_eq(pf_creds_sign(c, &sig), 0);
	t0 = time(NULL);
	while (time(NULL) - t0 < 8) {
		ret = pf_creds_sign(c, &sig);
		if (ret < 0)
			break;
		usleep(100000);
	}
	ck_assert_int_eq(ret, -EACCES);
	ck_assert_str_eq(sig.userpwd, "");
	pf_creds_counts(c, &ok, &failed);
	ck_assert_uint_eq(ok, 0);
	ck_assert_uint_ge(failed, 1);
	/* the old keys were used until the expiry: at least ~2 s */
	ck_assert_int_ge(time(NULL) - t0, 1);
	pf_creds_free(c);
}
END_TEST

START_TEST(test_anonymous_static)
{
	struct pf_s3_opts o = { .no_sign = 1 };
	struct pf_creds_cfg cfg = { .env = tenv };
	struct pf_creds *c;
	struct pf_creds_sig sig;

	ck_assert_int_eq(pf_s3_resolve("s3://bucket", &o, tenv, &conf, err,
				       sizeof(err)), 0);
	ck_assert_int_eq(pf_creds_new(&conf, &cfg, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(pf_creds_sign(c, &sig), 1);
	pf_creds_free(c);
	pf_creds_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("creds");
	TCase *tc = tcase_create("parsers");
	TCase *tch = tcase_create("chain");

	tcase_add_test(tc, test_time);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_sts);
	tcase_add_test(tc, test_sso_cache);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tch, setup, teardown);
	tcase_set_timeout(tch, 30);
	tcase_add_test(tch, test_order);
	tcase_add_test(tch, test_profile_role_sso);
	tcase_add_test(tch, test_process_refresh);
	tcase_add_test(tch, test_process_expiry);
	tcase_add_test(tch, test_anonymous_static);
	suite_add_tcase(s, tch);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
