/*
 * listing_json.c - nginx's JSON autoindex (pf_list_parse_json()) and
 * manifests (pf_list_parse_manifest()).
 *
 * DESIGN
 * Scanners over a (pointer, end) pair that never read the byte at end.
 * Both run twice over the input, once to check it is complete and well
 * formed and once to report the entries, so a truncated body or a
 * manifest with one bad line reports nothing.  Threads: none of its own,
 * no locks, no global state that changes; any thread may call them (the
 * objstore backend's FUSE workers and listings refresher, fuzz_json,
 * fuzz_manifest, the tests).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json.h"
#include "pf_listing.h"
#include "pf_strbuf.h"
#include "listing_int.h"

/* JSON values nest at most this deep in anything we accept */
#define JSON_DEPTH 32

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
	if (!mtime.failed && pf_list_http_date_n(mtime.buf, mtime.len, &v) == 0)
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
