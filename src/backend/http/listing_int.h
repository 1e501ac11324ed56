/*
 * listing_int.h - private to the listing parsers (listing*.c): the small
 * scanning helpers they all use, and the decoders and date parsers one
 * parser's file lends another.  Not part of the library's interface.
 *
 * DESIGN
 * Pure functions over (pointer, length) input, no state, no locks: any
 * thread may call them.
 */
#ifndef PF_LISTING_INT_H
#define PF_LISTING_INT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pf_strbuf.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static inline int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 'a' - 'A' : c;
}

static inline bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Does [p, end) start with the NUL-terminated @lit, ignoring case? */
static inline bool starts_ci(const char *p, const char *end,
			     const char *lit)
{
	for (; *lit; lit++, p++) {
		if (p >= end || lower((unsigned char)*p) != lower(*lit))
			return false;
	}
	return true;
}

static inline bool starts_with(const char *p, const char *end,
			       const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0;
}

/* First occurrence of @lit in [p, end), or NULL. */
static inline const char *find(const char *p, const char *end,
			       const char *lit)
{
	size_t n = strlen(lit);

	while ((size_t)(end - p) >= n) {
		const char *q = memchr(p, lit[0], (size_t)(end - p) - n + 1);

		if (!q)
			return NULL;
		if (memcmp(q, lit, n) == 0)
			return q;
		p = q + 1;
	}
	return NULL;
}

static inline bool eq_lit(const char *p, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

/* A name the mount can show: not empty, ".", "..", no '/' or NUL, short. */
static inline bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > PF_LIST_NAME_MAX)
		return false;
	if (eq_lit(s, n, ".") || eq_lit(s, n, ".."))
		return false;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

/* Non-negative decimal that fits an int64_t, the whole of [p, p + n). */
static inline int parse_i64(const char *p, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)p[i]))
			return -EINVAL;
		if (v > (INT64_MAX - (p[i] - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

/* [p, p + *n) without the white space around it */
static inline const char *trim(const char *p, size_t *n)
{
	while (*n && is_space((unsigned char)*p)) {
		p++;
		(*n)--;
	}
	while (*n && is_space((unsigned char)p[*n - 1]))
		(*n)--;
	return p;
}

/* Is the text [p, p + n), white space around it aside, @lit? */
static inline bool text_is(const char *p, size_t n, const char *lit)
{
	p = trim(p, &n);
	return eq_lit(p, n, lit);
}

static inline int count_up(int count)
{
	return count < INT_MAX ? count + 1 : count;
}

/* ------------------------------------------------------------------ */
/* In listing.c                                                        */

/* The RFC 7231 date (or its obsolete forms) in s[0..n) as epoch seconds. */
int pf_list_http_date_n(const char *s, size_t n, int64_t *out);
/* The ISO 8601 UTC time in s[0..n) (S3's LastModified) as epoch seconds. */
int pf_list_iso8601_n(const char *s, size_t n, int64_t *out);
/*
 * nginx's date and size columns after a link's "</a>" in p[0..end),
 * into *mtime and *size where it finds them (listing_html.c).
 */
void pf_list_nginx_columns(const char *p, const char *end, int64_t *size,
		   int64_t *mtime);
/* Appends p[0..n) to s with XML/HTML character references decoded. */
void pf_list_xml_decode(struct pf_strbuf *s, const char *p, size_t n);
/* Appends p[0..n) to s with %XX escapes (and '+' when @plus) decoded. */
void pf_list_pct_decode(
	struct pf_strbuf *s, const char *p, size_t n, bool plus);

#endif
