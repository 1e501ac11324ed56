/*
 * helpers.h - what the mount tests' C helpers share: a seeded xorshift
 * generator and a pread that retries EINTR and short reads.  Header-only:
 * every helper stays one .c file.
 */
#ifndef PF_TEST_HELPERS_H
#define PF_TEST_HELPERS_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* Seeded by the helper (never 0). */
static uint64_t rng_state;

static inline uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

/* pread until @len bytes or EOF; the bytes read, or -errno. */
static inline int64_t pread_all(int fd, unsigned char *buf, uint64_t len,
				uint64_t off)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

#endif
