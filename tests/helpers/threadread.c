/*
 * threadread - several threads read one shared file descriptor of FILE
 * (through a mount) with pread() and compare every piece with REF (the
 * source file, read directly).
 *
 *   threadread [-t THREADS] [-c CHUNK] [-m seq|rand] [-n COUNT] FILE REF
 *
 * seq (default): the file is cut in CHUNK pieces (default 256 KiB, any
 * size) and thread i reads pieces i, i+T, i+2T, ... in order, as the
 * workers of a data loader sharing a file do.  rand: each thread reads
 * COUNT (default 500) pieces at pseudo-random offsets.  Prints
 * "threads=N bytes=N mismatches=N".  Exit: 0 all equal, 1 mismatch or read
 * error, 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

struct shared {
	int fd;
	int rfd;
	uint64_t size;
	uint64_t chunk;
	unsigned nthreads;
	int random;
	uint64_t count;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t mism;
};

struct worker {
	struct shared *sh;
	unsigned idx;
	pthread_t tid;
};

static void one(struct shared *sh, unsigned char *a, unsigned char *b,
		uint64_t off)
{
	uint64_t len = sh->chunk;
	int64_t na = pread_all(sh->fd, a, len, off);
	int64_t nb = pread_all(sh->rfd, b, len, off);

	if (na < 0 || nb < 0) {
		printf("read error at %" PRIu64 ": %s\n", off,
		       strerror((int)-(na < 0 ? na : nb)));
		atomic_fetch_add(&sh->mism, 1);
		return;
	}
	atomic_fetch_add(&sh->bytes, (uint64_t)na);
	if (na != nb || memcmp(a, b, (size_t)na) != 0) {
		int64_t k = 0;

		while (k < na && k < nb && a[k] == b[k])
			k++;
		printf("mismatch: %" PRIu64 "+%" PRIu64 ": got %" PRId64
		       " bytes, expected %" PRId64 ", first difference at "
		       "offset %" PRIu64 "\n",
		       off, len, na, nb, off + (uint64_t)k);
		atomic_fetch_add(&sh->mism, 1);
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	unsigned char *a = malloc(sh->chunk);
	unsigned char *b = malloc(sh->chunk);
	uint64_t x = 0x9E3779B97F4A7C15ull * (w->idx + 1);

	if (!a || !b) {
		atomic_fetch_add(&sh->mism, 1);
		goto out;
	}
	if (!sh->random) {
		for (uint64_t off = (uint64_t)w->idx * sh->chunk;
		     off < sh->size; off += sh->nthreads * sh->chunk)
			one(sh, a, b, off);
	} else {
		for (uint64_t i = 0; i < sh->count; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			one(sh, a, b, x % sh->size);
		}
	}
out:
	free(a);
	free(b);
	return NULL;
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s || v == 0) {
		fprintf(stderr, "threadread: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct shared sh = { .chunk = 256 << 10, .nthreads = 4,
			     .count = 500 };
	struct worker *w;
	struct stat st, sr;
	int c;

	while ((c = getopt(argc, argv, "t:c:m:n:")) != -1) {
		switch (c) {
		case 't': sh.nthreads = (unsigned)num(optarg); break;
		case 'c': sh.chunk = num(optarg); break;
		case 'n': sh.count = num(optarg); break;
		case 'm':
			if (strcmp(optarg, "seq") && strcmp(optarg, "rand")) {
				fprintf(stderr, "threadread: -m seq|rand\n");
				return 2;
			}
			sh.random = strcmp(optarg, "rand") == 0;
			break;
		default:
			fprintf(stderr, "usage: threadread [-t THREADS] "
					"[-c CHUNK] [-m seq|rand] [-n COUNT] "
					"FILE REF\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: threadread [-t THREADS] [-c CHUNK] "
				"[-m seq|rand] [-n COUNT] FILE REF\n");
		return 2;
	}
	sh.fd = open(argv[optind], O_RDONLY);
	sh.rfd = open(argv[optind + 1], O_RDONLY);
	if (sh.fd < 0 || sh.rfd < 0 || fstat(sh.fd, &st) < 0 ||
	    fstat(sh.rfd, &sr) < 0) {
		perror("threadread");
		return 2;
	}
	if (st.st_size != sr.st_size || st.st_size == 0) {
		printf("size mismatch or empty: %jd vs %jd\n",
		       (intmax_t)st.st_size, (intmax_t)sr.st_size);
		return 1;
	}
	sh.size = (uint64_t)st.st_size;
	atomic_init(&sh.bytes, 0);
	atomic_init(&sh.mism, 0);
	w = calloc(sh.nthreads, sizeof(*w));
	if (!w)
		return 2;
	for (unsigned i = 0; i < sh.nthreads; i++) {
		w[i].sh = &sh;
		w[i].idx = i;
		if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "threadread: pthread_create failed\n");
			exit(2);
		}
	}
	for (unsigned i = 0; i < sh.nthreads; i++)
		pthread_join(w[i].tid, NULL);
	printf("threads=%u bytes=%" PRIu64 " mismatches=%" PRIu64 "\n",
	       sh.nthreads, (uint64_t)atomic_load(&sh.bytes),
	       (uint64_t)atomic_load(&sh.mism));
	free(w);
	if (!sh.random && atomic_load(&sh.bytes) != sh.size) {
		printf("read %" PRIu64 " bytes of %" PRIu64 "\n",
		       (uint64_t)atomic_load(&sh.bytes), sh.size);
		return 1;
	}
	return atomic_load(&sh.mism) ? 1 : 0;
}
