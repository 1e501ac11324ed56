/*
 * listing_s3.c - the S3 parsers: ListObjectsV2 XML listings
 * (pf_list_parse_s3()) and S3 error bodies (pf_list_parse_s3_error()),
 * over a small XML tokenizer and element walker of their own.
 *
 * DESIGN
 * A scanner over a (pointer, end) pair that never reads the byte at end;
 * text is decoded into fixed pf_strbufs on the stack.  A listing is
 * walked twice: once to check it is complete and well formed and to
 * learn EncodingType and the continuation token wherever they stand,
 * once to report the entries, so a truncated body reports nothing.
 * Threads: none of its own, no locks, no global state that changes; any
 * thread may call it (the objstore backend's FUSE workers and listings
 * refresher, fuzz_s3, the tests).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_listing.h"
#include "pf_strbuf.h"
#include "listing_int.h"

/* room for the longest NUL-terminated key / etag we decode */
#define KEY_MAX 4096
#define ETAG_MAX 256
/* XML elements nest at most this deep in anything we accept */
#define XML_DEPTH 32

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
		pf_list_xml_decode(s->cur, p, n);
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
		pf_list_pct_decode(&d, key, klen, true);
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
		if (!s->mtime.failed && pf_list_iso8601_n(t, n, &v) == 0)
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
		pf_list_xml_decode(e->cur, p, n);
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
