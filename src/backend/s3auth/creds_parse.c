/*
 * creds_parse.c - the parsers of what AWS credential sources answer: the
 * JSON of the EC2 instance metadata service, of container endpoints, of
 * credential_process programs and of SSO, and the XML of STS.  JSON goes
 * through jansson, XML through expat; this file only picks fields and
 * checks them.
 *
 * DESIGN: pure functions over the caller's buffers, no global state, no
 * logging, so any thread may call them and libFuzzer can drive them
 * (tests/fuzz/fuzz_creds.c links this file alone).  Secrets are copied
 * into struct pf_cred_val only and wiped from it on every error path;
 * error messages name fields, never values, except an STS error's Code
 * and Message (which AWS writes without secrets), cut short and reduced
 * to printable ASCII.
 */
#include <errno.h>
#include <expat.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_err.h"
#include "pf_creds.h"

/* ---- times ---- */

static int digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char ch = (*p)[i];

		if (ch < '0' || ch > '9')
			return -EINVAL;
		v = v * 10 + (ch - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

int pf_creds_parse_time(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	time_t t;

	if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) ||
	    *s++ != '-' || digits(&s, 2, &d) || (*s != 'T' && *s != 't' &&
						*s != ' '))
		return -EINVAL;
	s++;
	if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi) ||
	    *s++ != ':' || digits(&s, 2, &sec))
		return -EINVAL;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s == '+' ? 1 : -1;
		s++;
		if (digits(&s, 2, &oh))
			return -EINVAL;
		if (*s == ':')
			s++;
		if (digits(&s, 2, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*s || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60 || oh > 23 || om > 59)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*out = (int64_t)t - sign * (oh * 3600 + om * 60);
	return 0;
}

/* ---- checks shared by both formats ---- */

/* Keys go into a header and a signature: printable ASCII, no blanks. */
static bool printable(const char *v)
{
	for (const unsigned char *s = (const unsigned char *)v; *s; s++)
		if (*s <= ' ' || *s >= 0x7f)
			return false;
	return true;
}

static int put(char *dst, size_t dstlen, const char *val, size_t n,
	       const char *field, char *err, size_t errlen)
{
	if (n >= dstlen) {
		pf_err_set(err, errlen,
			"%s is too long (%zu bytes, at most %zu)", field, n,
			dstlen - 1);
		return -ENAMETOOLONG;
	}
	if (memchr(val, '\0', n)) {
		pf_err_set(err, errlen, "%s contains a NUL byte", field);
		return -EINVAL;
	}
	memcpy(dst, val, n);
	dst[n] = '\0';
	if (!printable(dst)) {
		pf_err_set(err, errlen,
			"%s contains a blank or a character that "
			"is not printable ASCII",
			field);
		return -EINVAL;
	}
	return 0;
}

static int check_val(const struct pf_cred_val *v, const char *ak,
		     const char *sk, char *err, size_t errlen)
{
	if (!v->access_key[0] || !v->secret_key[0]) {
		pf_err_set(err, errlen, "no %s in the answer",
		       !v->access_key[0] ? ak : sk);
		return -EINVAL;
	}
	return 0;
}

/* ---- JSON ---- */

static int json_field(json_t *o, const char *name, bool need, char *dst,
		      size_t dstlen, char *err, size_t errlen)
{
	json_t *f = json_object_get(o, name);

	if (!f || json_is_null(f)) {
		if (need) {
			pf_err_set(err, errlen, "no %s in the answer", name);
			return -EINVAL;
		}
		return 0;
	}
	if (!json_is_string(f)) {
		pf_err_set(err, errlen, "%s is not a string", name);
		return -EINVAL;
	}
	if (need && json_string_length(f) == 0) {
		pf_err_set(err, errlen, "%s is empty", name);
		return -EINVAL;
	}
	return put(dst, dstlen, json_string_value(f), json_string_length(f),
		   name, err, errlen);
}

static int json_expiry(json_t *o, const char *name, bool millis, int64_t *out,
		       char *err, size_t errlen)
{
	json_t *f = json_object_get(o, name);

	*out = 0;
	if (!f || json_is_null(f))
		return 0;
	if (millis && json_is_integer(f)) {
		json_int_t ms = json_integer_value(f);

		if (ms <= 0) {
			pf_err_set(err, errlen, "%s is not a time", name);
			return -EINVAL;
		}
		*out = (int64_t)(ms / 1000);
		return 0;
	}
	if (!json_is_string(f) ||
	    pf_creds_parse_time(json_string_value(f), out) < 0) {
		pf_err_set(err, errlen, "%s is not an ISO 8601 time", name);
		return -EINVAL;
	}
	return 0;
}

static json_t *json_load(const char *buf, size_t len, char *err,
			 size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);

	if (!root) {
		/* je.text may quote the input: say where, not what */
		pf_err_set(err, errlen, "not JSON (line %d, column %d)",
			je.line, je.column);
		return NULL;
	}
	if (!json_is_object(root)) {
		pf_err_set(err, errlen, "the answer is not a JSON object");
		json_decref(root);
		return NULL;
	}
	return root;
}

/* Wipes what jansson copied of @j: its strings hold secrets. */
static void json_wipe(json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_string(j)) {
		/* jansson keeps the value in a buffer it owns */
		explicit_bzero((char *)json_string_value(j),
			       json_string_length(j));
	} else if (json_is_object(j)) {
		json_object_foreach(j, k, v)
			json_wipe(v);
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			json_wipe(v);
	}
}

/*
 * The four fields every credential answer has, under the names of its
 * kind: key id and secret (needed), session token, expiry (optional).
 */
struct json_names {
	const char *key;
	const char *secret;
	const char *token;
	const char *expiry;
	bool millis;		/* expiry in ms since the epoch, not ISO 8601 */
};

/* The names in IMDS and container answers, in credential_process output
 * and in SSO GetRoleCredentials, in that order. */
static const struct json_names metadata_names = {
	"AccessKeyId", "SecretAccessKey", "Token", "Expiration", false,
};
static const struct json_names process_names = {
	"AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration", false,
};
static const struct json_names sso_names = {
	"accessKeyId", "secretAccessKey", "sessionToken", "expiration", true,
};

static int json_creds(json_t *o, const struct json_names *n,
		      struct pf_cred_val *v, char *err, size_t errlen)
{
	int ret = json_field(o, n->key, true, v->access_key,
			     sizeof(v->access_key), err, errlen);

	if (!ret)
		ret = json_field(o, n->secret, true, v->secret_key,
				 sizeof(v->secret_key), err, errlen);
	if (!ret)
		ret = json_field(o, n->token, false, v->session_token,
				 sizeof(v->session_token), err, errlen);
	if (!ret)
		ret = json_expiry(o, n->expiry, n->millis, &v->expiry, err,
				  errlen);
	return ret;
}

int pf_creds_parse_json(const char *buf, size_t len, enum pf_cred_json kind,
			struct pf_cred_val *v, char *err, size_t errlen)
{
	json_t *root;
	json_t *o;
	int ret = -EINVAL;

	memset(v, 0, sizeof(*v));
	root = json_load(buf, len, err, errlen);
	if (!root)
		return -EINVAL;
	o = root;
	switch (kind) {
	case PF_CJSON_METADATA: {
		json_t *code = json_object_get(root, "Code");

		if (code && json_is_string(code) &&
		    strcmp(json_string_value(code), "Success") != 0) {
			char c[64];

			if (put(c, sizeof(c), json_string_value(code),
				json_string_length(code), "Code", err,
				errlen) == 0)
				pf_err_set(err, errlen,
					"the answer says Code %s", c);
			goto out;
		}
		ret = json_creds(o, &metadata_names, v, err, errlen);
		break;
	}
	case PF_CJSON_PROCESS: {
		json_t *ver = json_object_get(root, "Version");

		if (!ver || !json_is_integer(ver) ||
		    json_integer_value(ver) != 1) {
			pf_err_set(err, errlen, "Version is not 1");
			goto out;
		}
		ret = json_creds(o, &process_names, v, err, errlen);
		break;
	}
	case PF_CJSON_SSO:
		o = json_object_get(root, "roleCredentials");
		if (!o || !json_is_object(o)) {
			pf_err_set(err, errlen,
				"no roleCredentials object in the "
				"answer");
			goto out;
		}
		ret = json_creds(o, &sso_names, v, err, errlen);
		break;
	default:
		pf_err_set(err, errlen, "unknown answer kind");
		goto out;
	}
	if (!ret)
		ret = check_val(v, kind == PF_CJSON_SSO ? "accessKeyId" :
					"AccessKeyId",
				kind == PF_CJSON_SSO ? "secretAccessKey" :
						       "SecretAccessKey",
				err, errlen);
out:
	json_wipe(root);
	json_decref(root);
	if (ret < 0)
		explicit_bzero(v, sizeof(*v));
	return ret;
}

int pf_creds_parse_sso_cache(const char *buf, size_t len,
			     const char *start_url, char *tok, size_t toklen,
			     int64_t *expiry, char *err, size_t errlen)
{
	json_t *root = json_load(buf, len, err, errlen);
	json_t *url;
	int ret;

	if (toklen)
		tok[0] = '\0';
	*expiry = 0;
	if (!root)
		return -EINVAL;
	url = json_object_get(root, "startUrl");
	if (!url || !json_is_string(url) ||
	    strcmp(json_string_value(url), start_url) != 0) {
		json_decref(root);
		pf_err_set(err, errlen, "another start URL");
		return -ENOENT;
	}
	ret = json_field(root, "accessToken", true, tok, toklen, err, errlen);
	if (!ret)
		ret = json_expiry(root, "expiresAt", false, expiry, err,
				  errlen);
	if (!ret && !*expiry) {
		pf_err_set(err, errlen, "no expiresAt in the SSO token cache");
		ret = -EINVAL;
	}
	json_wipe(root);
	json_decref(root);
	if (ret < 0 && toklen)
		explicit_bzero(tok, toklen);
	return ret;
}

/* ---- STS XML ---- */

enum sts_field {
	F_NONE = -1,
	F_AK,
	F_SK,
	F_TOK,
	F_EXP,
	F_CODE,
	F_MSG,
	F_N,
};

struct sts_state {
	XML_Parser p;
	int depth;
	bool in_creds;		/* inside <Credentials> */
	int creds_depth;
	bool in_error;		/* inside <Error> */
	int error_depth;
	bool saw_error;
	enum sts_field cur;
	char *buf[F_N];		/* points into the fields below */
	size_t cap[F_N];
	size_t len[F_N];
	bool over[F_N];
	char exp[64];
	char code[64];
	char msg[200];
	struct pf_cred_val *v;
	int fail;		/* -errno of a handler, 0 */
};

/* Local name of a tag: namespaces are not used by STS, but a prefix
 * ("sts:Credentials") is tolerated. */
static const char *local(const XML_Char *name)
{
	const char *c = strrchr(name, ':');

	return c ? c + 1 : name;
}

static void XMLCALL sts_start(void *arg, const XML_Char *name,
			      const XML_Char **attrs)
{
	struct sts_state *st = arg;
	const char *n = local(name);

	(void)attrs;
	st->depth++;
	st->cur = F_NONE;
	if (st->in_creds && st->depth == st->creds_depth + 1) {
		if (strcmp(n, "AccessKeyId") == 0)
			st->cur = F_AK;
		else if (strcmp(n, "SecretAccessKey") == 0)
			st->cur = F_SK;
		else if (strcmp(n, "SessionToken") == 0)
			st->cur = F_TOK;
		else if (strcmp(n, "Expiration") == 0)
			st->cur = F_EXP;
	} else if (st->in_error && st->depth == st->error_depth + 1) {
		if (strcmp(n, "Code") == 0)
			st->cur = F_CODE;
		else if (strcmp(n, "Message") == 0)
			st->cur = F_MSG;
	} else if (!st->in_creds && strcmp(n, "Credentials") == 0) {
		st->in_creds = true;
		st->creds_depth = st->depth;
	} else if (!st->in_error && strcmp(n, "Error") == 0) {
		st->in_error = true;
		st->saw_error = true;
		st->error_depth = st->depth;
	}
	if (st->cur != F_NONE)
		st->len[st->cur] = 0;	/* the last one of a repeated tag */
}

static void XMLCALL sts_end(void *arg, const XML_Char *name)
{
	struct sts_state *st = arg;

	(void)name;
	if (st->in_creds && st->depth == st->creds_depth)
		st->in_creds = false;
	if (st->in_error && st->depth == st->error_depth)
		st->in_error = false;
	st->depth--;
	st->cur = F_NONE;
}

static void XMLCALL sts_text(void *arg, const XML_Char *s, int len)
{
	struct sts_state *st = arg;
	enum sts_field f = st->cur;

	if (f == F_NONE || len <= 0)
		return;
	if (st->len[f] + (size_t)len >= st->cap[f]) {
		/* Code and Message are only shown: keep their start */
		if (f == F_CODE || f == F_MSG) {
			size_t room = st->cap[f] - 1 - st->len[f];

			memcpy(st->buf[f] + st->len[f], s, room);
			st->len[f] += room;
			st->buf[f][st->len[f]] = '\0';
			return;
		}
		st->over[f] = true;
		return;
	}
	memcpy(st->buf[f] + st->len[f], s, (size_t)len);
	st->len[f] += (size_t)len;
	st->buf[f][st->len[f]] = '\0';
}

/* A DTD that declares entities is refused: no expansion games. */
static void XMLCALL sts_entity(void *arg, const XML_Char *name, int param,
			       const XML_Char *value, int vlen,
			       const XML_Char *base, const XML_Char *sysid,
			       const XML_Char *pubid, const XML_Char *notation)
{
	struct sts_state *st = arg;

	(void)name;
	(void)param;
	(void)value;
	(void)vlen;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	st->fail = -EINVAL;
	XML_StopParser(st->p, XML_FALSE);
}

/* Turns every byte of @s that is not printable ASCII into a blank. */
static void tidy(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < ' ' || ch >= 0x7f)
			ch = ' ';
		*o++ = (char)ch;
	}
	*o = '\0';
}

int pf_creds_parse_sts(const char *buf, size_t len, struct pf_cred_val *v,
		       char *err, size_t errlen)
{
	static const char *const names[F_N] = {
		"AccessKeyId", "SecretAccessKey", "SessionToken",
		"Expiration", "Code", "Message",
	};
	struct sts_state *st;
	int ret = -EINVAL;

	memset(v, 0, sizeof(*v));
	st = calloc(1, sizeof(*st));
	if (!st) {
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st->v = v;
	st->cur = F_NONE;
	st->buf[F_AK] = v->access_key;
	st->cap[F_AK] = sizeof(v->access_key);
	st->buf[F_SK] = v->secret_key;
	st->cap[F_SK] = sizeof(v->secret_key);
	st->buf[F_TOK] = v->session_token;
	st->cap[F_TOK] = sizeof(v->session_token);
	st->buf[F_EXP] = st->exp;
	st->cap[F_EXP] = sizeof(st->exp);
	st->buf[F_CODE] = st->code;
	st->cap[F_CODE] = sizeof(st->code);
	st->buf[F_MSG] = st->msg;
	st->cap[F_MSG] = sizeof(st->msg);

	st->p = XML_ParserCreate("UTF-8");
	if (!st->p) {
		free(st);
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	XML_SetUserData(st->p, st);
	XML_SetElementHandler(st->p, sts_start, sts_end);
	XML_SetCharacterDataHandler(st->p, sts_text);
	XML_SetEntityDeclHandler(st->p, sts_entity);
	if (len > (size_t)INT32_MAX) {
		pf_err_set(err, errlen, "the STS answer is too large");
		goto out;
	}
	if (XML_Parse(st->p, buf, (int)len, XML_TRUE) != XML_STATUS_OK) {
		if (st->fail)
			pf_err_set(err, errlen, "the STS answer declares XML "
			       "entities");
		else
			pf_err_set(err, errlen,
				"the STS answer is not XML (line "
				"%lu: %s)",
				(unsigned long)XML_GetCurrentLineNumber(st->p),
				XML_ErrorString(XML_GetErrorCode(st->p)));
		goto out;
	}
	if (st->saw_error) {
		tidy(st->code);
		tidy(st->msg);
		pf_err_set(err, errlen, "%s: %s", st->code[0] ? st->code :
		       "error", st->msg[0] ? st->msg : "(no message)");
		ret = -EACCES;
		goto out;
	}
	for (int f = F_AK; f <= F_EXP; f++) {
		if (st->over[f]) {
			pf_err_set(err, errlen, "%s is too long", names[f]);
			ret = -ENAMETOOLONG;
			goto out;
		}
		if (f != F_TOK && st->len[f] == 0) {
			pf_err_set(err, errlen, "no Credentials/%s in the STS "
			       "answer", names[f]);
			goto out;
		}
		if (f != F_EXP && (memchr(st->buf[f], '\0', st->len[f]) ||
				   !printable(st->buf[f]))) {
			pf_err_set(err, errlen, "%s contains a blank or a "
			       "character that is not printable ASCII",
			       names[f]);
			goto out;
		}
	}
	if (pf_creds_parse_time(st->exp, &v->expiry) < 0) {
		pf_err_set(err, errlen, "Expiration is not an ISO 8601 time");
		goto out;
	}
	ret = 0;
out:
	XML_ParserFree(st->p);
	explicit_bzero(st, sizeof(*st));
	free(st);
	if (ret < 0)
		explicit_bzero(v, sizeof(*v));
	return ret;
}
