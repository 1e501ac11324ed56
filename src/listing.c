/*
 * listing.c - parsers for directory listings: S3 ListObjectsV2 XML and S3
 * error bodies, HTML directory indexes (nginx, Apache, lighttpd, python),
 * nginx's JSON autoindex, manifests, and the dates they carry (see
 * pf_listing.h).
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
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_json.h"
#include "pf_listing.h"
#include "pf_strbuf.h"

/* room for the longest NUL-terminated key / href / etag we decode */
#define KEY_MAX 4096
#define HREF_MAX 8192
#define ETAG_MAX 256
/* XML elements nest at most this deep in anything we accept */
#define XML_DEPTH 32
/* JSON values likewise */
#define JSON_DEPTH 32

/* ------------------------------------------------------------------ */
/* Bounded output buffers: fixed pf_strbufs                            */

/*
 * After truncation, drops a UTF-8 sequence left incomplete at the end, so
 * a truncated message is still valid text when the original was.
 */
static void sb_trim_utf8(struct pf_strbuf *s)
{
	size_t i = s->len;
	size_t back = 0;
	unsigned char c;
	size_t need;

	while (i > 0 && back < 4) {
		c = (unsigned char)s->buf[i - 1];
		if ((c & 0xc0) != 0x80)
			break;
		i--;
		back++;
	}
	if (i == 0)
		return;
	c = (unsigned char)s->buf[i - 1];
	if (c < 0x80)
		return;
	if ((c & 0xe0) == 0xc0)
		need = 1;
	else if ((c & 0xf0) == 0xe0)
		need = 2;
	else if ((c & 0xf8) == 0xf0)
		need = 3;
	else
		return;
	if (back < need) {
		s->len = i - 1;
		s->buf[s->len] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 'a' - 'A' : c;
}

static bool is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Does [p, end) start with the NUL-terminated @lit, ignoring case? */
static bool starts_ci(const char *p, const char *end, const char *lit)
{
	for (; *lit; lit++, p++) {
		if (p >= end || lower((unsigned char)*p) != lower(*lit))
			return false;
	}
	return true;
}

static bool starts_with(const char *p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0;
}

/* First occurrence of @lit in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *lit)
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

static bool eq_lit(const char *p, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

/* A name the mount can show: not empty, ".", "..", no '/' or NUL, short. */
static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > PF_LIST_NAME_MAX)
		return false;
	if (eq_lit(s, n, ".") || eq_lit(s, n, ".."))
		return false;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

/* Non-negative decimal that fits an int64_t, the whole of [p, p + n). */
static int parse_i64(const char *p, size_t n, int64_t *out)
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
static const char *trim(const char *p, size_t *n)
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
static bool text_is(const char *p, size_t n, const char *lit)
{
	p = trim(p, &n);
	return eq_lit(p, n, lit);
}

static int count_up(int count)
{
	return count < INT_MAX ? count + 1 : count;
}

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

static int http_date_n(const char *s, size_t n, int64_t *out)
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
	return http_date_n(s, strlen(s), out);
}

static int iso8601_n(const char *s, size_t n, int64_t *out)
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
	return iso8601_n(s, strlen(s), out);
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
static void xml_decode(struct pf_strbuf *s, const char *p, size_t n)
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
static void pct_decode(struct pf_strbuf *s, const char *p, size_t n, bool plus)
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

/* ------------------------------------------------------------------ */
/* XML                                                                 */

enum xtype {
	X_EOF,
	X_START,	/* <name ...> */
	X_EMPTY,	/* <name .../> */
	X_CLOSE,	/* </name> */
	X_TEXT,		/* character data, references not decoded */
	X_CDATA,	/* <![CDATA[...]]> content, literal */
	X_BAD,
};

struct xml {
	const char *p;
	const char *end;
};

struct xtok {
	enum xtype type;
	const char *s;	/* local name (prefix stripped) or text */
	size_t n;
};

static bool xml_name_end(int c)
{
	return is_space(c) || c == '/' || c == '>';
}

static void xml_local(struct xtok *t)
{
	const char *colon = memchr(t->s, ':', t->n);

	while (colon) {
		t->n -= (size_t)(colon + 1 - t->s);
		t->s = colon + 1;
		colon = memchr(t->s, ':', t->n);
	}
}

/*
 * The next token; declarations, processing instructions and comments are
 * skipped.  X_BAD for anything unterminated or malformed.
 */
static void xml_next(struct xml *x, struct xtok *t)
{
	const char *p;
	const char *q;

	for (;;) {
		p = x->p;
		if (p >= x->end) {
			t->type = X_EOF;
			return;
		}
		if (*p != '<') {
			q = memchr(p, '<', (size_t)(x->end - p));
			if (!q)
				q = x->end;
			t->type = X_TEXT;
			t->s = p;
			t->n = (size_t)(q - p);
			x->p = q;
			return;
		}
		if (starts_with(p, x->end, "<?")) {
			q = find(p + 2, x->end, "?>");
			if (!q)
				goto bad;
			x->p = q + 2;
			continue;
		}
		if (starts_with(p, x->end, "<!--")) {
			q = find(p + 4, x->end, "-->");
			if (!q)
				goto bad;
			x->p = q + 3;
			continue;
		}
		if (starts_with(p, x->end, "<![CDATA[")) {
			q = find(p + 9, x->end, "]]>");
			if (!q)
				goto bad;
			t->type = X_CDATA;
			t->s = p + 9;
			t->n = (size_t)(q - t->s);
			x->p = q + 3;
			return;
		}
		if (starts_with(p, x->end, "<!")) {
			q = memchr(p, '>', (size_t)(x->end - p));
			if (!q)
				goto bad;
			x->p = q + 1;
			continue;
		}
		break;
	}
	p++;
	t->type = X_START;
	if (p < x->end && *p == '/') {
		t->type = X_CLOSE;
		p++;
	}
	t->s = p;
	while (p < x->end && !xml_name_end((unsigned char)*p))
		p++;
	t->n = (size_t)(p - t->s);
	if (t->n == 0 || p >= x->end)
		goto bad;
	xml_local(t);
	if (t->n == 0)
		goto bad;
	if (t->type == X_CLOSE) {
		while (p < x->end && is_space((unsigned char)*p))
			p++;
		if (p >= x->end || *p != '>')
			goto bad;
		x->p = p + 1;
		return;
	}
	/* attributes: skip to the '>' outside quotes */
	while (p < x->end && *p != '>') {
		if (*p == '"' || *p == '\'') {
			q = memchr(p + 1, *p, (size_t)(x->end - p - 1));
			if (!q)
				goto bad;
			p = q + 1;
			continue;
		}
		if (*p == '<')
			goto bad;
		p++;
	}
	if (p >= x->end)
		goto bad;
	if (p[-1] == '/')
		t->type = X_EMPTY;
	x->p = p + 1;
	return;
bad:
	t->type = X_BAD;
	x->p = x->end;
}

static bool all_space(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!is_space((unsigned char)p[i]))
			return false;
	}
	return true;
}

/*
 * A walk over one XML document, calling @elem for each element's start
 * and end and @text for its character data, with the path from the root
 * by element names.  Returns 0 at the end of a complete document whose
 * root is @root, -EPROTO else; the callbacks' non-zero returns stop it.
 */
struct xwalk {
	const char *root;
	/* names of the open elements, [0] the root */
	struct {
		const char *s;
		size_t n;
	} stack[XML_DEPTH];
	int depth;
	/* called with the element at stack[depth - 1] */
	int (*start)(struct xwalk *w);
	int (*end)(struct xwalk *w);
	/* character data inside stack[depth - 1] */
	void (*text)(struct xwalk *w, const char *s, size_t n, bool cdata);
	/* set once the root element was seen and is @root */
	bool rooted;
};

static bool xw_at(const struct xwalk *w, int level, const char *name)
{
	return w->depth > level && eq_lit(w->stack[level].s,
					  w->stack[level].n, name);
}

static int xml_walk(struct xwalk *w, const char *buf, size_t len)
{
	struct xml x = { buf, buf + len };
	struct xtok t;
	bool done = false;
	int ret;

	w->depth = 0;
	w->rooted = false;
	/* a UTF-8 byte order mark */
	if (starts_with(x.p, x.end, "\xef\xbb\xbf"))
		x.p += 3;
	for (;;) {
		xml_next(&x, &t);
		switch (t.type) {
		case X_EOF:
			return done ? 0 : -EPROTO;
		case X_BAD:
			return -EPROTO;
		case X_TEXT:
		case X_CDATA:
			if (w->depth == 0) {
				if (t.type == X_CDATA || !all_space(t.s, t.n))
					return -EPROTO;
			} else if (w->text) {
				w->text(w, t.s, t.n, t.type == X_CDATA);
			}
			break;
		case X_START:
		case X_EMPTY:
			if (done || w->depth == XML_DEPTH)
				return -EPROTO;
			if (w->depth == 0) {
				if (!eq_lit(t.s, t.n, w->root))
					return -EPROTO;
				w->rooted = true;
			}
			w->stack[w->depth].s = t.s;
			w->stack[w->depth].n = t.n;
			w->depth++;
			if (w->start) {
				ret = w->start(w);
				if (ret)
					return ret;
			}
			if (t.type == X_START)
				break;
			/* <x/> is <x></x> */
			/* fall through */
		case X_CLOSE:
			if (w->depth == 0)
				return -EPROTO;
			if (t.type == X_CLOSE &&
			    (t.n != w->stack[w->depth - 1].n ||
			     memcmp(t.s, w->stack[w->depth - 1].s, t.n) != 0))
				return -EPROTO;
			if (w->end) {
				ret = w->end(w);
				if (ret)
					return ret;
			}
			w->depth--;
			if (w->depth == 0)
				done = true;
			break;
		}
	}
}

/* ------------------------------------------------------------------ */
/* S3 ListObjectsV2                                                    */

enum s3_field {
	F_NONE,
	F_KEY,
	F_SIZE,
	F_MTIME,
	F_ETAG,
	F_PREFIX,	/* CommonPrefixes/Prefix */
	F_TRUNC,
	F_TOKEN,
	F_ENCODING,
};

struct s3 {
	struct xwalk w;		/* first: the callbacks get &s3->w */
	const char *prefix;
	size_t plen;
	pf_list_fn fn;
	void *arg;
	bool emit;		/* second pass */
	bool url;		/* EncodingType url: keys are %-encoded */
	int count;

	enum s3_field field;	/* the one being read */
	int field_depth;	/* w.depth of its element */
	bool field_bad;		/* an element inside it */
	struct pf_strbuf *cur;

	/* the entry inside Contents / CommonPrefixes */
	struct pf_strbuf key;
	struct pf_strbuf size;
	struct pf_strbuf mtime;
	struct pf_strbuf etag;
	char keyb[KEY_MAX];
	char sizeb[32];
	char mtimeb[64];
	char etagb[ETAG_MAX];

	struct pf_strbuf trunc;
	char truncb[16];
	struct pf_strbuf tok;	/* into the caller's buffer */
	bool have_tok;
	struct pf_strbuf enc;
	char encb[16];
};

static struct s3 *s3_of(struct xwalk *w)
{
	return (struct s3 *)w;
}

static void s3_begin(struct s3 *s, enum s3_field f, struct pf_strbuf *b)
{
	s->field = f;
	s->field_depth = s->w.depth;
	s->field_bad = false;
	s->cur = b;
	if (b)
		pf_strbuf_reset(b);
}

static int s3_start(struct xwalk *w)
{
	struct s3 *s = s3_of(w);

	if (s->field != F_NONE) {
		/* markup inside a field we read: not the text we expect */
		s->field_bad = true;
		return 0;
	}
	if (w->depth == 2) {
		if (xw_at(w, 1, "IsTruncated")) {
			s3_begin(s, F_TRUNC, &s->trunc);
		} else if (xw_at(w, 1, "NextContinuationToken")) {
			s3_begin(s, F_TOKEN, s->tok.alloc ? &s->tok : NULL);
			s->have_tok = true;
		} else if (xw_at(w, 1, "EncodingType")) {
			s3_begin(s, F_ENCODING, &s->enc);
		} else if (xw_at(w, 1, "Contents") ||
			   xw_at(w, 1, "CommonPrefixes")) {
			pf_strbuf_init_fixed(&s->key, s->keyb, sizeof(s->keyb));
			pf_strbuf_init_fixed(&s->size, s->sizeb, sizeof(s->sizeb));
			pf_strbuf_init_fixed(&s->mtime, s->mtimeb, sizeof(s->mtimeb));
			pf_strbuf_init_fixed(&s->etag, s->etagb, sizeof(s->etagb));
			/* no Key element at all is not an empty key */
			s->key.failed = true;
		}
	} else if (w->depth == 3 && xw_at(w, 1, "Contents")) {
		if (xw_at(w, 2, "Key"))
			s3_begin(s, F_KEY, &s->key);
		else if (xw_at(w, 2, "Size"))
			s3_begin(s, F_SIZE, &s->size);
		else if (xw_at(w, 2, "LastModified"))
			s3_begin(s, F_MTIME, &s->mtime);
		else if (xw_at(w, 2, "ETag"))
			s3_begin(s, F_ETAG, &s->etag);
	} else if (w->depth == 3 && xw_at(w, 1, "CommonPrefixes") &&
		   xw_at(w, 2, "Prefix")) {
		s3_begin(s, F_PREFIX, &s->key);
	}
	return 0;
}

static void s3_text(struct xwalk *w, const char *p, size_t n, bool cdata)
{
	struct s3 *s = s3_of(w);

	if (s->field == F_NONE || !s->cur || w->depth != s->field_depth)
		return;
	if (cdata)
		pf_strbuf_add(s->cur, p, n);
	else
		xml_decode(s->cur, p, n);
}

/* Reports the Contents or CommonPrefixes entry whose element ends. */
static int s3_entry(struct s3 *s, bool dir)
{
	struct pf_listent e;
	char dec[KEY_MAX];
	struct pf_strbuf d;
	const char *key = s->key.buf;
	size_t klen = s->key.len;
	int64_t v;

	if (s->key.failed)
		return 0;
	if (s->url) {
		pf_strbuf_init_fixed(&d, dec, sizeof(dec));
		pct_decode(&d, key, klen, true);
		if (d.failed)
			return 0;
		key = d.buf;
		klen = d.len;
	}
	if (klen < s->plen || memcmp(key, s->prefix, s->plen) != 0)
		return 0;
	key += s->plen;
	klen -= s->plen;
	if (dir) {
		/* "sub/" under the prefix; a delimiter other than '/' gives
		 * prefixes that are not directories of ours */
		if (klen == 0 || key[klen - 1] != '/')
			return 0;
		klen--;
	}
	if (!name_ok(key, klen))
		return 0;
	memset(&e, 0, sizeof(e));
	/* the name, without the prefix or a directory's '/' */
	memmove(s->keyb, key, klen);
	s->keyb[klen] = '\0';
	e.name = s->keyb;
	e.is_dir = dir;
	e.size = -1;
	e.mtime = -1;
	if (!dir) {
		size_t n = s->size.len;
		const char *t = trim(s->size.buf, &n);

		if (!s->size.failed && parse_i64(t, n, &v) == 0)
			e.size = v;
		n = s->mtime.len;
		t = trim(s->mtime.buf, &n);
		if (!s->mtime.failed && iso8601_n(t, n, &v) == 0)
			e.mtime = v;
		if (!s->etag.failed && s->etag.len)
			e.etag = s->etag.buf;
	}
	s->count = count_up(s->count);
	return s->fn(s->arg, &e);
}

static int s3_end(struct xwalk *w)
{
	struct s3 *s = s3_of(w);

	if (s->field != F_NONE && w->depth == s->field_depth) {
		if (s->field_bad && s->cur)
			s->cur->failed = true;
		s->field = F_NONE;
		s->cur = NULL;
		return 0;
	}
	if (w->depth == 2 && s->emit) {
		if (xw_at(w, 1, "Contents"))
			return s3_entry(s, false);
		if (xw_at(w, 1, "CommonPrefixes"))
			return s3_entry(s, true);
	}
	return 0;
}

static int s3_pass(struct s3 *s, const char *buf, size_t len)
{
	s->w.root = "ListBucketResult";
	s->w.start = s3_start;
	s->w.end = s3_end;
	s->w.text = s3_text;
	s->field = F_NONE;
	s->cur = NULL;
	s->count = 0;
	return xml_walk(&s->w, buf, len);
}

int pf_list_parse_s3(const char *buf, size_t len, const char *prefix,
		     pf_list_fn fn, void *arg, int *truncated, char *tok,
		     size_t toklen)
{
	struct s3 *s;
	bool trunc;
	int ret;

	if (!buf && len)
		return -EINVAL;
	/* ~5 KiB of buffers: off the caller's stack */
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->prefix = prefix ? prefix : "";
	s->plen = strlen(s->prefix);
	s->fn = fn;
	s->arg = arg;
	pf_strbuf_init_fixed(&s->trunc, s->truncb, sizeof(s->truncb));
	pf_strbuf_init_fixed(&s->enc, s->encb, sizeof(s->encb));
	if (tok && toklen)
		pf_strbuf_init_fixed(&s->tok, tok, toklen);

	ret = s3_pass(s, buf ? buf : "", len);
	if (ret)
		goto out;
	trunc = text_is(s->trunc.buf, s->trunc.len, "true");
	s->url = text_is(s->enc.buf, s->enc.len, "url");
	if (trunc) {
		if (!s->have_tok) {
			ret = -EPROTO;
			goto out;
		}
		if (!s->tok.alloc || s->tok.failed) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		/* a token is sent back in a URL: it must be a string */
		if (s->tok.len == 0 || memchr(s->tok.buf, '\0', s->tok.len)) {
			ret = -EPROTO;
			goto out;
		}
	}
	/* known before the entries, for a callback that stops early */
	if (truncated)
		*truncated = trunc;
	s->emit = true;
	ret = s3_pass(s, buf ? buf : "", len);
	if (ret)
		goto out;
	ret = s->count;
out:
	if (ret < 0 && tok && toklen)
		tok[0] = '\0';
	free(s);
	return ret;
}

/* ------------------------------------------------------------------ */
/* S3 error bodies                                                     */

struct s3err {
	struct xwalk w;
	struct pf_strbuf code;
	struct pf_strbuf msg;
	struct pf_strbuf *cur;
	bool have_msg;
};

static int s3err_start(struct xwalk *w)
{
	struct s3err *e = (struct s3err *)w;

	e->cur = NULL;
	if (w->depth == 2 && xw_at(w, 1, "Code"))
		e->cur = &e->code;
	else if (w->depth == 2 && xw_at(w, 1, "Message") && e->have_msg)
		e->cur = &e->msg;
	if (e->cur)
		pf_strbuf_reset(e->cur);
	return 0;
}

static int s3err_end(struct xwalk *w)
{
	struct s3err *e = (struct s3err *)w;

	e->cur = NULL;
	return 0;
}

static void s3err_text(struct xwalk *w, const char *p, size_t n, bool cdata)
{
	struct s3err *e = (struct s3err *)w;

	if (!e->cur || w->depth != 2)
		return;
	if (cdata)
		pf_strbuf_add(e->cur, p, n);
	else
		xml_decode(e->cur, p, n);
}

int pf_list_parse_s3_error(const char *buf, size_t len, char *code,
			   size_t codelen, char *msg, size_t msglen)
{
	struct s3err e;
	char dummy[1];

	if ((!buf && len) || !code || !codelen)
		return -EINVAL;
	memset(&e, 0, sizeof(e));
	e.w.root = "Error";
	e.w.start = s3err_start;
	e.w.end = s3err_end;
	e.w.text = s3err_text;
	pf_strbuf_init_fixed(&e.code, code, codelen);
	e.have_msg = msg && msglen;
	if (e.have_msg)
		pf_strbuf_init_fixed(&e.msg, msg, msglen);
	else
		pf_strbuf_init_fixed(&e.msg, dummy, sizeof(dummy));
	/* An error body cut short still says what went wrong: once the root
	 * is <Error>, take what was there. */
	xml_walk(&e.w, buf ? buf : "", len);
	if (!e.w.rooted) {
		code[0] = '\0';
		if (e.have_msg)
			msg[0] = '\0';
		return -EPROTO;
	}
	sb_trim_utf8(&e.code);
	if (e.have_msg)
		sb_trim_utf8(&e.msg);
	return 0;
}

/* ------------------------------------------------------------------ */
/* HTML indexes                                                        */

/* The names reported so far, for skipping a second link to one. */
struct nameset {
	char *arena;
	size_t used;
	size_t size;
	/* open addressing; 0 is an empty slot, else arena offset + 1 */
	size_t *slot;
	size_t nslots;
	size_t count;
};

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* Arena records are the name and its NUL. */
static bool ns_match(const struct nameset *ns, size_t off, const char *s,
		     size_t n)
{
	return ns->used - off > n && memcmp(ns->arena + off, s, n) == 0 &&
	       ns->arena[off + n] == '\0';
}

/* 1 if the name was there, 0 if added, -ENOMEM. */
static int ns_add(struct nameset *ns, const char *s, size_t n)
{
	size_t i;

	if (ns->count * 2 >= ns->nslots) {
		size_t nn = ns->nslots ? ns->nslots * 2 : 64;
		size_t *ns2 = calloc(nn, sizeof(*ns2));

		if (!ns2)
			return -ENOMEM;
		for (size_t k = 0; k < ns->nslots; k++) {
			size_t o = ns->slot[k];

			if (!o)
				continue;
			i = hash(ns->arena + o - 1, strlen(ns->arena + o - 1)) &
			    (nn - 1);
			while (ns2[i])
				i = (i + 1) & (nn - 1);
			ns2[i] = o;
		}
		free(ns->slot);
		ns->slot = ns2;
		ns->nslots = nn;
	}
	i = hash(s, n) & (ns->nslots - 1);
	while (ns->slot[i]) {
		if (ns_match(ns, ns->slot[i] - 1, s, n))
			return 1;
		i = (i + 1) & (ns->nslots - 1);
	}
	if (ns->size - ns->used < n + 1) {
		size_t nsize = ns->size ? ns->size : 4096;
		char *a;

		while (nsize - ns->used < n + 1)
			nsize *= 2;
		a = realloc(ns->arena, nsize);
		if (!a)
			return -ENOMEM;
		ns->arena = a;
		ns->size = nsize;
	}
	memcpy(ns->arena + ns->used, s, n);
	ns->arena[ns->used + n] = '\0';
	ns->slot[i] = ns->used + 1;
	ns->used += n + 1;
	ns->count++;
	return 0;
}

/*
 * nginx's columns after a link's "</a>": "23-Nov-2026 09:44" (GMT unless
 * autoindex_localtime), then the size: exact digits, or "-" for a
 * directory, or "1024K" with autoindex_exact_size off (unknown to us).
 * Digits alone are exact in both settings (nginx rounds only >= 10000).
 */
static void nginx_columns(const char *p, const char *end, int64_t *size,
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

/* The end of the tag at p ('<'), quotes respected; NULL if none. */
static const char *tag_end(const char *p, const char *end)
{
	while (p < end && *p != '>') {
		if (*p == '"' || *p == '\'') {
			const char *q;

			q = memchr(p + 1, *p, (size_t)(end - p - 1));
			if (!q)
				return NULL;
			p = q;
		}
		p++;
	}
	return p < end ? p : NULL;
}

/* The href value of the <a> tag [p, tend), or false. */
static bool a_href(const char *p, const char *tend, const char **v,
		   size_t *vn)
{
	p += 2;
	while (p < tend) {
		const char *name;
		size_t nn;

		while (p < tend && (is_space((unsigned char)*p) || *p == '/'))
			p++;
		name = p;
		while (p < tend && !is_space((unsigned char)*p) && *p != '=' &&
		       *p != '/')
			p++;
		nn = (size_t)(p - name);
		while (p < tend && is_space((unsigned char)*p))
			p++;
		if (p >= tend || *p != '=') {
			if (nn == 0 && p < tend)
				p++;
			continue;
		}
		p++;
		while (p < tend && is_space((unsigned char)*p))
			p++;
		if (p < tend && (*p == '"' || *p == '\'')) {
			const char *q;

			q = memchr(p + 1, *p, (size_t)(tend - p - 1));
			if (!q)
				return false;
			*v = p + 1;
			*vn = (size_t)(q - p - 1);
			p = q + 1;
		} else {
			*v = p;
			while (p < tend && !is_space((unsigned char)*p))
				p++;
			*vn = (size_t)(p - *v);
		}
		if (nn == 4 && starts_ci(name, tend, "href"))
			return true;
	}
	return false;
}

/*
 * The child an href names: decoded into @name, with *is_dir; false for
 * anything but a single relative name.
 */
static bool href_name(const char *v, size_t vn, struct pf_strbuf *name,
		      int *is_dir)
{
	char raw[HREF_MAX];
	struct pf_strbuf r;
	const char *p;
	size_t n;
	const char *colon;
	const char *slash;

	pf_strbuf_init_fixed(&r, raw, sizeof(raw));
	xml_decode(&r, v, vn);
	if (r.failed)
		return false;
	p = r.buf;
	n = r.len;
	while (n && is_space((unsigned char)*p)) {
		p++;
		n--;
	}
	while (n && is_space((unsigned char)p[n - 1]))
		n--;
	if (memchr(p, '?', n) || memchr(p, '#', n))
		return false;
	/* "scheme:..." (Apache writes "./a:b" for the file "a:b") */
	slash = memchr(p, '/', n);
	colon = memchr(p, ':', n);
	if (colon && (!slash || colon < slash))
		return false;
	if (n >= 2 && p[0] == '.' && p[1] == '/') {
		p += 2;
		n -= 2;
	}
	*is_dir = n && p[n - 1] == '/';
	if (*is_dir)
		n--;
	if (memchr(p, '/', n))
		return false;
	pf_strbuf_reset(name);
	pct_decode(name, p, n, false);
	return !name->failed && name_ok(name->buf, name->len);
}

/*
 * Script and style hold text, not markup (a script may well build links):
 * the first @lit (lower case, starting '<') from p on, or end.
 */
static const char *skip_to_ci(const char *p, const char *end,
			      const char *lit)
{
	while (p < end) {
		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			return end;
		if (starts_ci(p, end, lit))
			return p;
		p++;
	}
	return end;
}

/*
 * After an <a> tag: just past the "</a>" that closes it, or NULL when
 * another <a> (or the end) comes first.  Linear over the page in all.
 */
static const char *a_close(const char *p, const char *end)
{
	while (p < end) {
		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			return NULL;
		if (starts_ci(p, end, "</a>"))
			return p + 4;
		if (starts_ci(p, end, "<a") && p + 2 < end &&
		    is_space((unsigned char)p[2]))
			return NULL;
		p++;
	}
	return NULL;
}

int pf_list_parse_html(const char *buf, size_t len, pf_list_fn fn,
		       void *arg)
{
	const char *p = buf;
	const char *end = buf + len;
	struct nameset ns;
	struct pf_strbuf name;
	char *nameb;
	int count = 0;
	int ret;

	if (!buf && len)
		return -EINVAL;
	if (starts_with(p, end, "\xef\xbb\xbf"))
		p += 3;
	while (p < end && is_space((unsigned char)*p))
		p++;
	if (p >= end || *p != '<')
		return -EPROTO;
	nameb = malloc(PF_LIST_NAME_MAX + 1);
	if (!nameb)
		return -ENOMEM;
	memset(&ns, 0, sizeof(ns));
	while (p < end) {
		struct pf_listent e;
		const char *tend;
		const char *v;
		const char *close;
		size_t vn;
		int is_dir;

		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			break;
		if (starts_with(p, end, "<!--")) {
			const char *q = find(p + 4, end, "-->");

			p = q ? q + 3 : end;
			continue;
		}
		if (starts_ci(p, end, "<script")) {
			p = skip_to_ci(p + 1, end, "</script");
			continue;
		}
		if (starts_ci(p, end, "<style")) {
			p = skip_to_ci(p + 1, end, "</style");
			continue;
		}
		if (!starts_ci(p, end, "<a") || p + 2 >= end ||
		    !is_space((unsigned char)p[2])) {
			p++;
			continue;
		}
		tend = tag_end(p, end);
		if (!tend)
			break;
		pf_strbuf_init_fixed(&name, nameb, PF_LIST_NAME_MAX + 1);
		if (!a_href(p, tend, &v, &vn) ||
		    !href_name(v, vn, &name, &is_dir)) {
			p = tend + 1;
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.name = name.buf;
		e.is_dir = is_dir;
		e.size = -1;
		e.mtime = -1;
		close = a_close(tend + 1, end);
		if (close) {
			p = close;
			nginx_columns(p, end, &e.size, &e.mtime);
			if (is_dir)
				e.size = -1;
		} else {
			p = tend + 1;
		}
		ret = ns_add(&ns, name.buf, name.len);
		if (ret < 0)
			goto out;
		if (ret)
			continue;
		count = count_up(count);
		ret = fn(arg, &e);
		if (ret)
			goto out;
	}
	ret = count;
out:
	free(ns.slot);
	free(ns.arena);
	free(nameb);
	return ret;
}

/* ------------------------------------------------------------------ */
/* nginx JSON autoindex                                                */

struct json {
	const char *p;
	const char *end;
};

static void js_ws(struct json *j)
{
	while (j->p < j->end && is_space((unsigned char)*j->p))
		j->p++;
}

static bool js_eat(struct json *j, char c)
{
	js_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

/*
 * A string at j->p ('"'), decoded into @s when not NULL; a lone
 * surrogate makes the string failed (unusable as a name), not the JSON
 * invalid.
 */
static int js_string(struct json *j, struct pf_strbuf *s)
{
	int ret = pf_json_string(j->p, j->end, s, &j->p);

	if (ret < 0)
		return -EPROTO;
	if (ret == PF_JSON_LONE_SURROGATE && s)
		s->failed = true;
	return 0;
}

/* A number; *v receives it when it is a non-negative integer in range. */
static int js_number(struct json *j, int64_t *v, bool *is_int)
{
	const char *d = j->p;
	bool integer = true;

	if (j->p < j->end && *j->p == '-') {
		j->p++;
		integer = false;
	}
	if (j->p >= j->end || !is_digit((unsigned char)*j->p))
		return -EPROTO;
	if (*j->p == '0') {
		j->p++;
	} else {
		while (j->p < j->end && is_digit((unsigned char)*j->p))
			j->p++;
	}
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		integer = false;
		if (j->p >= j->end || !is_digit((unsigned char)*j->p))
			return -EPROTO;
		while (j->p < j->end && is_digit((unsigned char)*j->p))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		integer = false;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || !is_digit((unsigned char)*j->p))
			return -EPROTO;
		while (j->p < j->end && is_digit((unsigned char)*j->p))
			j->p++;
	}
	*is_int = integer && parse_i64(d, (size_t)(j->p - d), v) == 0;
	return 0;
}

static int js_value(struct json *j, int depth);

static int js_container(struct json *j, int depth)
{
	char close = *j->p == '[' ? ']' : '}';
	bool obj = close == '}';

	if (depth >= JSON_DEPTH)
		return -EPROTO;
	j->p++;
	if (js_eat(j, close))
		return 0;
	for (;;) {
		js_ws(j);
		if (obj) {
			if (j->p >= j->end || *j->p != '"' ||
			    js_string(j, NULL) || !js_eat(j, ':'))
				return -EPROTO;
		}
		if (js_value(j, depth + 1))
			return -EPROTO;
		if (js_eat(j, close))
			return 0;
		if (!js_eat(j, ','))
			return -EPROTO;
	}
}

/* Skips one value. */
static int js_value(struct json *j, int depth)
{
	int64_t v;
	bool is_int;

	js_ws(j);
	if (j->p >= j->end)
		return -EPROTO;
	switch (*j->p) {
	case '"':
		return js_string(j, NULL);
	case '[':
	case '{':
		return js_container(j, depth);
	case 't':
		if (!starts_with(j->p, j->end, "true"))
			return -EPROTO;
		j->p += 4;
		return 0;
	case 'f':
		if (!starts_with(j->p, j->end, "false"))
			return -EPROTO;
		j->p += 5;
		return 0;
	case 'n':
		if (!starts_with(j->p, j->end, "null"))
			return -EPROTO;
		j->p += 4;
		return 0;
	default:
		return js_number(j, &v, &is_int);
	}
}

/* One object of the array: reported when @emit and it is an entry. */
static int js_entry(struct json *j, bool emit, pf_list_fn fn, void *arg,
		    int *count)
{
	char nameb[PF_LIST_NAME_MAX + 1];
	char keyb[16];
	char typeb[16];
	char mtimeb[64];
	struct pf_strbuf name, key, type, mtime;
	struct pf_listent e;
	bool have_name = false;
	int64_t size = -1;
	int64_t v;
	bool is_int;

	pf_strbuf_init_fixed(&name, nameb, sizeof(nameb));
	pf_strbuf_init_fixed(&type, typeb, sizeof(typeb));
	pf_strbuf_init_fixed(&mtime, mtimeb, sizeof(mtimeb));
	if (!js_eat(j, '{'))
		return -EPROTO;
	if (js_eat(j, '}'))
		goto done;
	for (;;) {
		struct pf_strbuf *target = NULL;

		js_ws(j);
		pf_strbuf_init_fixed(&key, keyb, sizeof(keyb));
		if (j->p >= j->end || *j->p != '"' || js_string(j, &key) ||
		    !js_eat(j, ':'))
			return -EPROTO;
		js_ws(j);
		if (j->p >= j->end)
			return -EPROTO;
		if (!key.failed && eq_lit(key.buf, key.len, "name")) {
			target = &name;
			have_name = *j->p == '"';
		} else if (!key.failed && eq_lit(key.buf, key.len, "type")) {
			target = &type;
		} else if (!key.failed && eq_lit(key.buf, key.len, "mtime")) {
			target = &mtime;
		} else if (!key.failed && eq_lit(key.buf, key.len, "size") &&
			   *j->p != '"' && *j->p != '[' && *j->p != '{' &&
			   *j->p != 't' && *j->p != 'f' && *j->p != 'n') {
			if (js_number(j, &v, &is_int))
				return -EPROTO;
			size = is_int ? v : -1;
			goto next;
		}
		if (target && *j->p == '"') {
			pf_strbuf_reset(target);
			if (js_string(j, target))
				return -EPROTO;
		} else {
			if (target)
				pf_strbuf_reset(target);
			if (js_value(j, 1))
				return -EPROTO;
		}
next:
		if (js_eat(j, '}'))
			break;
		if (!js_eat(j, ','))
			return -EPROTO;
	}
done:
	if (!emit || !have_name || name.failed || type.failed ||
	    !name_ok(name.buf, name.len))
		return 0;
	memset(&e, 0, sizeof(e));
	e.name = name.buf;
	e.size = -1;
	e.mtime = -1;
	if (eq_lit(type.buf, type.len, "directory"))
		e.is_dir = 1;
	else if (eq_lit(type.buf, type.len, "file"))
		e.size = size;
	else
		return 0;
	if (!mtime.failed && http_date_n(mtime.buf, mtime.len, &v) == 0)
		e.mtime = v;
	*count = count_up(*count);
	return fn(arg, &e);
}

static int js_pass(const char *buf, size_t len, bool emit, pf_list_fn fn,
		   void *arg)
{
	struct json j = { buf, buf + len };
	int count = 0;
	int ret;

	if (starts_with(j.p, j.end, "\xef\xbb\xbf"))
		j.p += 3;
	if (!js_eat(&j, '['))
		return -EPROTO;
	if (!js_eat(&j, ']')) {
		for (;;) {
			ret = js_entry(&j, emit, fn, arg, &count);
			if (ret)
				return ret;
			if (js_eat(&j, ']'))
				break;
			if (!js_eat(&j, ','))
				return -EPROTO;
		}
	}
	js_ws(&j);
	if (j.p != j.end)
		return -EPROTO;
	return count;
}

int pf_list_parse_json(const char *buf, size_t len, pf_list_fn fn,
		       void *arg)
{
	int ret;

	if (!buf && len)
		return -EINVAL;
	if (!buf)
		buf = "";
	ret = js_pass(buf, len, false, fn, arg);
	if (ret < 0)
		return ret;
	return js_pass(buf, len, true, fn, arg);
}

/* ------------------------------------------------------------------ */
/* Manifests                                                           */

static bool is_blank(int c)
{
	return c == ' ' || c == '\t';
}

/*
 * One line without its "\n": 0 and the entry, 1 for nothing to report
 * (blank, comment, a name the mount cannot show), -EINVAL.
 */
static int manifest_line(const char *p, const char *end, char *path,
			 int64_t *size)
{
	const char *s;
	const char *c;
	const char *comp;
	bool skip = false;
	size_t n;

	if (end > p && end[-1] == '\r')
		end--;
	if (p < end && *p == '#')
		return 1;
	while (end > p && is_blank((unsigned char)end[-1]))
		end--;
	if (p == end)
		return 1;
	s = end;
	while (s > p && !is_blank((unsigned char)s[-1]))
		s--;
	if (parse_i64(s, (size_t)(end - s), size))
		return -EINVAL;
	while (s > p && is_blank((unsigned char)s[-1]))
		s--;
	if (s == p || s == end)
		return -EINVAL;
	end = s;
	if (end - p >= 2 && p[0] == '.' && p[1] == '/')
		p += 2;
	else if (*p == '/')
		p++;
	/* each component: not empty, ".", ".."; long ones are skipped */
	comp = p;
	for (c = p;; c++) {
		if (c == end || *c == '/') {
			size_t k = (size_t)(c - comp);

			if (k == 0 || eq_lit(comp, k, ".") ||
			    eq_lit(comp, k, ".."))
				return -EINVAL;
			if (k > PF_LIST_NAME_MAX)
				skip = true;
			if (c == end)
				break;
			comp = c + 1;
		}
	}
	if (skip)
		return 1;
	n = (size_t)(end - p);
	if (n > PF_LIST_PATH_MAX || memchr(p, '\0', n))
		return 1;
	memcpy(path, p, n);
	path[n] = '\0';
	return 0;
}

static int manifest_pass(const char *buf, size_t len, pf_list_fn fn,
			 void *arg, unsigned *bad_line, char *path)
{
	const char *p = buf;
	const char *end = buf + len;
	unsigned line = 0;
	int count = 0;
	int ret;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct pf_listent e;
		int64_t size;

		line++;
		ret = manifest_line(p, eol, path, &size);
		p = nl ? nl + 1 : end;
		if (ret < 0) {
			if (bad_line)
				*bad_line = line;
			return ret;
		}
		if (ret > 0 || !fn)
			continue;
		memset(&e, 0, sizeof(e));
		e.name = path;
		e.size = size;
		e.mtime = -1;
		count = count_up(count);
		ret = fn(arg, &e);
		if (ret)
			return ret;
	}
	return count;
}

int pf_list_parse_manifest(const char *buf, size_t len, pf_list_fn fn,
			   void *arg, unsigned *bad_line)
{
	char *path;
	int ret;

	if (!buf && len)
		return -EINVAL;
	if (!buf)
		buf = "";
	path = malloc(PF_LIST_PATH_MAX + 1);
	if (!path)
		return -ENOMEM;
	ret = manifest_pass(buf, len, NULL, NULL, bad_line, path);
	if (ret >= 0)
		ret = manifest_pass(buf, len, fn, arg, bad_line, path);
	free(path);
	return ret;
}
