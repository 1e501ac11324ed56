/*
 * diskcache_sum.c - the sums of the disk cache that need no key: CRC32C
 * (Castagnoli; SSE 4.2 where the CPU has it), which guards each journal
 * record against a torn write, and the 128-bit key that names a version
 * of a file.  Pure functions, any thread.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "pf_diskcache.h"
#include "diskcache_int.h"

/* ---- CRC32C --------------------------------------------------------- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] =
				(crc_table[t - 1][i] >> 8) ^
				crc_table[0][crc_table[t - 1][i] & 0xff];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64 = c;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

uint32_t pf_dc_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(c, p, len);
#endif
	pthread_once(&crc_once, crc_init);
	while (len >= 8) {
		uint32_t lo;
		uint32_t hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= c;
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return ~c;
}

/* ---- keys ------------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return mix64(h ^ len);
}

void pf_dc_key_of(const char *source, const char *path,
		  const struct stat *st, struct pf_dc_key *key)
{
	/* ctime and the inode number too: no touch(1) sets them back, so a
	 * file rewritten with its size and mtime restored has a new key
	 * (object stores give ctime = mtime and inode 0) */
	int64_t v[6] = { (int64_t)st->st_size, (int64_t)st->st_mtim.tv_sec,
			 (int64_t)st->st_mtim.tv_nsec,
			 (int64_t)st->st_ctim.tv_sec,
			 (int64_t)st->st_ctim.tv_nsec, (int64_t)st->st_ino };
	uint64_t seeds[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };
	uint64_t out[2];

	for (int i = 0; i < 2; i++) {
		uint64_t h = seeds[i];

		/* each part's length is hashed in: no two splits collide */
		h = hash_bytes(h, source, strlen(source) + 1);
		h = hash_bytes(h, path, strlen(path) + 1);
		h = hash_bytes(h, v, sizeof(v));
		out[i] = h;
	}
	key->a = out[0];
	key->b = out[1];
}
