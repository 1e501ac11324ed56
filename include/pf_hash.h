/*
 * pf_hash.h - FNV-1a, the one string hash of the daemon's tables (inodes by
 * path, directories, listings, interned plan names, engine files by path).
 */
#ifndef PF_HASH_H
#define PF_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a of @n bytes of @s. */
static inline uint64_t pf_hash_mem(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* FNV-1a of string @s, its high bits folded down for power-of-two
 * bucket masks. */
static inline size_t pf_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return (size_t)(h ^ (h >> 29));
}

#endif
