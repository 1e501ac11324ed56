/*
 * stat_main.c - prefetchfs-stat: a live view of a mount's statistics.
 *
 *   prefetchfs-stat [-i SECONDS] [-n COUNT] [--json] MOUNTPOINT
 *
 * Reads MOUNTPOINT/.prefetchfs/stats (JSON, written by the daemon on every
 * open) every -i seconds and shows, like top, the totals, which tier
 * served the bytes (memory, the shared and disk caches, the store, the
 * page cache), what prefetching saved, warnings and advice, and one line
 * per reader stream (small files of a directory together).  Rates are
 * differences between two snapshots divided by the time between them; the
 * first frame, having no previous snapshot, shows the totals since the
 * mount.  --json prints the file once, unchanged, for scripts.  This file
 * holds the command line and the loop; stat_frame.c draws a screen,
 * stat_advice.c its warning, advice and note lines.
 *
 * A separate program, not part of the daemon or libprefetchfs.a: it needs
 * only the JSON reader (json.c).  It exits 1 with one line on stderr when
 * the stats cannot be read, at start (not a prefetchfs mount) or later
 * (the mount went away).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pf_json.h"
#include "stat_int.h"

#ifndef PF_VERSION
#define PF_VERSION "0.1.0"
#endif

#define STATS_PATH "/.prefetchfs/stats"
#define STATS_MAX (64u << 20)

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: prefetchfs-stat [options] MOUNTPOINT\n"
		"\n"
		"Live view of a prefetchfs mount's statistics "
		"(MOUNTPOINT%s), refreshed like top:\n"
		"totals, the tiers that served the bytes (memory, disk "
		"cache, store, page\n"
		"cache), the time prefetching saved, warnings and advice, "
		"then per reader\n"
		"stream the learned pattern and batch, hit rate, data wait, "
		"throughput and\n"
		"memory read ahead.\n"
		"\n"
		"    -i, --interval=SECONDS  time between refreshes "
		"(default 1; fractions allowed)\n"
		"    -n, --count=COUNT       stop after COUNT refreshes "
		"(default 0: until interrupted)\n"
		"    -j, --json              print the stats file once, as "
		"is (JSON), and exit\n"
		"    -h, --help              print this help and exit\n"
		"    -V, --version           print the version and exit\n"
		"\n"
		"Sizes are in bytes with K, M, G (powers of 1024); rates in "
		"MiB/s.  When the output\n"
		"is not a terminal, frames are printed one after another "
		"instead of redrawn.\n"
		"Exit status: 0, or 1 when the stats cannot be read (not a "
		"prefetchfs mount,\n"
		"or the mount went away), 2 on a usage error.\n",
		STATS_PATH);
}

/* Reads the whole stats file; -errno on failure. */
static int read_stats(const char *path, struct pf_stat_snap *s)
{
	size_t cap = 16384;
	char *buf = malloc(cap);
	size_t len = 0;
	int saved;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		free(buf);
		return -saved;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb;

			if (cap >= STATS_MAX) {
				saved = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				saved = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	s->text = buf;
	s->len = len;
	s->t = now_s();
	return 0;
fail:
	close(fd);
	free(buf);
	return -saved;
}

static void snapshot_clear(struct pf_stat_snap *s)
{
	pf_json_free(s->root);
	free(s->text);
	memset(s, 0, sizeof(*s));
}

/* Sleeps @secs unless interrupted. */
static void pause_for(double secs)
{
	struct timespec ts = {
		.tv_sec = (time_t)secs,
		.tv_nsec = (long)((secs - floor(secs)) * 1e9),
	};

	while (!interrupted && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0.05 ||
	    v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_count(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "--name=value", "--name value", "-n value", "-nvalue" */
static const char *opt_value(int argc, char **argv, int *i, const char *s,
			     const char *lng, const char *shrt)
{
	size_t l = strlen(lng);

	if (strncmp(s, lng, l) == 0 && s[l] == '=')
		return s + l + 1;
	if (strcmp(s, lng) == 0 || strcmp(s, shrt) == 0)
		return *i + 1 < argc ? argv[++*i] : NULL;
	if (strncmp(s, shrt, 2) == 0 && s[2])
		return s + 2;
	return NULL;
}

struct args {
	const char *mnt;
	double interval;
	long count;
	bool json;
};

/* The command line into @a; -1 to exit 0 (--help, --version), 2 for a
 * usage error (said), 0 to go on. */
static int parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v;

		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
			usage(stdout);
			return -1;
		} else if (strcmp(s, "-V") == 0 ||
			   strcmp(s, "--version") == 0) {
			printf("prefetchfs-stat %s\n", PF_VERSION);
			return -1;
		} else if (strcmp(s, "-j") == 0 || strcmp(s, "--json") == 0) {
			a->json = true;
		} else if (strncmp(s, "-i", 2) == 0 ||
			   strncmp(s, "--interval", 10) == 0) {
			v = opt_value(argc, argv, &i, s, "--interval", "-i");
			if (!v || parse_interval(v, &a->interval) < 0) {
				fprintf(stderr,
					"prefetchfs-stat: bad interval '%s' "
					"(seconds, at least 0.05)\n",
					v ? v : "");
				return 2;
			}
		} else if (strncmp(s, "-n", 2) == 0 ||
			   strncmp(s, "--count", 7) == 0) {
			v = opt_value(argc, argv, &i, s, "--count", "-n");
			if (!v || parse_count(v, &a->count) < 0) {
				fprintf(stderr,
					"prefetchfs-stat: bad count '%s' (a "
					"number, 0 for no limit)\n",
					v ? v : "");
				return 2;
			}
		} else if (s[0] == '-' && s[1]) {
			fprintf(stderr,
				"prefetchfs-stat: unknown option '%s' (see "
				"--help)\n",
				s);
			return 2;
		} else if (a->mnt) {
			fprintf(stderr,
				"prefetchfs-stat: unexpected argument '%s': "
				"give one MOUNTPOINT\n",
				s);
			return 2;
		} else {
			a->mnt = s;
		}
	}
	if (!a->mnt) {
		fprintf(stderr, "prefetchfs-stat: missing MOUNTPOINT (usage: "
				"prefetchfs-stat [options] MOUNTPOINT)\n");
		return 2;
	}
	return 0;
}

/* Why reading number @n (0: the first) of @path failed: one line. */
static void read_failed(const char *mnt, const char *path, long n, int ret)
{
	if (n == 0 && ret == -ENOENT)
		fprintf(stderr, "prefetchfs-stat: %s: not a prefetchfs mount "
			"(no %s)\n", mnt, path);
	else if (n == 0)
		fprintf(stderr, "prefetchfs-stat: %s: %s\n", path,
			strerror(-ret));
	else
		fprintf(stderr, "prefetchfs-stat: %s: the mount went away "
			"(%s)\n", mnt, strerror(-ret));
}

/* Reads and shows the stats until done; the exit status. */
static int run(const struct args *a, const char *path)
{
	struct pf_stat_snap snaps[2] = { { 0 } };
	bool tty = isatty(STDOUT_FILENO);
	int status = 0;
	int cur = 0;

	for (long n = 0; !interrupted && (a->count == 0 || n < a->count);
	     n++) {
		struct pf_stat_snap *s = &snaps[cur];
		struct pf_stat_snap *prev = n ? &snaps[!cur] : NULL;
		int ret;

		if (n)
			pause_for(a->interval);
		if (interrupted)
			break;
		ret = read_stats(path, s);
		if (ret < 0) {
			read_failed(a->mnt, path, n, ret);
			status = 1;
			break;
		}
		if (a->json) {
			if (fwrite(s->text, 1, s->len, stdout) != s->len)
				status = 1;
			break;
		}
		if (pf_json_parse(s->text, s->len, &s->root) < 0) {
			fprintf(stderr,
				"prefetchfs-stat: %s: not the stats of a "
				"prefetchfs mount (bad JSON)\n",
				path);
			status = 1;
			break;
		}
		if (!tty && n)
			putchar('\n');
		pf_stat_frame(a->mnt, s, prev, tty);
		if (prev)
			snapshot_clear(prev);
		cur = !cur;
	}
	snapshot_clear(&snaps[0]);
	snapshot_clear(&snaps[1]);
	return status;
}

int main(int argc, char **argv)
{
	struct args a = { .interval = 1 };
	struct sigaction sa = { .sa_handler = on_signal };
	char path[4096];
	int status;

	status = parse_args(argc, argv, &a);
	if (status)
		return status < 0 ? 0 : status;
	if (snprintf(path, sizeof(path), "%s%s", a.mnt, STATS_PATH) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "prefetchfs-stat: mount point too long\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	status = run(&a, path);
	if (fflush(stdout) != 0)
		status = 1;
	return status;
}
