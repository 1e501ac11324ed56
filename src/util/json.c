/*
 * json.c - a small recursive-descent JSON reader (RFC 8259) building a
 * tree of struct pf_json; see pf_json.h.
 *
 * Numbers become doubles (exact up to 2^53, which covers the byte counters
 * of the stats file); strings are decoded, \u escapes and surrogate pairs
 * included.  Depth is bounded so that hostile input cannot exhaust the
 * stack.  pf_json_quote() is the writers' side: the string quoting of the
 * stats file and the trace.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json.h"
#include "pf_strbuf.h"

struct parser {
	const char *p;
	const char *end;
	int depth;
};

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
				   *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static bool eat(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

/* Four hex digits at @s (before @end). */
static int hex4(const char *s, const char *end, unsigned *out)
{
	unsigned v = 0;

	if (end - s < 4)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
	}
	*out = v;
	return 0;
}

int pf_json_string(const char *p, const char *end, struct pf_strbuf *sb,
		   const char **next)
{
	int ret = 0;

	p++;
	for (;;) {
		const char *q = p;
		unsigned cp;
		unsigned lo;

		/* runs of plain bytes are appended whole */
		while (q < end && *q != '"' && *q != '\\' &&
		       (unsigned char)*q >= 0x20)
			q++;
		if (sb && q > p)
			pf_strbuf_add(sb, p, (size_t)(q - p));
		if (q >= end || (unsigned char)*q < 0x20)
			return -EINVAL;
		if (*q == '"') {
			*next = q + 1;
			return ret;
		}
		if (end - q < 2)
			return -EINVAL;
		p = q + 2;
		switch (q[1]) {
		case '"':
		case '\\':
		case '/':
			cp = (unsigned char)q[1];
			break;
		case 'b':
			cp = '\b';
			break;
		case 'f':
			cp = '\f';
			break;
		case 'n':
			cp = '\n';
			break;
		case 'r':
			cp = '\r';
			break;
		case 't':
			cp = '\t';
			break;
		case 'u':
			if (hex4(p, end, &cp) < 0)
				return -EINVAL;
			p += 4;
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				ret = PF_JSON_LONE_SURROGATE;
				continue;
			}
			if (cp < 0xd800 || cp > 0xdbff)
				break;
			if (end - p < 2 || p[0] != '\\' || p[1] != 'u') {
				ret = PF_JSON_LONE_SURROGATE;
				continue;
			}
			if (hex4(p + 2, end, &lo) < 0)
				return -EINVAL;
			if (lo < 0xdc00 || lo > 0xdfff) {
				/* the next escape is read on its own */
				ret = PF_JSON_LONE_SURROGATE;
				continue;
			}
			p += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			break;
		default:
			return -EINVAL;
		}
		if (sb)
			pf_strbuf_add_utf8(sb, cp);
	}
}

/*
 * A string at ps->p (the opening quote), as a malloc'd C string: one with
 * a lone surrogate or a NUL (\u0000, which would cut it) is refused.
 */
static int parse_string(struct parser *ps, char **out)
{
	struct pf_strbuf sb;
	const char *next;
	int ret;

	pf_strbuf_init(&sb, 0);
	ret = pf_json_string(ps->p, ps->end, &sb, &next);
	if (ret != 0 || strlen(sb.buf) != sb.len) {
		pf_strbuf_release(&sb);
		return -EINVAL;
	}
	*out = pf_strbuf_detach(&sb, NULL);
	if (!*out)
		return -ENOMEM;
	ps->p = next;
	return 0;
}

static int parse_number(struct parser *ps, double *out)
{
	const char *s = ps->p;
	char tmp[64];
	char *end;
	size_t n;

	if (s < ps->end && *s == '-')
		s++;
	if (s >= ps->end || *s < '0' || *s > '9')
		return -EINVAL;
	if (*s == '0' && s + 1 < ps->end && s[1] >= '0' && s[1] <= '9')
		return -EINVAL;
	while (s < ps->end && ((*s >= '0' && *s <= '9') || *s == '.' ||
			       *s == 'e' || *s == 'E' || *s == '+' ||
			       *s == '-'))
		s++;
	n = (size_t)(s - ps->p);
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, ps->p, n);
	tmp[n] = '\0';
	*out = strtod(tmp, &end);
	if (*end)
		return -EINVAL;
	ps->p = s;
	return 0;
}

static int parse_value(struct parser *ps, struct pf_json *j);

/* Elements of an array or members of an object, up to @close. */
static int parse_items(struct parser *ps, struct pf_json *j, char close)
{
	struct pf_json **tail = &j->child;
	int ret;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		struct pf_json *c = calloc(1, sizeof(*c));

		if (!c)
			return -ENOMEM;
		*tail = c;
		tail = &c->next;
		skip_ws(ps);
		if (close == '}') {
			if (ps->p >= ps->end || *ps->p != '"')
				return -EINVAL;
			ret = parse_string(ps, &c->key);
			if (ret < 0)
				return ret;
			skip_ws(ps);
			if (!eat(ps, ":"))
				return -EINVAL;
			skip_ws(ps);
		}
		ret = parse_value(ps, c);
		if (ret < 0)
			return ret;
		skip_ws(ps);
		if (ps->p >= ps->end)
			return -EINVAL;
		if (*ps->p == close) {
			ps->p++;
			return 0;
		}
		if (*ps->p != ',')
			return -EINVAL;
		ps->p++;
	}
}

static int parse_value(struct parser *ps, struct pf_json *j)
{
	int ret;

	if (ps->p >= ps->end)
		return -EINVAL;
	switch (*ps->p) {
	case '{':
	case '[':
		if (++ps->depth > PF_JSON_MAX_DEPTH)
			return -EINVAL;
		j->type = *ps->p == '{' ? PF_JSON_OBJ : PF_JSON_ARR;
		ret = parse_items(ps, j, *ps->p == '{' ? '}' : ']');
		ps->depth--;
		return ret;
	case '"':
		j->type = PF_JSON_STR;
		return parse_string(ps, &j->str);
	case 't':
	case 'f':
		j->type = PF_JSON_BOOL;
		j->num = *ps->p == 't';
		return eat(ps, j->num ? "true" : "false") ? 0 : -EINVAL;
	case 'n':
		j->type = PF_JSON_NULL;
		return eat(ps, "null") ? 0 : -EINVAL;
	default:
		j->type = PF_JSON_NUM;
		return parse_number(ps, &j->num);
	}
}

int pf_json_parse(const char *text, size_t len, struct pf_json **out)
{
	struct parser ps = { .p = text, .end = text + len };
	struct pf_json *j = calloc(1, sizeof(*j));
	int ret;

	*out = NULL;
	if (!j)
		return -ENOMEM;
	skip_ws(&ps);
	ret = parse_value(&ps, j);
	if (ret == 0) {
		skip_ws(&ps);
		if (ps.p != ps.end)
			ret = -EINVAL;
	}
	if (ret < 0) {
		pf_json_free(j);
		return ret;
	}
	*out = j;
	return 0;
}

void pf_json_free(struct pf_json *j)
{
	/* siblings iteratively, children recursively (depth is bounded) */
	while (j) {
		struct pf_json *next = j->next;

		pf_json_free(j->child);
		free(j->key);
		free(j->str);
		free(j);
		j = next;
	}
}

const struct pf_json *pf_json_get(const struct pf_json *obj, const char *key)
{
	if (!obj || obj->type != PF_JSON_OBJ)
		return NULL;
	for (const struct pf_json *c = obj->child; c; c = c->next)
		if (strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

double pf_json_num(const struct pf_json *obj, const char *key, double dflt)
{
	const struct pf_json *v = pf_json_get(obj, key);

	if (!v || (v->type != PF_JSON_NUM && v->type != PF_JSON_BOOL))
		return dflt;
	return v->num;
}

const char *pf_json_str(const struct pf_json *obj, const char *key,
			const char *dflt)
{
	const struct pf_json *v = pf_json_get(obj, key);

	return v && v->type == PF_JSON_STR ? v->str : dflt;
}

/* ---- writing --------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at @s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong 3- and 4-byte forms, surrogates, past U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

void pf_json_quote(const char *str, pf_json_put_fn put, void *arg)
{
	const unsigned char *s = (const unsigned char *)str;
	char esc[8];

	put(arg, "\"", 1);
	while (*s) {
		int n = utf8_len(s);

		if (*s == '"' || *s == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*s;
			put(arg, esc, 2);
		} else if (*s < 0x20 || *s == 0x7f || n == 0) {
			snprintf(esc, sizeof(esc), "\\u%04x", *s);
			put(arg, esc, 6);
		} else {
			put(arg, (const char *)s, (size_t)n);
		}
		s += n ? n : 1;
	}
	put(arg, "\"", 1);
}
