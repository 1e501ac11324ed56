/*
 * fuzz.h - what every listing fuzz target checks of each reported entry:
 * the name is NUL-terminated within its limit (every byte is read, so ASan
 * sees a name that runs off its buffer) and obeys the naming rules of
 * pf_listing.h; the other fields are in range.  A broken invariant aborts,
 * which libFuzzer reports as a crash.
 */
#ifndef PF_FUZZ_H
#define PF_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_listing.h"

struct fuzz_state {
	int count;
	int manifest;	/* paths: '/' between components allowed */
	int stop_at;	/* the callback returns 5 at this entry; 0 never */
	volatile unsigned sink;
};

#define FUZZ_ASSERT(cond)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n",  \
				#cond, __FILE__, __LINE__);                \
			abort();                                           \
		}                                                          \
	} while (0)

/* Reads every byte of s up to its NUL, which must come within max. */
static inline size_t fuzz_touch(struct fuzz_state *st, const char *s,
				size_t max)
{
	size_t n = 0;

	while (s[n]) {
		st->sink += (unsigned char)s[n];
		n++;
		FUZZ_ASSERT(n <= max);
	}
	return n;
}

static inline int fuzz_entry(void *arg, const struct pf_listent *e)
{
	struct fuzz_state *st = arg;
	size_t n;

	FUZZ_ASSERT(e && e->name);
	n = fuzz_touch(st, e->name, st->manifest ? PF_LIST_PATH_MAX :
						   PF_LIST_NAME_MAX);
	FUZZ_ASSERT(n > 0);
	FUZZ_ASSERT(e->is_dir == 0 || e->is_dir == 1);
	FUZZ_ASSERT(e->size >= -1);
	if (e->is_dir)
		FUZZ_ASSERT(e->size == -1);
	if (e->etag)
		fuzz_touch(st, e->etag, 1 << 20);
	if (st->manifest) {
		const char *c = e->name;

		FUZZ_ASSERT(!e->is_dir && e->size >= 0 && !e->etag);
		FUZZ_ASSERT(e->mtime == -1);
		/* components: none empty, ".", "..", longer than a name */
		for (;;) {
			const char *s = strchr(c, '/');
			size_t k = s ? (size_t)(s - c) : strlen(c);

			FUZZ_ASSERT(k > 0 && k <= PF_LIST_NAME_MAX);
			FUZZ_ASSERT(!(k == 1 && c[0] == '.'));
			FUZZ_ASSERT(!(k == 2 && c[0] == '.' && c[1] == '.'));
			if (!s)
				break;
			c = s + 1;
		}
	} else {
		FUZZ_ASSERT(!strchr(e->name, '/'));
		FUZZ_ASSERT(strcmp(e->name, ".") && strcmp(e->name, ".."));
	}
	st->count++;
	return st->count == st->stop_at ? 5 : 0;
}

/* An exact-size copy, so ASan catches a read of the byte after it. */
static inline char *fuzz_copy(const uint8_t *data, size_t size)
{
	char *b = malloc(size ? size : 1);

	if (!b)
		abort();
	if (size)
		memcpy(b, data, size);
	return b;
}

/* A NUL-terminated copy of at most 64 bytes, for the date parsers. */
static inline void fuzz_cstr(char out[65], const uint8_t *data, size_t size)
{
	size_t n = size < 64 ? size : 64;

	memcpy(out, data, n);
	out[n] = '\0';
}

#endif
