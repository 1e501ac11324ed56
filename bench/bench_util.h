/*
 * bench_util.h - the pieces the standalone bench tools share: the dataset
 * content (bench/mkdata writes it, bench/memfs serves it, so both must
 * produce it from one definition) and size arguments.  Header-only: every
 * tool stays one .c file.
 *
 * Content: the 8-byte little-endian word at byte offset 8*i of file k of
 * seed s is mix64(mix64((s << 32) | k) + i); a trailing partial word is
 * truncated.  mix64() is the splitmix64 finalizer.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The key of file @k of seed @seed. */
static inline uint64_t pattern_key(uint64_t seed, uint64_t k)
{
	return mix64((seed << 32) | k);
}

/* Fill @buf with @len bytes of the content of file @key from word @word. */
static inline void fill_pattern(void *buf, size_t len, uint64_t key,
				uint64_t word)
{
	unsigned char *b = buf;
	size_t i;
	size_t words = len / 8;

	for (i = 0; i < words; i++) {
		uint64_t w = htole64(mix64(key + word + i));

		memcpy(b + i * 8, &w, 8);
	}
	if (len % 8) {
		uint64_t w = htole64(mix64(key + word + words));

		memcpy(b + words * 8, &w, len % 8);
	}
}

/* "4096", "64K", "1M", "2G", "1T", "8MiB" -> bytes; -1 if bad. */
static inline int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

#endif
