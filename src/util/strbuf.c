/*
 * strbuf.c - strings being built (see pf_strbuf.h).
 *
 * DESIGN
 * No locks: a strbuf belongs to its caller's thread.  A growable buffer
 * doubles (at least) when it must grow, so n appends cost O(n) copies; an
 * empty one points at a shared read-only "" so that sb->buf is always a
 * string without an allocation.  Failure is sticky (sb->failed), so callers
 * check once at the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json.h"
#include "pf_strbuf.h"

#define DEFAULT_HINT 256

/* the contents of every empty growable strbuf; never written */
static char empty[1];

static int error_of(const struct pf_strbuf *sb)
{
	return sb->fixed ? -ENOSPC : -ENOMEM;
}

void pf_strbuf_init(struct pf_strbuf *sb, size_t hint)
{
	sb->buf = empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->fixed = false;
	sb->failed = false;
	if (hint) {
		/* on failure stay empty: the first append tries again */
		char *b = malloc(hint + 1);

		if (b) {
			b[0] = '\0';
			sb->buf = b;
			sb->alloc = hint + 1;
		}
	}
}

void pf_strbuf_init_fixed(struct pf_strbuf *sb, char *buf, size_t cap)
{
	sb->buf = buf;
	sb->len = 0;
	sb->alloc = cap;
	sb->fixed = true;
	sb->failed = cap == 0;
	if (cap)
		buf[0] = '\0';
}

void pf_strbuf_reset(struct pf_strbuf *sb)
{
	sb->len = 0;
	sb->failed = sb->fixed && sb->alloc == 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

/*
 * Room for @extra more bytes and the NUL.  A fixed strbuf that lacks it
 * fails, leaving what room it has to the caller (truncation).
 */
static int grow(struct pf_strbuf *sb, size_t extra)
{
	size_t need;
	size_t cap;
	char *nb;

	if (extra > SIZE_MAX - sb->len - 1)
		goto fail;
	need = sb->len + extra + 1;
	if (need <= sb->alloc)
		return 0;
	if (sb->fixed)
		goto fail;
	cap = sb->alloc ? sb->alloc : DEFAULT_HINT;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	nb = realloc(sb->alloc ? sb->buf : NULL, cap);
	if (!nb)
		goto fail;
	if (!sb->alloc)
		nb[0] = '\0';
	sb->buf = nb;
	sb->alloc = cap;
	return 0;
fail:
	sb->failed = true;
	return error_of(sb);
}

int pf_strbuf_add(struct pf_strbuf *sb, const void *data, size_t len)
{
	int ret;

	if (sb->failed)
		return error_of(sb);
	if (len == 0)
		return 0;
	if (len < sb->alloc - sb->len) {
		/* fits: the common case, without grow() */
		memcpy(sb->buf + sb->len, data, len);
		sb->len += len;
		sb->buf[sb->len] = '\0';
		return 0;
	}
	ret = grow(sb, len);
	if (ret < 0) {
		if (sb->fixed) {
			/* cut off: keep what fits (alloc > len always) */
			size_t room = sb->alloc - sb->len - 1;

			memcpy(sb->buf + sb->len, data, room);
			sb->len += room;
			sb->buf[sb->len] = '\0';
		}
		return ret;
	}
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int pf_strbuf_addstr(struct pf_strbuf *sb, const char *s)
{
	return pf_strbuf_add(sb, s, strlen(s));
}

int pf_strbuf_addf(struct pf_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;
	int ret;

	if (sb->failed)
		return error_of(sb);
	va_start(ap, fmt);
	n = vsnprintf(sb->alloc ? sb->buf + sb->len : NULL,
		      sb->alloc ? sb->alloc - sb->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		/* an encoding error: nothing sensible was written */
		if (sb->alloc)
			sb->buf[sb->len] = '\0';
		sb->failed = true;
		return error_of(sb);
	}
	if (sb->alloc && (size_t)n < sb->alloc - sb->len) {
		sb->len += (size_t)n;
		return 0;
	}
	if (sb->fixed) {
		/* vsnprintf() kept what fits */
		sb->len = sb->alloc - 1;
		sb->failed = true;
		return -ENOSPC;
	}
	ret = grow(sb, (size_t)n);
	if (ret < 0) {
		if (sb->alloc)
			sb->buf[sb->len] = '\0';
		return ret;
	}
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

int pf_strbuf_add_utf8(struct pf_strbuf *sb, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return pf_strbuf_add(sb, u, n);
}

static void json_put(void *arg, const char *s, size_t n)
{
	pf_strbuf_add(arg, s, n);
}

int pf_strbuf_add_json(struct pf_strbuf *sb, const char *s)
{
	pf_json_quote(s, json_put, sb);
	return sb->failed ? error_of(sb) : 0;
}

void pf_strbuf_release(struct pf_strbuf *sb)
{
	if (sb->fixed) {
		pf_strbuf_reset(sb);
		return;
	}
	if (sb->alloc)
		free(sb->buf);
	pf_strbuf_init(sb, 0);
}

char *pf_strbuf_detach(struct pf_strbuf *sb, size_t *len)
{
	char *s;

	if (sb->fixed || sb->failed) {
		pf_strbuf_release(sb);
		return NULL;
	}
	if (sb->alloc) {
		s = sb->buf;
	} else {
		s = malloc(1);
		if (s)
			s[0] = '\0';
	}
	if (len && s)
		*len = sb->len;
	sb->buf = empty;
	sb->len = 0;
	sb->alloc = 0;
	return s;
}
