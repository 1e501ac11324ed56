/*
 * mkdata - make a benchmark dataset directory: NFILES files of SIZE bytes
 * each with deterministic, incompressible pseudo-random content.
 *
 * Usage:
 *   bench/mkdata [--seed N] DIR NFILES SIZE
 *
 * Writes DIR/file-000000.bin ... DIR/file-<NFILES-1>.bin (DIR is created
 * if missing; existing files are overwritten).  SIZE takes K, M, G, T
 * suffixes (binary multiples).  Content: the 8-byte little-endian word at
 * byte offset 8*i of file k is
 *
 *	mix64(mix64((seed << 32) | k) + i)
 *
 * where mix64() is the splitmix64 finalizer; a trailing partial word is
 * truncated.  The content depends only on (seed, k, offset), so a file's
 * prefix does not depend on its size, and bench/memfs's /data equals
 * file-000000.bin of seed 0.  Data is generated and written in 1 MiB
 * chunks (several GB/s; the page cache absorbs the writes).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define CHUNK (1U << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
"usage: %s [--seed N] DIR NFILES SIZE\n"
"\n"
"Create DIR/file-000000.bin ... with NFILES files of SIZE bytes (K/M/G/T\n"
"suffixes, binary) of deterministic incompressible data.\n"
"\n"
"    --seed N    pattern seed (default 0; memfs's /data is file 0, seed 0)\n"
"    -h, --help  this help\n", prog);
}

static int write_file(const char *path, uint64_t size, uint64_t key,
		      unsigned char *buf)
{
	uint64_t off = 0;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "mkdata: cannot create %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (off < size) {
		size_t len = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		size_t done = 0;

		fill_pattern(buf, len, key, off / 8);
		while (done < len) {
			ssize_t n = write(fd, buf + done, len - done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				fprintf(stderr, "mkdata: write %s: %s\n", path,
					strerror(errno));
				close(fd);
				return -1;
			}
			done += (size_t)n;
		}
		off += len;
	}
	if (close(fd) < 0) {
		fprintf(stderr, "mkdata: close %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	unsigned long long seed = 0, nfiles;
	unsigned char *buf;
	uint64_t size, k;
	double t0, dt;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			errno = 0;
			seed = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg) {
				fprintf(stderr, "mkdata: bad --seed '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (argc - optind != 3) {
		usage(stderr, argv[0]);
		return 2;
	}
	errno = 0;
	nfiles = strtoull(argv[optind + 1], &end, 10);
	if (errno || *end || end == argv[optind + 1] ||
	    argv[optind + 1][0] == '-' || nfiles > 1000000) {
		fprintf(stderr, "mkdata: bad NFILES '%s' (0..1000000)\n",
			argv[optind + 1]);
		return 2;
	}
	if (parse_size(argv[optind + 2], &size)) {
		fprintf(stderr, "mkdata: bad SIZE '%s' (e.g. 256M, 1G, 4096)\n",
			argv[optind + 2]);
		return 2;
	}
	if (mkdir(argv[optind], 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mkdata: cannot create directory %s: %s\n",
			argv[optind], strerror(errno));
		return 1;
	}
	buf = malloc(CHUNK);
	if (!buf) {
		fprintf(stderr, "mkdata: out of memory\n");
		return 1;
	}

	t0 = now_s();
	for (k = 0; k < nfiles; k++) {
		char path[4096];
		uint64_t key = pattern_key((uint64_t)seed, k);

		if ((size_t)snprintf(path, sizeof(path), "%s/file-%06llu.bin",
				     argv[optind], (unsigned long long)k) >=
		    sizeof(path)) {
			fprintf(stderr, "mkdata: path too long\n");
			free(buf);
			return 1;
		}
		if (write_file(path, size, key, buf)) {
			free(buf);
			return 1;
		}
	}
	dt = now_s() - t0;
	fprintf(stderr, "mkdata: wrote %llu files x %llu bytes to %s in %.2f s "
		"(%.0f MB/s)\n", nfiles, (unsigned long long)size,
		argv[optind], dt,
		dt > 0 ? (double)(nfiles * size) / dt / 1e6 : 0.0);
	free(buf);
	return 0;
}
