/*
 * slowread - read FILE (through a mount) sequentially and slowly while the
 * source may change under it; everything read must equal ORIG, a copy of
 * the file's content when the read started.
 *
 *   slowread [-c CHUNK] [-d DELAY_MS] [-p PAUSE_AT -r READY -g GO] FILE ORIG
 *
 * read() calls of CHUNK bytes (default 1 MiB), DELAY_MS (default 0)
 * milliseconds apart.  With -p, once PAUSE_AT bytes have been read it
 * creates the file READY and waits (up to 60 s) until the file GO exists,
 * then goes on, so a script can change the source at a known point.
 *
 * Prints one line "result=WHAT offset=N" where WHAT is
 *   complete   all of ORIG was read, and nothing more
 *   eio        a read failed with EIO at offset N (the bytes before matched)
 *   short      EOF at offset N before the end of ORIG (bytes matched)
 *   mismatch   the bytes at offset N differ from ORIG
 *   long       more bytes than ORIG holds were returned
 *   error      a read failed with another errno (printed)
 * Exit: 0 for complete, eio and short; 1 for mismatch, long and error;
 * 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "slowread: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t chunk = 1 << 20, delay = 0, pause_at = 0, off = 0, osize;
	const char *ready = NULL, *go = NULL;
	unsigned char *a, *b;
	struct stat so;
	int paused = 0;
	int ret = 0;
	int fd, ofd, c;

	while ((c = getopt(argc, argv, "c:d:p:r:g:")) != -1) {
		switch (c) {
		case 'c': chunk = num(optarg); break;
		case 'd': delay = num(optarg); break;
		case 'p': pause_at = num(optarg); break;
		case 'r': ready = optarg; break;
		case 'g': go = optarg; break;
		default:
			fprintf(stderr, "usage: slowread [-c CHUNK] "
					"[-d DELAY_MS] [-p PAUSE_AT -r READY "
					"-g GO] FILE ORIG\n");
			return 2;
		}
	}
	if (argc - optind != 2 || chunk == 0 ||
	    (pause_at && (!ready || !go))) {
		fprintf(stderr, "usage: slowread [-c CHUNK] [-d DELAY_MS] "
				"[-p PAUSE_AT -r READY -g GO] FILE ORIG\n");
		return 2;
	}
	fd = open(argv[optind], O_RDONLY);
	ofd = open(argv[optind + 1], O_RDONLY);
	if (fd < 0 || ofd < 0 || fstat(ofd, &so) < 0) {
		perror("slowread");
		return 2;
	}
	osize = (uint64_t)so.st_size;
	a = malloc(chunk);
	b = malloc(chunk);
	if (!a || !b) {
		free(a);
		free(b);
		return 2;
	}
	for (;;) {
		ssize_t n, m;

		if (pause_at && !paused && off >= pause_at) {
			int rfd = open(ready, O_WRONLY | O_CREAT, 0644);
			unsigned waited = 0;

			if (rfd < 0) {
				perror("slowread: ready file");
				ret = 2;
				break;
			}
			close(rfd);
			while (access(go, F_OK) != 0 && waited++ <= 6000)
				sleep_ms(10);
			if (access(go, F_OK) != 0) {
				fprintf(stderr, "slowread: no go\n");
				ret = 2;
				break;
			}
			paused = 1;
		}
		n = read(fd, a, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			printf("result=%s offset=%" PRIu64 " (%s)\n",
			       err == EIO ? "eio" : "error", off,
			       strerror(err));
			ret = err == EIO ? 0 : 1;
			break;
		}
		if (n == 0) {
			printf("result=%s offset=%" PRIu64 "\n",
			       off == osize ? "complete" : "short", off);
			ret = 0;
			break;
		}
		if (off + (uint64_t)n > osize) {
			printf("result=long offset=%" PRIu64 "\n", osize);
			ret = 1;
			break;
		}
		m = pread(ofd, b, (size_t)n, (off_t)off);
		if (m != n) {
			fprintf(stderr, "slowread: reference read failed\n");
			ret = 2;
			break;
		}
		if (memcmp(a, b, (size_t)n) != 0) {
			ssize_t k = 0;

			while (a[k] == b[k])
				k++;
			printf("result=mismatch offset=%" PRIu64 "\n",
			       off + (uint64_t)k);
			ret = 1;
			break;
		}
		off += (uint64_t)n;
		if (delay)
			sleep_ms((unsigned)delay);
	}
	free(a);
	free(b);
	close(fd);
	close(ofd);
	return ret;
}
