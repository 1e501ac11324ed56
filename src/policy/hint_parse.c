/*
 * hint_parse.c - declared read order: the control file's parser (see
 * pf_hint.h for the channel's format and the contract).
 *
 * DESIGN
 * No threads, locks or clock here.  One parser (struct pf_hint_text) per
 * control-file handle, used by one thread at a time; it runs outside the
 * caller's plan lock because it calls the caller's resolver, which may take
 * the caller's own locks, and yields a batch that pf_hint_apply() (hint.c)
 * appends under that lock.  A line straddling two writes waits in part[];
 * a plan refused once stays refused (reason[]) until a write at offset 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_err.h"
#include "pf_hint.h"

#define MAX_LEN		(1ull << 62)	/* OFFSET + LENGTH at most */

void pf_hint_cfg_default(struct pf_hint_cfg *cfg)
{
	cfg->max_entries = PF_HINT_MAX_ENTRIES;
	cfg->max_text = PF_HINT_MAX_TEXT;
	cfg->max_total_entries = 4ull * PF_HINT_MAX_ENTRIES;
	cfg->piece = 1ull << 20;
	cfg->align = 4096;
	cfg->block = 64ull << 10;
	cfg->max_inflight = 64;
	cfg->budget = 256ull << 20;
	cfg->min_ahead = 4ull << 20;
	cfg->min_ahead_entries = 8;
	cfg->reorder = 4096;
	cfg->judge = 64;
	cfg->gap_ns = 5000000;
	cfg->rate_ns = 250000000;
}

/* ---- the parser ------------------------------------------------------- */

struct pf_hint_text {
	uint64_t max_entries;
	uint64_t max_text;
	uint64_t next_off;	/* where the next write must start */
	uint64_t line;		/* lines completed in this plan */
	uint64_t entries;	/* entries produced in this plan */
	bool started;		/* a write at offset 0 was seen */
	bool rejected;
	char reason[PF_HINT_WHY_MAX];
	size_t partlen;
	char part[PF_HINT_LINE_MAX + 1];
};

void pf_hint_batch_init(struct pf_hint_batch *b)
{
	memset(b, 0, sizeof(*b));
}

void pf_hint_batch_fini(struct pf_hint_batch *b)
{
	free(b->e);
	memset(b, 0, sizeof(*b));
}

struct pf_hint_text *pf_hint_text_new(const struct pf_hint_cfg *cfg)
{
	struct pf_hint_text *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_entries = cfg->max_entries;
	if (t->max_entries > PF_HINT_MAX_ENTRIES)
		t->max_entries = PF_HINT_MAX_ENTRIES;
	t->max_text = cfg->max_text;
	if (t->max_text > PF_HINT_MAX_TEXT)
		t->max_text = PF_HINT_MAX_TEXT;
	return t;
}

void pf_hint_text_free(struct pf_hint_text *t)
{
	free(t);
}

static bool digits(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* The decimal number of digits [s, e); false if it overflows. */
static bool number(const char *s, const char *e, uint64_t *v)
{
	uint64_t n = 0;

	for (; s < e; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (n > (UINT64_MAX - d) / 10)
			return false;
		n = n * 10 + d;
	}
	*v = n;
	return true;
}

/* The start of the last space-separated field of [s, e), or NULL. */
static const char *last_field(const char *s, const char *e)
{
	const char *p = e;

	while (p > s && p[-1] != ' ')
		p--;
	if (p == e || p == s)
		return NULL;
	return p;
}

static bool missing_err(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -EISDIR ||
	       err == -EACCES || err == -ELOOP || err == -ENAMETOOLONG;
}

static int reject(struct pf_hint_text *t, struct pf_hint_batch *b, int err)
{
	t->rejected = true;
	memcpy(t->reason, b->why, sizeof(t->reason));
	b->n = 0;
	b->rc = err;
	return err;
}

static int push(struct pf_hint_batch *b, uint64_t file, uint64_t off,
		uint64_t len)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 256;
		struct pf_hint_entry *e = realloc(b->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		b->e = e;
		b->cap = cap;
	}
	b->e[b->n].file = file;
	b->e[b->n].off = off;
	b->e[b->n].len = len;
	b->n++;
	return 0;
}

/* One complete line, without its '\n', NUL-terminated in t->part. */
static int line(struct pf_hint_text *t, pf_hint_resolve_fn resolve,
		void *ctx, struct pf_hint_batch *b)
{
	char *s = t->part;
	char *e = t->part + t->partlen;
	const char *f2, *f1;
	uint64_t off = 0, len = 0, file, size;
	bool range = false;
	int ret;

	t->line++;
	if (s == e || *s == '#')
		return 0;
	/* PATH OFFSET LENGTH when the last two fields are numbers */
	f2 = last_field(s, e);
	if (f2) {
		f1 = last_field(s, f2 - 1);
		if (f1 && digits(f2, e) && digits(f1, f2 - 1)) {
			range = true;
			if (!number(f2, e, &len) || !number(f1, f2 - 1, &off)) {
				pf_err_set(b->why, PF_HINT_WHY_MAX,
					"line %llu: number out of range",
					(unsigned long long)t->line);
				return -EINVAL;
			}
			e = (char *)f1 - 1;
		}
	}
	if (range && len == 0) {
		pf_err_set(b->why, PF_HINT_WHY_MAX, "line %llu: zero length",
		    (unsigned long long)t->line);
		return -EINVAL;
	}
	if (range && (off >= MAX_LEN || len > MAX_LEN - off)) {
		pf_err_set(b->why, PF_HINT_WHY_MAX,
			"line %llu: offset + length past 2^62",
			(unsigned long long)t->line);
		return -EINVAL;
	}
	while (s < e && *s == '/')
		s++;
	if (s == e) {
		pf_err_set(b->why, PF_HINT_WHY_MAX, "line %llu: no path",
			(unsigned long long)t->line);
		return -EINVAL;
	}
	if (t->entries >= t->max_entries) {
		pf_err_set(b->why, PF_HINT_WHY_MAX,
			"line %llu: more than %llu entries",
			(unsigned long long)t->line,
			(unsigned long long)t->max_entries);
		return -ENOSPC;
	}
	*e = '\0';
	b->declared++;
	ret = resolve(ctx, s, &file, &size);
	if (ret < 0 && missing_err(ret)) {
		b->missing++;
		return 0;
	}
	if (ret < 0) {
		pf_err_set(b->why, PF_HINT_WHY_MAX, "line %llu: %s: %s",
			(unsigned long long)t->line, s, strerror(-ret));
		return ret;
	}
	if (!range)
		len = size;
	if (off >= size || len == 0) {
		b->past_eof++;
		return 0;
	}
	if (len > size - off)
		len = size - off;
	ret = push(b, file, off, len);
	if (ret < 0) {
		pf_err_set(b->why, PF_HINT_WHY_MAX, "line %llu: out of memory",
		    (unsigned long long)t->line);
		return ret;
	}
	t->entries++;
	return 0;
}

int pf_hint_parse(struct pf_hint_text *t, const char *buf, size_t len,
		  uint64_t off, pf_hint_resolve_fn resolve, void *ctx,
		  struct pf_hint_batch *b)
{
	size_t i;
	int ret;

	b->n = 0;
	b->restart = false;
	b->declared = b->missing = b->past_eof = 0;
	b->rc = 0;
	b->why[0] = '\0';
	if (off == 0) {
		t->started = true;
		t->rejected = false;
		t->next_off = 0;
		t->line = 0;
		t->entries = 0;
		t->partlen = 0;
		b->restart = true;
	} else if (t->rejected) {
		pf_err_set(b->why, PF_HINT_WHY_MAX,
			"plan refused (%s); write at offset 0 to start "
			"a new one",
			t->reason);
		b->rc = -EINVAL;
		return -EINVAL;
	} else if (!t->started || off != t->next_off) {
		pf_err_set(b->why, PF_HINT_WHY_MAX,
			"write at offset %llu, the plan's text ends at "
			"%llu",
			(unsigned long long)off,
			(unsigned long long)t->next_off);
		return reject(t, b, -EINVAL);
	}
	if (len > INT32_MAX) {
		pf_err_set(
			b->why, PF_HINT_WHY_MAX, "a write of more than 2 GiB");
		return reject(t, b, -EINVAL);
	}
	if (len > t->max_text || off > t->max_text - len) {
		pf_err_set(b->why, PF_HINT_WHY_MAX,
			"line %llu: more than %llu bytes of plan text",
			(unsigned long long)t->line + 1,
			(unsigned long long)t->max_text);
		return reject(t, b, -ENOSPC);
	}
	for (i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\n') {
			t->part[t->partlen] = '\0';
			ret = line(t, resolve, ctx, b);
			t->partlen = 0;
			if (ret < 0)
				return reject(t, b, ret);
			continue;
		}
		if (c == '\0') {
			pf_err_set(b->why, PF_HINT_WHY_MAX,
				"line %llu: NUL byte",
				(unsigned long long)t->line + 1);
			return reject(t, b, -EINVAL);
		}
		if (t->partlen == PF_HINT_LINE_MAX) {
			pf_err_set(b->why, PF_HINT_WHY_MAX,
				"line %llu: longer than %u bytes",
				(unsigned long long)t->line + 1,
				PF_HINT_LINE_MAX);
			return reject(t, b, -EINVAL);
		}
		t->part[t->partlen++] = c;
	}
	t->next_off = off + len;
	b->rc = (int)len;
	return b->rc;
}
