/*
 * listing.c - what the directory listing parsers share: the dates they
 * carry (pf_parse_http_date(), pf_parse_iso8601(), nginx's index
 * columns) and the decoding of character references and percent
 * escapes.  The parsers themselves are in listing_s3.c (S3
 * ListObjectsV2 XML and S3 error bodies), listing_html.c (HTML directory
 * indexes: nginx, Apache, lighttpd, python) and listing_json.c (nginx's
 * JSON autoindex, manifests); see pf_listing.h.
 *
 * DESIGN
 * Every parser is a hand-written scanner over a (pointer, end) pair: the
 * buffer is a server's response, not NUL-terminated, and nothing here
 * ever looks at the byte at end.  Text is decoded into fixed buffers on
 * the stack (struct pf_strbuf), which remember when something did not fit
 * instead of writing past them; an entry whose name overflows is skipped.
 *
 * The XML, JSON and manifest parsers run twice over the input: once to
 * check it is complete and well formed (and, for S3, to learn
 * EncodingType and the continuation token wherever they stand), once to
 * report the entries.  So a listing cut short by a dropped connection, or
 * a manifest with a bad line 1000, reports nothing and fails, instead of
 * handing over a partial directory.  HTML has no such notion of complete:
 * its parser reports links as it finds them, and keeps the names it
 * reported in a per-call hash set to skip a second link to the same name.
 *
 * Threads: none of its own, no locks and no global state that changes;
 * any thread may call any parser at once (the objstore backend's FUSE
 * workers and its listings refresher, the fuzz targets, the tests).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_listing.h"
#include "pf_strbuf.h"
#include "listing_int.h"

/* ------------------------------------------------------------------ */
/* Dates                                                               */

static const char *const months[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

static const char *const wkdays[7] = {
	"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
	"Sunday",
};

struct cur {
	const char *p;
	const char *end;
};

static bool cur_lit(struct cur *c, const char *lit)
{
	if (!starts_with(c->p, c->end, lit))
		return false;
	c->p += strlen(lit);
	return true;
}

/* Exactly @n digits. */
static bool cur_num(struct cur *c, int n, int *out)
{
	int v = 0;

	if (c->end - c->p < n)
		return false;
	for (int i = 0; i < n; i++) {
		if (!is_digit((unsigned char)c->p[i]))
			return false;
		v = v * 10 + (c->p[i] - '0');
	}
	c->p += n;
	*out = v;
	return true;
}

static bool cur_month(struct cur *c, int *mon)
{
	for (int i = 0; i < 12; i++) {
		if (cur_lit(c, months[i])) {
			*mon = i;
			return true;
		}
	}
	return false;
}

/* A weekday, its three-letter abbreviation or (full) its whole name. */
static bool cur_wkday(struct cur *c, bool full)
{
	for (int i = 0; i < 7; i++) {
		size_t n = full ? strlen(wkdays[i]) : 3;

		if ((size_t)(c->end - c->p) >= n &&
		    memcmp(c->p, wkdays[i], n) == 0) {
			c->p += n;
			return true;
		}
	}
	return false;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Checks the fields and converts them, UTC. */
static int make_time(int year, int mon, int day, int hour, int min, int sec,
		     int64_t *out)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30,
				       31, 31, 30, 31, 30, 31 };
	struct tm tm;
	int dim;

	if (mon < 0 || mon > 11 || day < 1 || hour > 23 || min > 59 ||
	    sec > 60)
		return -EINVAL;
	dim = mdays[mon] + (mon == 1 && leap(year));
	if (day > dim)
		return -EINVAL;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year - 1900;
	tm.tm_mon = mon;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	/* the fields are in range, so timegm() cannot fail with a 64-bit
	 * time_t; -1 is then 1969-12-31 23:59:59, a real answer */
	*out = (int64_t)timegm(&tm);
	return 0;
}

static bool cur_hms(struct cur *c, int *h, int *m, int *s)
{
	return cur_num(c, 2, h) && cur_lit(c, ":") && cur_num(c, 2, m) &&
	       cur_lit(c, ":") && cur_num(c, 2, s);
}

int pf_list_http_date_n(const char *s, size_t n, int64_t *out)
{
	struct cur c = { s, s + n };
	int day, mon, year, h, m, sec;

	/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
	if (cur_wkday(&c, false) && cur_lit(&c, ", ")) {
		if (!cur_num(&c, 2, &day) || !cur_lit(&c, " ") ||
		    !cur_month(&c, &mon) || !cur_lit(&c, " ") ||
		    !cur_num(&c, 4, &year) || !cur_lit(&c, " ") ||
		    !cur_hms(&c, &h, &m, &sec) || !cur_lit(&c, " GMT") ||
		    c.p != c.end)
			return -EINVAL;
		return make_time(year, mon, day, h, m, sec, out);
	}
	/* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
	c.p = s;
	if (cur_wkday(&c, true) && cur_lit(&c, ", ")) {
		if (!cur_num(&c, 2, &day) || !cur_lit(&c, "-") ||
		    !cur_month(&c, &mon) || !cur_lit(&c, "-") ||
		    !cur_num(&c, 2, &year) || !cur_lit(&c, " ") ||
		    !cur_hms(&c, &h, &m, &sec) || !cur_lit(&c, " GMT") ||
		    c.p != c.end)
			return -EINVAL;
		/* a fixed pivot keeps the function pure */
		year += year < 70 ? 2000 : 1900;
		return make_time(year, mon, day, h, m, sec, out);
	}
	/* asctime: Sun Nov  6 08:49:37 1994 */
	c.p = s;
	if (cur_wkday(&c, false) && cur_lit(&c, " ")) {
		if (!cur_month(&c, &mon) || !cur_lit(&c, " "))
			return -EINVAL;
		if (cur_lit(&c, " ")) {
			if (!cur_num(&c, 1, &day))
				return -EINVAL;
		} else if (!cur_num(&c, 2, &day)) {
			return -EINVAL;
		}
		if (!cur_lit(&c, " ") || !cur_hms(&c, &h, &m, &sec) ||
		    !cur_lit(&c, " ") || !cur_num(&c, 4, &year) ||
		    c.p != c.end)
			return -EINVAL;
		return make_time(year, mon, day, h, m, sec, out);
	}
	return -EINVAL;
}

int pf_parse_http_date(const char *s, int64_t *out)
{
	return pf_list_http_date_n(s, strlen(s), out);
}

int pf_list_iso8601_n(const char *s, size_t n, int64_t *out)
{
	struct cur c = { s, s + n };
	int year, mon, day, h, m, sec;

	if (!cur_num(&c, 4, &year) || !cur_lit(&c, "-") ||
	    !cur_num(&c, 2, &mon) || !cur_lit(&c, "-") ||
	    !cur_num(&c, 2, &day) || !cur_lit(&c, "T") ||
	    !cur_hms(&c, &h, &m, &sec))
		return -EINVAL;
	if (cur_lit(&c, ".")) {
		if (c.p == c.end || !is_digit((unsigned char)*c.p))
			return -EINVAL;
		while (c.p < c.end && is_digit((unsigned char)*c.p))
			c.p++;
	}
	cur_lit(&c, "Z");
	if (c.p != c.end)
		return -EINVAL;
	return make_time(year, mon - 1, day, h, m, sec, out);
}

int pf_parse_iso8601(const char *s, int64_t *out)
{
	return pf_list_iso8601_n(s, strlen(s), out);
}

/*
 * nginx's columns after a link's "</a>": "23-Nov-2026 09:44" (GMT unless
 * autoindex_localtime), then the size: exact digits, or "-" for a
 * directory, or "1024K" with autoindex_exact_size off (unknown to us).
 * Digits alone are exact in both settings (nginx rounds only >= 10000).
 */
void pf_list_nginx_columns(const char *p, const char *end, int64_t *size,
		   int64_t *mtime)
{
	struct cur c;
	int day, mon, year, h, m;
	const char *d;
	int64_t v;

	while (p < end && *p == ' ')
		p++;
	c.p = p;
	c.end = end;
	if (!cur_num(&c, 2, &day) || !cur_lit(&c, "-") ||
	    !cur_month(&c, &mon) || !cur_lit(&c, "-") ||
	    !cur_num(&c, 4, &year) || !cur_lit(&c, " ") ||
	    !cur_num(&c, 2, &h) || !cur_lit(&c, ":") || !cur_num(&c, 2, &m))
		return;
	if (c.p >= end || *c.p != ' ')
		return;
	if (make_time(year, mon, day, h, m, 0, &v) == 0)
		*mtime = v;
	p = c.p;
	while (p < end && *p == ' ')
		p++;
	d = p;
	while (p < end && is_digit((unsigned char)*p))
		p++;
	if (p == d)
		return;
	/* the end of the line: not "12K", not "2.0K" */
	if (p < end && *p != '\r' && *p != '\n' && *p != ' ')
		return;
	if (parse_i64(d, (size_t)(p - d), &v) == 0)
		*size = v;
}

/* ------------------------------------------------------------------ */
/* Character references and percent escapes                           */

/*
 * The XML/HTML character reference at p (which is '&'): its length, with
 * the code point in *cp, or 0 when it is none we know (the '&' is then
 * plain text, as browsers take it).
 */
static size_t char_ref(const char *p, const char *end, uint32_t *cp)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {
		{ "&amp;", '&' },  { "&lt;", '<' },   { "&gt;", '>' },
		{ "&quot;", '"' }, { "&apos;", '\'' },
	};
	const char *q = p + 2;
	uint32_t v = 0;
	int base = 10;

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (starts_with(p, end, named[i].name)) {
			*cp = (unsigned char)named[i].c;
			return strlen(named[i].name);
		}
	}
	if (end - p < 4 || p[1] != '#')
		return 0;
	if (*q == 'x' || *q == 'X') {
		base = 16;
		q++;
	}
	if (q >= end || hexval((unsigned char)*q) < 0 ||
	    hexval((unsigned char)*q) >= base)
		return 0;
	while (q < end && hexval((unsigned char)*q) >= 0 &&
	       hexval((unsigned char)*q) < base) {
		v = v * base + (uint32_t)hexval((unsigned char)*q);
		if (v > 0x10ffff)
			return 0;
		q++;
	}
	if (q >= end || *q != ';')
		return 0;
	if (v >= 0xd800 && v <= 0xdfff)
		return 0;
	*cp = v;
	return (size_t)(q + 1 - p);
}

/* Appends [p, p + n) to s with character references decoded. */
void pf_list_xml_decode(struct pf_strbuf *s, const char *p, size_t n)
{
	const char *end = p + n;

	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		uint32_t cp;
		size_t k;

		if (!amp) {
			pf_strbuf_add(s, p, (size_t)(end - p));
			return;
		}
		pf_strbuf_add(s, p, (size_t)(amp - p));
		k = char_ref(amp, end, &cp);
		if (k) {
			pf_strbuf_add_utf8(s, cp);
			p = amp + k;
		} else {
			pf_strbuf_addch(s, '&');
			p = amp + 1;
		}
	}
}

/*
 * Decodes %XX escapes of [p, p + n) into s ('+' is a space when @plus);
 * a '%' not followed by two hex digits stays as it is.
 */
void pf_list_pct_decode(struct pf_strbuf *s, const char *p, size_t n, bool plus)
{
	size_t from = 0;	/* start of the bytes copied as they are */

	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (p[i] == '%' && i + 2 < n) {
			hi = hexval((unsigned char)p[i + 1]);
			lo = hexval((unsigned char)p[i + 2]);
			if (hi >= 0 && lo >= 0) {
				pf_strbuf_add(s, p + from, i - from);
				pf_strbuf_addch(s, hi << 4 | lo);
				i += 2;
				from = i + 1;
				continue;
			}
		}
		if (plus && p[i] == '+') {
			pf_strbuf_add(s, p + from, i - from);
			pf_strbuf_addch(s, ' ');
			from = i + 1;
		}
	}
	pf_strbuf_add(s, p + from, n - from);
}
