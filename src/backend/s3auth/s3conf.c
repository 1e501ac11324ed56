/*
 * s3conf.c - resolves an s3:// source into bucket, prefix, region,
 * endpoint, addressing style and credentials, the way the AWS CLI would
 * for the same environment and shared files (which s3profile.c reads);
 * s3url.c builds the URLs of its objects and ListObjectsV2 pages.
 *
 * DESIGN: pure string work over the caller's buffers (but for the shared
 * files); the environment comes through an injected lookup, so the tests
 * run without touching the real one.  Secrets (key values) are copied
 * only into struct pf_s3_cred and into the scratch structs
 * pf_aws_profile, which are wiped before pf_s3_resolve() returns; error
 * messages name variables, profiles and files, never values.  The other
 * credential sources (roles, SSO, processes, web identity, containers,
 * instance metadata) are creds.c's: this file only reads their settings.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "pf_err.h"
#include "s3conf_int.h"

/* Longest bucket name and S3 key shown in an error message. */
#define SHOW 80

/* An unset and an empty variable mean the same, as for the AWS CLI. */
const char *pf_s3_env_get(pf_env_fn env, const char *name)
{
	const char *v = env ? env(name) : getenv(name);

	return v && *v ? v : NULL;
}

/* ---- the source: s3://bucket[/prefix] ---- */

static bool all_digits_and_dots(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]) && s[i] != '.')
			return false;
	return true;
}

static size_t dots(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += s[i] == '.';
	return n;
}

/* NULL if @b is a valid bucket name, else why not. */
static const char *bucket_problem(const char *b, size_t len)
{
	if (len < 3)
		return "shorter than 3 characters";
	if (len > 63)
		return "longer than 63 characters";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)b[i];

		if (isupper(ch))
			return "upper-case letters are not allowed";
		if (!islower(ch) && !isdigit(ch) && ch != '.' && ch != '-')
			return "only lower-case letters, digits, dots and "
			       "hyphens are allowed";
	}
	if (!isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[len - 1]))
		return "it must start and end with a letter or digit";
	for (size_t i = 0; i + 1 < len; i++)
		if (b[i] == '.' && b[i + 1] == '.')
			return "two dots in a row";
	if (all_digits_and_dots(b, len) && dots(b, len) == 3)
		return "it looks like an IP address";
	return NULL;
}

static int parse_source(const char *src, struct pf_s3_conf *c, char *err,
			size_t errlen)
{
	const char *b, *slash, *p, *why;
	size_t blen, plen;

	if (!src || strncasecmp(src, "s3://", 5) != 0) {
		pf_err_set(err, errlen, "not an s3:// source (expected "
		       "s3://BUCKET[/PREFIX])");
		return -EINVAL;
	}
	b = src + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen == 0) {
		pf_err_set(err, errlen, "no bucket name in '%.*s' (expected "
		       "s3://BUCKET[/PREFIX])", SHOW, src);
		return -EINVAL;
	}
	/* Never echo what may be "key:secret@bucket". */
	if (memchr(b, '@', blen) || memchr(b, ':', blen)) {
		pf_err_set(err, errlen, "an s3:// source carries no user name, "
		       "password or port: give credentials in the environment "
		       "or ~/.aws/credentials and the server with -o "
		       "endpoint=URL");
		return -EINVAL;
	}
	why = bucket_problem(b, blen);
	if (why) {
		pf_err_set(err, errlen, "invalid bucket name '%.*s': %s (S3 "
		       "bucket names are 3 to 63 lower-case letters, digits, "
		       "dots and hyphens)", (int)(blen < SHOW ? blen : SHOW),
		       b, why);
		return -EINVAL;
	}
	memcpy(c->bucket, b, blen);
	c->bucket[blen] = '\0';

	/* The prefix is kept byte for byte, apart from leading slashes. */
	p = slash ? slash + 1 : "";
	while (*p == '/')
		p++;
	plen = strlen(p);
	if (plen + 2 > sizeof(c->prefix)) {
		pf_err_set(err, errlen, "prefix of '%.*s...' is too long (%zu "
		       "bytes, at most %zu)", SHOW, src, plen,
		       sizeof(c->prefix) - 2);
		return -ENAMETOOLONG;
	}
	memcpy(c->prefix, p, plen + 1);
	if (plen && p[plen - 1] != '/')
		strcat(c->prefix, "/");
	return 0;
}

/* ---- region, endpoint, addressing ---- */

static int check_region(const char *r, const char *from, char *err,
			size_t errlen)
{
	size_t n = strlen(r);

	/* It goes into a host name and into "aws:amz:REGION:s3". */
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)r[i];

		if (!isalnum(ch) && ch != '-' && ch != '_' && ch != '.') {
			pf_err_set(err, errlen,
				"bad region '%.*s' (from %s): use "
				"letters, digits and hyphens, e.g. us-east-1",
				SHOW, r, from);
			return -EINVAL;
		}
	}
	if (n >= 64) {
		pf_err_set(err, errlen,
			"bad region '%.*s...' (from %s): longer "
			"than 63 characters",
			SHOW, r, from);
		return -EINVAL;
	}
	return 0;
}

/* Length of the host part of @hp ("host[:port]" or "[v6][:port]"). */
static size_t host_len(const char *hp)
{
	if (hp[0] == '[')
		return strchr(hp, ']') + 1 - hp;
	return strcspn(hp, ":");
}

/*
 * Validates @in ("http[s]://host[:port][/]") and writes it to @out as
 * "scheme://host[:port]" with the scheme and host in lower case.
 */
static int parse_endpoint(const char *in, const char *from, char *out,
			  size_t outlen, char *err, size_t errlen)
{
	const char *scheme, *hp;
	size_t len, hlen;

	if (strchr(in, '@')) {
		pf_err_set(err, errlen, "endpoint (from %s) must not contain a "
		       "user name or password: give credentials in the "
		       "environment or ~/.aws/credentials", from);
		return -EINVAL;
	}
	if (strncasecmp(in, "https://", 8) == 0) {
		scheme = "https://";
		hp = in + 8;
	} else if (strncasecmp(in, "http://", 7) == 0) {
		scheme = "http://";
		hp = in + 7;
	} else {
		pf_err_set(err, errlen,
			"bad endpoint '%.*s' (from %s): it must "
			"start with http:// or https://",
			SHOW, in, from);
		return -EINVAL;
	}
	len = strlen(hp);
	while (len && hp[len - 1] == '/')
		len--;
	if (len == 0) {
		pf_err_set(err, errlen,
			"bad endpoint '%.*s' (from %s): no host", SHOW, in,
			from);
		return -EINVAL;
	}
	if (memchr(hp, '/', len) || memchr(hp, '?', len) ||
	    memchr(hp, '#', len)) {
		pf_err_set(err, errlen, "bad endpoint '%.*s' (from %s): give "
		       "scheme://host[:port] only, without a path",
		       SHOW, in, from);
		return -EINVAL;
	}
	if (hp[0] == '[') {
		const char *close = memchr(hp, ']', len);

		if (!close || close == hp + 1)
			goto bad_host;
		hlen = (size_t)(close - hp) + 1;
		for (size_t i = 1; i + 1 < hlen; i++)
			if (!isxdigit((unsigned char)hp[i]) && hp[i] != ':' &&
			    hp[i] != '.')
				goto bad_host;
	} else {
		hlen = 0;
		while (hlen < len && hp[hlen] != ':') {
			unsigned char ch = (unsigned char)hp[hlen];

			if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
				goto bad_host;
			hlen++;
		}
		if (hlen == 0)
			goto bad_host;
	}
	if (hlen < len) {
		unsigned long v = 0;
		size_t i;

		if (hp[hlen] != ':' || hlen + 1 == len || len - hlen > 6)
			goto bad_port;
		for (i = hlen + 1; i < len; i++) {
			if (!isdigit((unsigned char)hp[i]))
				goto bad_port;
			v = v * 10 + (unsigned long)(hp[i] - '0');
		}
		if (v == 0 || v > 65535)
			goto bad_port;
	}
	if (strlen(scheme) + len + 1 > outlen) {
		pf_err_set(err, errlen, "endpoint (from %s) is too long", from);
		return -ENAMETOOLONG;
	}
	strcpy(out, scheme);
	out += strlen(scheme);
	for (size_t i = 0; i < hlen; i++)
		out[i] = (char)tolower((unsigned char)hp[i]);
	memcpy(out + hlen, hp + hlen, len - hlen);
	out[len] = '\0';
	return 0;

bad_host:
	pf_err_set(err, errlen, "bad endpoint '%.*s' (from %s): the host must "
	       "be a DNS name, an IPv4 address or [IPv6]", SHOW, in, from);
	return -EINVAL;
bad_port:
	pf_err_set(err, errlen, "bad endpoint '%.*s' (from %s): the port must "
	       "be a number from 1 to 65535", SHOW, in, from);
	return -EINVAL;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* An AWS S3 host: "*.amazonaws.com" or, in China, "*.amazonaws.com.cn". */
static bool is_aws_host(const char *ep)
{
	const char *h = endpoint_host(ep);
	size_t n = host_len(h);

	return ends_with(h, n, ".amazonaws.com") ||
	       ends_with(h, n, ".amazonaws.com.cn");
}

/* An IP address cannot take "bucket." in front of it. */
static bool is_ip_host(const char *ep)
{
	const char *h = endpoint_host(ep);

	return h[0] == '[' || all_digits_and_dots(h, host_len(h));
}

/* ---- credentials ---- */

/*
 * Keys go into an Authorization header and a signature: printable ASCII
 * without blanks.  Says which setting is bad, never what it holds.
 */
static int check_secret(const char *v, const char *what, char *err,
			size_t errlen)
{
	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		if (*s <= ' ' || *s >= 0x7f) {
			pf_err_set(err, errlen, "%s contains a blank or a "
			       "character that is not printable ASCII", what);
			return -EINVAL;
		}
	}
	return 0;
}

static int cred_from_env(pf_env_fn env, struct pf_s3_cred *cr, char *err,
			 size_t errlen)
{
	const char *ak = pf_s3_env_get(env, "AWS_ACCESS_KEY_ID");
	const char *sk = pf_s3_env_get(env, "AWS_SECRET_ACCESS_KEY");
	const char *tok = pf_s3_env_get(env, "AWS_SESSION_TOKEN");
	int ret;

	if (!ak && !sk)
		return 0;
	if (!ak || !sk) {
		pf_err_set(err, errlen, "%s is set but %s is not: set both, or "
		       "neither to use ~/.aws/credentials",
		       ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
		       ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		return -ENOKEY;
	}
	if (!copy_str(cr->access_key, sizeof(cr->access_key), ak) ||
	    !copy_str(cr->secret_key, sizeof(cr->secret_key), sk) ||
	    !copy_str(cr->session_token, sizeof(cr->session_token),
		      tok ? tok : "")) {
		pf_err_set(err, errlen,
			"AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY "
			"or AWS_SESSION_TOKEN is too long");
		return -ENAMETOOLONG;
	}
	ret = check_secret(ak, "AWS_ACCESS_KEY_ID", err, errlen);
	if (ret == 0)
		ret = check_secret(sk, "AWS_SECRET_ACCESS_KEY", err, errlen);
	if (ret == 0)
		ret = check_secret(cr->session_token, "AWS_SESSION_TOKEN",
				   err, errlen);
	if (ret < 0)
		return ret;
	snprintf(cr->source, sizeof(cr->source), "environment%s",
		 tok ? ", with session token" : "");
	return 1;
}

/* 1 if @p (from @path) holds a key pair, 0 if it holds no key at all. */
static int cred_from_prof(const struct pf_aws_profile *p, const char *profile,
			  const char *path, struct pf_s3_cred *cr, char *err,
			  size_t errlen)
{
	int ret;

	if (!p->access_key[0] && !p->secret_key[0])
		return 0;
	if (!p->access_key[0] || !p->secret_key[0]) {
		pf_err_set(err, errlen,
			"AWS profile '%s' in %s has %s but no %s", profile,
			path,
			p->access_key[0] ? "aws_access_key_id"
					 : "aws_secret_access_key",
			p->access_key[0] ? "aws_secret_access_key"
					 : "aws_access_key_id");
		return -ENOKEY;
	}
	ret = check_secret(p->access_key, "aws_access_key_id", err, errlen);
	if (ret == 0)
		ret = check_secret(p->secret_key, "aws_secret_access_key",
				   err, errlen);
	if (ret == 0)
		ret = check_secret(p->session_token, "aws_session_token", err,
				   errlen);
	if (ret < 0) {
		/* Name the profile too; the message above has room. */
		size_t n = err && errlen ? strlen(err) : 0;

		if (err && n + 1 < errlen)
			snprintf(err + n, errlen - n, " (AWS profile '%s' in "
				 "%s)", profile, path);
		return ret;
	}
	memcpy(cr->access_key, p->access_key, sizeof(cr->access_key));
	memcpy(cr->secret_key, p->secret_key, sizeof(cr->secret_key));
	memcpy(cr->session_token, p->session_token,
	       sizeof(cr->session_token));
	snprintf(cr->source, sizeof(cr->source), "profile %s in %s%s",
		 profile, path, p->session_token[0] ?
				", with session token" : "");
	return 1;
}

int pf_s3_check_profile_name(const char *name, const char *from, char *err,
			     size_t errlen)
{
	if (strlen(name) > 128 || strpbrk(name, "[]\r\n")) {
		pf_err_set(err, errlen, "bad AWS profile name (from %s)", from);
		return -EINVAL;
	}
	return 0;
}

/* pf_s3_resolve()'s state: each setting and where it came from. */
struct resolve {
	const struct pf_s3_opts *o;
	pf_env_fn env;
	struct pf_s3_conf *out;
	const char *profile;
	const char *profile_from;	/* NULL: the default profile */
	const char *region;
	const char *region_from;
	/* what the credentials file and the config file say of the
	 * profile (secrets: wiped before pf_s3_resolve() returns) */
	struct pf_aws_profile *pc;
	struct pf_aws_profile *pg;
	char cred_path[512];
	char conf_path[512];
	char *err;
	size_t errlen;
};

/* The profile: -o profile, else AWS_PROFILE, else "default". */
static int pick_profile(struct resolve *r)
{
	if (r->o->profile && *r->o->profile) {
		r->profile = r->o->profile;
		r->profile_from = "-o profile";
	} else if (pf_s3_env_get(r->env, "AWS_PROFILE")) {
		r->profile = pf_s3_env_get(r->env, "AWS_PROFILE");
		r->profile_from = "AWS_PROFILE";
	}
	if (!r->profile_from)
		return 0;
	return pf_s3_check_profile_name(r->profile, r->profile_from, r->err,
				  r->errlen);
}

/* The region the options or the environment give, if any. */
static void pick_region(struct resolve *r)
{
	if (r->o->region && *r->o->region) {
		r->region = r->o->region;
		r->region_from = "-o region";
	} else if (pf_s3_env_get(r->env, "AWS_REGION")) {
		r->region = pf_s3_env_get(r->env, "AWS_REGION");
		r->region_from = "AWS_REGION";
	} else if (pf_s3_env_get(r->env, "AWS_DEFAULT_REGION")) {
		r->region = pf_s3_env_get(r->env, "AWS_DEFAULT_REGION");
		r->region_from = "AWS_DEFAULT_REGION";
	}
}

/* no_sign, else the environment's keys unless -o profile names others. */
static int creds_before_files(struct resolve *r)
{
	struct pf_s3_conf *out = r->out;
	/*
	 * Like the AWS CLI's --profile, -o profile= names the credentials
	 * to use even when the environment has keys; AWS_PROFILE does not
	 * override AWS_ACCESS_KEY_ID.
	 */
	bool env_first = !(r->o->profile && *r->o->profile);
	int ret;

	if (r->o->no_sign) {
		out->cred.anonymous = 1;
		snprintf(out->cred.source, sizeof(out->cred.source),
			 "none (no_sign)");
	} else if (env_first) {
		ret = cred_from_env(r->env, &out->cred, r->err, r->errlen);
		if (ret < 0)
			return ret;
		/* web identity comes before the shared files */
		if (!out->cred.source[0] &&
		    pf_s3_env_get(r->env, "AWS_WEB_IDENTITY_TOKEN_FILE"))
			out->cred.chain = 1;
	}
	return 0;
}

/* The profile in the shared files: it must be there if it was named. */
static int read_files(struct resolve *r)
{
	char *err = r->err;
	size_t errlen = r->errlen;
	int ret;

	ret = pf_s3_aws_path(r->env, "AWS_SHARED_CREDENTIALS_FILE", "credentials",
		       r->cred_path, sizeof(r->cred_path), err, errlen);
	if (ret == 0)
		ret = pf_s3_aws_path(r->env, "AWS_CONFIG_FILE", "config",
			       r->conf_path, sizeof(r->conf_path), err,
			       errlen);
	if (ret == 0)
		ret = pf_s3_ini_scan(r->cred_path, INI_CRED, r->profile, r->pc, err,
			       errlen);
	if (ret == 0)
		ret = pf_s3_ini_scan(r->conf_path, INI_CONF, r->profile, r->pg, err,
			       errlen);
	if (ret < 0)
		return ret;
	if (r->profile_from && !r->pc->found && !r->pg->found) {
		if (!r->cred_path[0] && !r->conf_path[0])
			pf_err_set(err, errlen,
				"AWS profile '%s' (from "
				"%s) not found: HOME is not set, so "
				"there is no ~/.aws/credentials or "
				"~/.aws/config",
				r->profile, r->profile_from);
		else
			pf_err_set(err, errlen,
				"AWS profile '%s' (from "
				"%s) not found in %s or %s",
				r->profile, r->profile_from,
				r->cred_path[0] ? r->cred_path : "(none)",
				r->conf_path[0] ? r->conf_path : "(none)");
		return -ENOENT;
	}
	if (!r->region && r->pg->region[0]) {
		r->region = r->pg->region;
		r->region_from = "the AWS config file";
	}
	return 0;
}

/*
 * The profile's keys, else the rest of the chain (pf_creds_new()) where
 * the profile or the default profile may lead there.
 */
static int creds_from_files(struct resolve *r)
{
	struct pf_s3_cred *cred = &r->out->cred;
	int ret;

	ret = cred_from_prof(r->pc, r->profile, r->cred_path, cred, r->err,
			     r->errlen);
	if (ret == 0)
		ret = cred_from_prof(r->pg, r->profile, r->conf_path, cred,
				     r->err, r->errlen);
	if (ret < 0)
		return ret;
	if (ret == 0 && (r->pc->other_creds || r->pg->other_creds ||
			 !r->profile_from)) {
		/*
		 * A role, SSO, a process or web identity; or, for the
		 * default profile, the container and instance sources:
		 * pf_creds_new() goes on with the chain.
		 */
		cred->chain = 1;
	} else if (ret == 0) {
		pf_err_set(r->err, r->errlen,
			"AWS profile '%s' (from %s) has no "
			"credentials: put aws_access_key_id and "
			"aws_secret_access_key, role_arn, "
			"credential_process or sso_session in it, or "
			"use -o no_sign for a public bucket",
			r->profile, r->profile_from);
		return -ENOKEY;
	}
	return 0;
}

/* The endpoint: -o endpoint, the environment, else AWS's for the region. */
static int set_endpoint(struct resolve *r)
{
	struct pf_s3_conf *out = r->out;
	const char *ep = NULL;
	const char *ep_from = NULL;

	if (r->o->endpoint && *r->o->endpoint) {
		ep = r->o->endpoint;
		ep_from = "-o endpoint";
	} else if (pf_s3_env_get(r->env, "AWS_ENDPOINT_URL_S3")) {
		ep = pf_s3_env_get(r->env, "AWS_ENDPOINT_URL_S3");
		ep_from = "AWS_ENDPOINT_URL_S3";
	} else if (pf_s3_env_get(r->env, "AWS_ENDPOINT_URL")) {
		ep = pf_s3_env_get(r->env, "AWS_ENDPOINT_URL");
		ep_from = "AWS_ENDPOINT_URL";
	}
	if (ep)
		return parse_endpoint(ep, ep_from, out->endpoint,
				      sizeof(out->endpoint), r->err,
				      r->errlen);
	snprintf(out->endpoint, sizeof(out->endpoint),
		 "https://s3.%s.amazonaws.com%s", out->region,
		 strncmp(out->region, "cn-", 3) == 0 ? ".cn" : "");
	return 0;
}

/* Path or virtual-host addressing (auto: virtual on AWS's hosts). */
static int set_addressing(struct resolve *r)
{
	const char *a = r->o->addressing;
	struct pf_s3_conf *out = r->out;

	if (!a || !*a || strcmp(a, "auto") == 0) {
		out->path_style = !is_aws_host(out->endpoint) ||
				  strchr(out->bucket, '.');
	} else if (strcmp(a, "path") == 0) {
		out->path_style = 1;
	} else if (strcmp(a, "virtual") == 0) {
		if (is_ip_host(out->endpoint)) {
			pf_err_set(r->err, r->errlen, "addressing=virtual "
			       "needs an endpoint with a DNS name, not an IP "
			       "address (%s): use addressing=path",
			       out->endpoint);
			return -EINVAL;
		}
		out->path_style = 0;
	} else {
		pf_err_set(r->err, r->errlen,
			"bad value for addressing: '%.*s' (path, "
			"virtual or auto)",
			SHOW, a);
		return -EINVAL;
	}
	return 0;
}

int pf_s3_resolve(const char *source, const struct pf_s3_opts *o,
		  pf_env_fn env, struct pf_s3_conf *out, char *err,
		  size_t errlen)
{
	static const struct pf_s3_opts none;
	struct resolve r = { .o = o ? o : &none, .env = env, .out = out,
			     .profile = "default", .err = err,
			     .errlen = errlen };
	bool need_files;
	int ret;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	ret = parse_source(source, out, err, errlen);
	if (ret == 0)
		ret = pick_profile(&r);
	if (ret < 0)
		goto out;
	pick_region(&r);
	ret = creds_before_files(&r);
	if (ret < 0)
		goto out;
	need_files = r.profile_from || !r.region ||
		     (!out->cred.anonymous && !out->cred.source[0] &&
		      !out->cred.chain);

	r.pc = calloc(1, sizeof(*r.pc));
	r.pg = calloc(1, sizeof(*r.pg));
	if (!r.pc || !r.pg) {
		ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
		goto out;
	}
	if (need_files) {
		ret = read_files(&r);
		if (ret < 0)
			goto out;
	}
	if (!out->cred.anonymous && !out->cred.source[0] &&
	    !out->cred.chain) {
		ret = creds_from_files(&r);
		if (ret < 0)
			goto out;
	}

	if (!r.region) {
		r.region = "us-east-1";
		r.region_from = "the default";
	}
	ret = check_region(r.region, r.region_from, err, errlen);
	if (ret < 0)
		goto out;
	strcpy(out->region, r.region);
	ret = set_endpoint(&r);
	if (ret == 0)
		ret = set_addressing(&r);
out:
	if (r.pc)
		explicit_bzero(r.pc, sizeof(*r.pc));
	if (r.pg)
		explicit_bzero(r.pg, sizeof(*r.pg));
	free(r.pc);
	free(r.pg);
	if (ret < 0)
		explicit_bzero(&out->cred, sizeof(out->cred));
	return ret;
}
