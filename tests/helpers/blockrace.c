/*
 * blockrace - several threads read disjoint pages of the same cache block
 * of FILE (through a mount) at the same moment, block after block, and
 * compare them with REF (the source file, read directly).
 *
 *   blockrace [-t THREADS] [-n BLOCKS] [-b BLOCK] [-s STEP] [-d] FILE REF
 *
 * For block i (at offset i*STEP, STEP default 1 MiB, BLOCKS default 32):
 * the THREADS threads (default 2) wait at a barrier, then thread k preads
 * one 4 KiB page at offset i*STEP + k*(BLOCK/THREADS) (BLOCK default 64
 * KiB, the daemon's default block size).  The file is advised
 * POSIX_FADV_RANDOM so that the kernel asks the daemon for exactly that
 * page; with -d it is opened O_DIRECT instead.  The ranges neither touch
 * nor overlap, so a daemon sees several READs of one block, each for a
 * different part of it, in flight together.  Prints "blocks=N
 * mismatches=N".  Exit: 0 all equal, 1 mismatch or read error, 2 setup.
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

#define PAGE 4096u

struct shared {
	int fd;
	int rfd;
	uint64_t size;
	uint64_t block;
	uint64_t step;
	unsigned nthreads;
	unsigned nblocks;
	pthread_barrier_t bar;
	atomic_uint mism;
};

struct worker {
	struct shared *sh;
	unsigned idx;
	pthread_t tid;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	unsigned char *a = NULL, *b = malloc(PAGE);

	if (posix_memalign((void **)&a, PAGE, PAGE) != 0 || !b) {
		atomic_fetch_add(&sh->mism, 1);
		free(b);
		return NULL;
	}
	for (unsigned i = 0; i < sh->nblocks; i++) {
		uint64_t off = (uint64_t)i * sh->step +
			       (uint64_t)w->idx * (sh->block / sh->nthreads);
		ssize_t na, nb;

		off -= off % PAGE;
		pthread_barrier_wait(&sh->bar);
		if (off >= sh->size)
			continue;
		na = pread(sh->fd, a, PAGE, (off_t)off);
		nb = pread(sh->rfd, b, PAGE, (off_t)off);
		if (na < 0) {
			printf("read error at %" PRIu64 ": %s\n", off,
			       strerror(errno));
			atomic_fetch_add(&sh->mism, 1);
		} else if (na != nb || memcmp(a, b, (size_t)na) != 0) {
			printf("mismatch at %" PRIu64 " (got %zd bytes, "
			       "expected %zd)\n", off, na, nb);
			atomic_fetch_add(&sh->mism, 1);
		}
	}
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
		fprintf(stderr, "blockrace: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct shared sh = { .block = 64 << 10, .step = 1 << 20,
			     .nthreads = 2, .nblocks = 32 };
	struct worker *w;
	struct stat st;
	int direct = 0, c;

	while ((c = getopt(argc, argv, "t:n:b:s:d")) != -1) {
		switch (c) {
		case 't': sh.nthreads = (unsigned)num(optarg); break;
		case 'n': sh.nblocks = (unsigned)num(optarg); break;
		case 'b': sh.block = num(optarg); break;
		case 's': sh.step = num(optarg); break;
		case 'd': direct = 1; break;
		default:
			fprintf(stderr, "usage: blockrace [-t THREADS] "
					"[-n BLOCKS] [-b BLOCK] [-s STEP] [-d] "
					"FILE REF\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: blockrace [-t THREADS] [-n BLOCKS] "
				"[-b BLOCK] [-s STEP] [-d] FILE REF\n");
		return 2;
	}
	sh.fd = open(argv[optind], O_RDONLY | (direct ? O_DIRECT : 0));
	sh.rfd = open(argv[optind + 1], O_RDONLY);
	if (sh.fd < 0 || sh.rfd < 0 || fstat(sh.rfd, &st) < 0) {
		perror("blockrace");
		return 2;
	}
	sh.size = (uint64_t)st.st_size;
	if (!direct)
		posix_fadvise(sh.fd, 0, 0, POSIX_FADV_RANDOM);
	atomic_init(&sh.mism, 0);
	pthread_barrier_init(&sh.bar, NULL, sh.nthreads);
	w = calloc(sh.nthreads, sizeof(*w));
	if (!w)
		return 2;
	for (unsigned i = 0; i < sh.nthreads; i++) {
		w[i].sh = &sh;
		w[i].idx = i;
		if (pthread_create(&w[i].tid, NULL, run, &w[i]) != 0) {
			fprintf(stderr, "blockrace: pthread_create failed\n");
			exit(2);
		}
	}
	for (unsigned i = 0; i < sh.nthreads; i++)
		pthread_join(w[i].tid, NULL);
	printf("blocks=%u mismatches=%u\n", sh.nblocks,
	       atomic_load(&sh.mism));
	free(w);
	return atomic_load(&sh.mism) ? 1 : 0;
}
