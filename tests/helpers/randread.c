/*
 * randread - random pread()s of FILE (through a mount) compared with the
 * same ranges of REF (the source file, read directly).
 *
 *   randread [-s SEED] [-n COUNT] [-m MAXLEN] [-a ALIGN] FILE REF
 *
 * COUNT reads (default 2000) at pseudo-random offsets (xorshift, SEED,
 * default 1) of 1..MAXLEN bytes (default 1 MiB); about one in eight reads
 * is placed so that it crosses or starts past the end of the file.  With
 * -a ALIGN offsets are rounded down and lengths up to multiples of ALIGN.
 * Each read is repeated until it is complete or hits EOF, and both the
 * byte count and the bytes must equal REF's.
 *
 * Prints "reads=N bytes=N mismatches=N" (bytes: read through FILE) and a
 * line per mismatch (at most 10).  Exit: 0 all equal, 1 mismatch or read
 * error, 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

static void usage(void)
{
	fprintf(stderr, "usage: randread [-s SEED] [-n COUNT] [-m MAXLEN] "
			"[-a ALIGN] FILE REF\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, count = 2000, maxlen = 1 << 20, align = 0;
	uint64_t bytes = 0, mism = 0, size;
	unsigned char *a, *b;
	struct stat st, sr;
	int fd, rfd, c;

	while ((c = getopt(argc, argv, "s:n:m:a:")) != -1) {
		switch (c) {
		case 's': seed = num(optarg); break;
		case 'n': count = num(optarg); break;
		case 'm': maxlen = num(optarg); break;
		case 'a': align = num(optarg); break;
		default: usage();
		}
	}
	if (argc - optind != 2 || maxlen == 0)
		usage();
	if (align && maxlen % align)
		maxlen += align - maxlen % align;
	rng_state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	fd = open(argv[optind], O_RDONLY);
	rfd = open(argv[optind + 1], O_RDONLY);
	if (fd < 0 || rfd < 0) {
		perror("randread: open");
		return 2;
	}
	if (fstat(fd, &st) < 0 || fstat(rfd, &sr) < 0) {
		perror("randread: fstat");
		return 2;
	}
	if (st.st_size != sr.st_size) {
		printf("size mismatch: %s has %jd bytes, %s %jd\n",
		       argv[optind], (intmax_t)st.st_size, argv[optind + 1],
		       (intmax_t)sr.st_size);
		return 1;
	}
	size = (uint64_t)sr.st_size;
	a = malloc(maxlen);
	b = malloc(maxlen);
	if (!a || !b) {
		free(a);
		free(b);
		return 2;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t len = 1 + rnd() % maxlen;
		uint64_t off;
		int64_t na, nb;

		if (size == 0 || rnd() % 8 == 0) {
			/* around the end of the file, sometimes past it */
			uint64_t back = rnd() % (maxlen + 1);

			off = size > back ? size - back : 0;
			off += rnd() % (maxlen / 4 + 1);
		} else {
			off = rnd() % size;
		}
		if (align) {
			off -= off % align;
			len += (align - len % align) % align;
			if (len > maxlen)
				len = maxlen;
		}
		na = pread_all(fd, a, len, off);
		nb = pread_all(rfd, b, len, off);
		if (na < 0) {
			printf("read error at %" PRIu64 "+%" PRIu64 ": %s\n",
			       off, len, strerror((int)-na));
			mism++;
			continue;
		}
		if (nb < 0) {
			fprintf(stderr, "randread: reference read: %s\n",
				strerror((int)-nb));
			free(a);
			free(b);
			return 2;
		}
		bytes += (uint64_t)na;
		if (na != nb || memcmp(a, b, (size_t)na) != 0) {
			int64_t k = 0;

			while (k < na && k < nb && a[k] == b[k])
				k++;
			if (mism < 10)
				printf("mismatch: read %" PRIu64 "+%" PRIu64
				       ": got %" PRId64 " bytes, expected "
				       "%" PRId64 ", first difference at "
				       "offset %" PRIu64 "\n",
				       off, len, na, nb, off + (uint64_t)k);
			mism++;
		}
	}
	printf("reads=%" PRIu64 " bytes=%" PRIu64 " mismatches=%" PRIu64 "\n",
	       count, bytes, mism);
	free(a);
	free(b);
	return mism ? 1 : 0;
}
