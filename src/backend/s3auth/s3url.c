/*
 * s3url.c - the URLs of an s3:// source's objects and ListObjectsV2
 * pages.  They are encoded exactly as SigV4 wants the canonical request,
 * because curl 7.88 signs the path and the query as it finds them in the
 * URL.  Pure string work.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "pf_strbuf.h"
#include "s3conf_int.h"

static bool unreserved(unsigned char ch)
{
	return isalnum(ch) || ch == '-' || ch == '_' || ch == '.' ||
	       ch == '~';
}

/* Appends @in %-encoded (see pf_s3_uri_encode()) to @sb. */
static void uri_encode(struct pf_strbuf *sb, const char *in, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *s = (const unsigned char *)in; *s; s++) {
		/* isalnum() of the C locale: never a byte >= 0x80. */
		bool keep = (*s < 0x80 && unreserved(*s)) ||
			    (keep_slash && *s == '/');
		char esc[3];

		if (keep) {
			pf_strbuf_addch(sb, *s);
			continue;
		}
		esc[0] = '%';
		esc[1] = hex[*s >> 4];
		esc[2] = hex[*s & 15];
		pf_strbuf_add(sb, esc, sizeof(esc));
	}
}

/*
 * The length of a URL built in a fixed strbuf, or -ENAMETOOLONG (and ""
 * in the buffer) when it did not fit whole.
 */
static int url_end(struct pf_strbuf *sb)
{
	if (sb->failed || sb->len > INT_MAX) {
		pf_strbuf_reset(sb);
		return -ENAMETOOLONG;
	}
	return (int)sb->len;
}

int pf_s3_uri_encode(const char *in, int keep_slash, char *out,
		     size_t outlen)
{
	struct pf_strbuf sb;

	pf_strbuf_init_fixed(&sb, out, outlen);
	uri_encode(&sb, in, keep_slash);
	return url_end(&sb);
}

/* "scheme://host[:port]/bucket" or "scheme://bucket.host[:port]". */
static void url_base(struct pf_strbuf *b, const struct pf_s3_conf *c)
{
	const char *host = endpoint_host(c->endpoint);
	char scheme[16];
	size_t slen = (size_t)(host - c->endpoint);

	if (c->path_style || slen >= sizeof(scheme)) {
		pf_strbuf_addstr(b, c->endpoint);
		pf_strbuf_addstr(b, "/");
		pf_strbuf_addstr(b, c->bucket);
		return;
	}
	memcpy(scheme, c->endpoint, slen);
	scheme[slen] = '\0';
	pf_strbuf_addstr(b, scheme);
	pf_strbuf_addstr(b, c->bucket);
	pf_strbuf_addstr(b, ".");
	pf_strbuf_addstr(b, host);
}

int pf_s3_object_url(const struct pf_s3_conf *c, const char *path, char *out,
		     size_t outlen)
{
	struct pf_strbuf b;

	if (!path || !*path || path[0] == '/')
		return -EINVAL;
	pf_strbuf_init_fixed(&b, out, outlen);
	url_base(&b, c);
	pf_strbuf_addstr(&b, "/");
	uri_encode(&b, c->prefix, 1);
	uri_encode(&b, path, 1);
	return url_end(&b);
}

int pf_s3_list_url(const struct pf_s3_conf *c, const char *dir,
		   const char *token, unsigned max_keys, char *out,
		   size_t outlen, char *list_prefix, size_t lplen)
{
	struct pf_strbuf b;
	struct pf_strbuf lp;
	char num[16];

	if (!dir || dir[0] == '/' ||
	    (*dir && dir[strlen(dir) - 1] == '/'))
		return -EINVAL;
	pf_strbuf_init_fixed(&lp, list_prefix, lplen);
	pf_strbuf_addstr(&lp, c->prefix);
	if (*dir) {
		pf_strbuf_addstr(&lp, dir);
		pf_strbuf_addstr(&lp, "/");
	}
	if (url_end(&lp) < 0)
		return -ENAMETOOLONG;

	pf_strbuf_init_fixed(&b, out, outlen);
	url_base(&b, c);
	/* Path-style lists "/bucket", virtual-hosted "/": as SDKs do. */
	pf_strbuf_addstr(&b, c->path_style ? "?" : "/?");
	if (token && *token) {
		pf_strbuf_addstr(&b, "continuation-token=");
		uri_encode(&b, token, 0);
		pf_strbuf_addstr(&b, "&");
	}
	pf_strbuf_addstr(&b, "delimiter=%2F&list-type=2&max-keys=");
	snprintf(num, sizeof(num), "%u", max_keys ? max_keys : 1000);
	pf_strbuf_addstr(&b, num);
	pf_strbuf_addstr(&b, "&prefix=");
	uri_encode(&b, list_prefix, 0);
	return url_end(&b);
}

void pf_s3_sigv4_param(const struct pf_s3_conf *c, char *out, size_t outlen)
{
	snprintf(out, outlen, "aws:amz:%s:s3", c->region);
}

void pf_s3_describe(const struct pf_s3_conf *c, char *out, size_t outlen)
{
	snprintf(out, outlen, "s3://%s/%s region=%s endpoint=%s "
		 "addressing=%s credentials=%s", c->bucket, c->prefix,
		 c->region, c->endpoint,
		 c->path_style ? "path" : "virtual",
		 c->cred.anonymous ? "none (no_sign)" : c->cred.source);
}
