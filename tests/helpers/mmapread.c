/*
 * mmapread - mmap FILE (through a mount) and compare it with REF (the
 * source file, read with pread) using memcmp.
 *
 *   mmapread [-s SEED] [-n PAGES] FILE REF
 *
 * First a sequential pass over the whole mapping in 1 MiB pieces, then a
 * second mapping touched at PAGES (default 2000) pseudo-random pages, each
 * compared on its own (a page, or a run of up to 16 pages), the last
 * partial page included.  Prints "pages=N mismatches=N".  Exit: 0 all
 * equal, 1 mismatch, 2 usage or setup error.  A SIGBUS while touching the
 * mapping (an I/O error of the mount) kills the process: that is a failure
 * too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#define PIECE (1u << 20)

/* Compare map[off, off+len) with REF; returns 0 if equal. */
static int cmp_range(const unsigned char *map, int rfd, unsigned char *buf,
		     uint64_t off, uint64_t len, const char *what)
{
	int64_t n = pread_all(rfd, buf, len, off);

	if (n != (int64_t)len) {
		fprintf(stderr, "mmapread: reference read failed\n");
		exit(2);
	}
	if (memcmp(map + off, buf, len) == 0)
		return 0;
	for (uint64_t k = 0; k < len; k++) {
		if (map[off + k] != buf[k]) {
			printf("mismatch (%s): %" PRIu64 "+%" PRIu64
			       ": first difference at offset %" PRIu64 "\n",
			       what, off, len, off + k);
			break;
		}
	}
	return 1;
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "mmapread: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, count = 2000, mism = 0, pages = 0, size, npages;
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE);
	const unsigned char *map;
	unsigned char *buf;
	struct stat st, sr;
	int fd, rfd, c;

	while ((c = getopt(argc, argv, "s:n:")) != -1) {
		switch (c) {
		case 's': seed = num(optarg); break;
		case 'n': count = num(optarg); break;
		default:
			fprintf(stderr, "usage: mmapread [-s SEED] "
					"[-n PAGES] FILE REF\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: mmapread [-s SEED] [-n PAGES] FILE "
				"REF\n");
		return 2;
	}
	rng_state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	fd = open(argv[optind], O_RDONLY);
	rfd = open(argv[optind + 1], O_RDONLY);
	if (fd < 0 || rfd < 0 || fstat(fd, &st) < 0 || fstat(rfd, &sr) < 0) {
		perror("mmapread");
		return 2;
	}
	if (st.st_size != sr.st_size || st.st_size == 0) {
		printf("size mismatch or empty: %jd vs %jd\n",
		       (intmax_t)st.st_size, (intmax_t)sr.st_size);
		return 1;
	}
	size = (uint64_t)st.st_size;
	npages = (size + psz - 1) / psz;
	buf = malloc(16 * psz > PIECE ? 16 * psz : PIECE);
	if (!buf)
		return 2;

	/* sequential */
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmapread: mmap");
		free(buf);
		return 2;
	}
	for (uint64_t off = 0; off < size; off += PIECE) {
		uint64_t len = size - off < PIECE ? size - off : PIECE;

		mism += (uint64_t)cmp_range(map, rfd, buf, off, len,
					    "sequential");
		pages += (len + psz - 1) / psz;
	}
	munmap((void *)map, size);

	/* random page touches, on a fresh mapping */
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmapread: mmap");
		free(buf);
		return 2;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t pg = i == 0 ? npages - 1 : rnd() % npages;
		uint64_t run = 1 + (rnd() % 4 == 0 ? rnd() % 16 : 0);
		uint64_t off = pg * psz;
		uint64_t len = run * psz;

		if (len > size - off)
			len = size - off;
		mism += (uint64_t)cmp_range(map, rfd, buf, off, len, "random");
		pages += (len + psz - 1) / psz;
	}
	munmap((void *)map, size);
	printf("pages=%" PRIu64 " mismatches=%" PRIu64 "\n", pages, mism);
	free(buf);
	return mism ? 1 : 0;
}
