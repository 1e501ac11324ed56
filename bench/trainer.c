/*
 * trainer - a load generator that reads files the way a training loop
 * does: fetch a batch of data, "compute" on it, repeat.  It prints one line
 * of key=value results on stdout.
 *
 * Usage:
 *   bench/trainer [options] FILE...
 *   bench/trainer --scan [--read-size SIZE] [--mode read|mmap] FILE...
 *   bench/trainer --help
 *
 * For each FILE (and each of --passes passes over the list): open it, then
 * repeatedly fill a batch of --batch bytes (default 8M) by reading it
 * sequentially with read() calls of --read-size bytes (default 1M), or in
 * --mode mmap by copying the batch out of a MAP_SHARED PROT_READ mapping
 * of the whole file with memcpy(); then "compute" for --compute-ms
 * milliseconds (default 40, nanosleep, so the CPU stays free like a GPU
 * step) until EOF or --batches batches in total.  The last batch of a file
 * may be short.
 *
 * --stride S --record L [--offset O] reads records of L bytes at O, O+S,
 * O+2S, ... (rank r of N: --offset r*L --stride N*L), with pread() calls of
 * at most --read-size bytes; a batch holds whole records and is complete
 * once it has at least --batch bytes.
 *
 * --random SEED reads chunks of --read-size at random chunk-aligned offsets
 * (uniform over the file, with replacement; xorshift64* seeded with SEED),
 * with pread(), as many per file as a sequential pass has chunks (fewer
 * with --batches): a reader with no pattern to learn.
 *
 * --time-limit S stops at the first batch boundary after S seconds of wall
 * time (the output then says limited=1): a bounded run of a slow reader.
 *
 * --fadvise sequential|random|normal calls posix_fadvise() on each FILE
 * after opening it (default: none), as a loader that declares its access.
 *
 * --scan: no compute; read whole files in --read-size chunks (batch =
 * one chunk), for hot-data throughput.
 *
 * --check REF compares every byte read with the same range of REF (if REF
 * is a directory, of REF/<basename of FILE>) and fails on a mismatch; the
 * time spent checking is excluded from all timings.
 *
 * Output keys: mode, scan, files, passes, batch_bytes, bytes, batches,
 * wall_s (total), compute_s, wait_s (= wall - compute: time the trainer
 * waited for data), data_wait_pct (= wait/wall*100), mb_s (= bytes/wall,
 * overall), read_mb_s (= bytes/wait, while reading), open_s (time in
 * open()/fstat()/mmap(), part of wait_s; on FUSE with keep_cache=0 the
 * open drops the file's cached pages, ~0.1 s per GiB), first_batch_ms (from
 * start to the first full batch, including open), batch_wait_{p50,p90,p99,
 * max}_ms (data time per batch; the first batch of each file includes its
 * open), limited (1 if --time-limit ended the run), and check=ok with
 * --check.  MB = 10^6 bytes.  Sizes accept K, M, G, T suffixes (binary
 * multiples).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define NSEC_PER_SEC 1000000000ULL

struct cfg {
	uint64_t batch;
	uint64_t read_size;
	double compute_ms;
	int use_mmap;
	uint64_t max_batches;	/* 0: no limit */
	uint64_t passes;
	int scan;
	const char *check;
	int check_is_dir;
	uint64_t stride;	/* 0: sequential */
	uint64_t record;
	uint64_t offset;
	int random;
	uint64_t seed;
	double time_limit_s;	/* 0: no limit */
	int fadvise;		/* POSIX_FADV_*, or -1: none */
};

struct stats {
	uint64_t bytes;
	uint64_t batches;
	uint64_t compute_ns;
	uint64_t check_ns;
	uint64_t open_ns;
	uint64_t start_ns;
	uint64_t first_batch_ns;
	int limited;		/* stopped by --time-limit */
	uint64_t *waits;	/* data time of each batch */
	size_t nwaits, cap;
};

/* One open FILE (and its --check reference). */
struct input {
	const char *path;
	int fd;
	int ref_fd;
	uint64_t size;
	const unsigned char *map;
	unsigned char *cbuf;	/* --check buffer, read_size bytes */
	uint64_t pos;		/* sequential: next offset */
	uint64_t rec;		/* stride: next record; random: reads done */
	uint64_t rng;		/* random: xorshift64* state */
};

static const char *prog = "trainer";

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	uint64_t t = now_ns() + ns;
	struct timespec ts = {
		.tv_sec = (time_t)(t / NSEC_PER_SEC),
		.tv_nsec = (long)(t % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static int parse_uint(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return -1;
	*out = v;
	return 0;
}

/* xorshift64*: fast, and the same sequence for a seed everywhere. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ULL;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [options] FILE...\n"
"\n"
"Trainer-like reader: per FILE, read a batch sequentially, compute, repeat\n"
"until EOF. Prints one key=value line (see the header of bench/trainer.c).\n"
"\n"
"  --batch SIZE       bytes per batch (default 8M)\n"
"  --compute-ms N     compute time per batch, ms (default 40; nanosleep)\n"
"  --read-size SIZE   bytes per read()/pread() call (default 1M)\n"
"  --mode read|mmap   read() calls, or memcpy from a MAP_SHARED mapping\n"
"                     (default read)\n"
"  --batches N        stop after N batches in total (default: all)\n"
"  --passes N         passes over the FILE list (default 1)\n"
"  --scan             no compute, batch = one --read-size chunk: report\n"
"                     raw read throughput\n"
"  --stride S         strided records: record i at OFFSET + i*S ...\n"
"  --record L         ... of L bytes (needs --stride)\n"
"  --offset O         ... starting at O (default 0)\n"
"  --random SEED      --read-size chunks at random aligned offsets, as\n"
"                     many as the file has chunks\n"
"  --time-limit S     stop at a batch boundary after S seconds\n"
"  --fadvise ADVICE   posix_fadvise() each FILE after opening it:\n"
"                     sequential, random or normal (default: none)\n"
"  --check REF        compare the data with REF (a file, or a directory\n"
"                     holding files of the same basename); exit 1 on a\n"
"                     mismatch\n"
"  -h, --help         this help\n"
"\n"
"SIZE accepts K, M, G, T suffixes (binary). Exit status: 0 ok, 1 I/O error\n"
"or --check mismatch, 2 usage error.\n", prog);
}

static void record_wait(struct stats *st, uint64_t ns)
{
	if (st->nwaits == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		uint64_t *w = realloc(st->waits, cap * sizeof(*w));

		if (!w) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(1);
		}
		st->waits = w;
		st->cap = cap;
	}
	st->waits[st->nwaits++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_ms(const struct stats *st, double p)
{
	size_t i;

	if (!st->nwaits)
		return 0.0;
	i = (size_t)(p / 100.0 * (double)st->nwaits + 0.999999);
	if (i < 1)
		i = 1;
	if (i > st->nwaits)
		i = st->nwaits;
	return (double)st->waits[i - 1] / 1e6;
}

/* Compare @len bytes at file offset @off with the reference file. */
static int check_range(struct input *in, const struct cfg *c,
		       struct stats *st, const unsigned char *data,
		       uint64_t off, size_t len)
{
	uint64_t t0 = now_ns();
	size_t done = 0;

	while (done < len) {
		size_t want = len - done;
		ssize_t n;

		if (want > c->read_size)
			want = c->read_size;
		n = pread(in->ref_fd, in->cbuf, want, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: --check: reading reference for "
				"%s: %s\n", prog, in->path, strerror(errno));
			return -1;
		}
		if (n == 0 || memcmp(in->cbuf, data + done, (size_t)n)) {
			size_t i = 0;

			while (i < (size_t)n && in->cbuf[i] == data[done + i])
				i++;
			fprintf(stderr, "%s: --check: %s differs from the "
				"reference at byte %llu%s\n", prog, in->path,
				(unsigned long long)(off + done + i),
				n == 0 ? " (reference too short)" : "");
			return -1;
		}
		done += (size_t)n;
	}
	st->check_ns += now_ns() - t0;
	return 0;
}

/* pread() exactly @len bytes unless EOF; returns bytes read or -1. */
static ssize_t pread_full(struct input *in, unsigned char *buf, size_t len,
			  uint64_t off, uint64_t read_size)
{
	size_t done = 0;

	while (done < len) {
		size_t want = len - done;
		ssize_t n;

		if (want > read_size)
			want = read_size;
		n = pread(in->fd, buf + done, want, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "%s: %s: read at offset %llu: %s\n",
				prog, in->path,
				(unsigned long long)(off + done),
				strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * Fill @buf with the next batch.  Returns the number of bytes (0 at EOF),
 * or -1 on error; sets *eof when the file is exhausted.
 */
static ssize_t fill_batch(struct input *in, const struct cfg *c,
			  struct stats *st, unsigned char *buf, int *eof)
{
	size_t filled = 0;

	while (filled < c->batch && !*eof) {
		uint64_t off;
		size_t len;
		ssize_t n;

		if (c->random) {
			uint64_t nchunks = (in->size + c->read_size - 1) /
					   c->read_size;

			if (in->rec >= nchunks) {
				*eof = 1;
				break;
			}
			off = next_rand(&in->rng) % nchunks * c->read_size;
			len = (size_t)c->read_size;
			if (len > in->size - off)
				len = (size_t)(in->size - off);
			in->rec++;
		} else if (c->stride) {
			off = c->offset + in->rec * c->stride;
			if (c->offset >= in->size ||
			    in->rec > (in->size - c->offset - 1) / c->stride) {
				*eof = 1;
				break;
			}
			len = (size_t)c->record;
			if (len > in->size - off)
				len = (size_t)(in->size - off);
			in->rec++;
		} else {
			off = in->pos;
			len = (size_t)(c->batch - filled);
			if (!c->use_mmap && len > c->read_size)
				len = (size_t)c->read_size;
		}

		if (c->use_mmap) {
			if (off >= in->size) {
				*eof = 1;
				break;
			}
			if (len > in->size - off)
				len = (size_t)(in->size - off);
			memcpy(buf + filled, in->map + off, len);
			n = (ssize_t)len;
		} else if (c->stride || c->random) {
			n = pread_full(in, buf + filled, len, off,
				       c->read_size);
		} else {
			n = read(in->fd, buf + filled, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				fprintf(stderr, "%s: %s: read at offset %llu: "
					"%s\n", prog, in->path,
					(unsigned long long)off,
					strerror(errno));
		}
		if (n < 0)
			return -1;
		if (n == 0) {
			*eof = 1;
			break;
		}
		if (c->check && check_range(in, c, st, buf + filled, off,
					    (size_t)n))
			return -1;
		filled += (size_t)n;
		if (!c->stride && !c->random)
			in->pos += (uint64_t)n;
	}
	return (ssize_t)filled;
}

static int open_input(struct input *in, const struct cfg *c)
{
	struct stat sb;

	in->fd = open(in->path, O_RDONLY | O_CLOEXEC);
	if (in->fd < 0) {
		fprintf(stderr, "%s: cannot open %s: %s\n", prog, in->path,
			strerror(errno));
		return -1;
	}
	if (fstat(in->fd, &sb) < 0) {
		fprintf(stderr, "%s: cannot stat %s: %s\n", prog, in->path,
			strerror(errno));
		return -1;
	}
	in->size = (uint64_t)sb.st_size;
	if (c->fadvise >= 0) {
		int err = posix_fadvise(in->fd, 0, 0, c->fadvise);

		if (err) {
			fprintf(stderr, "%s: posix_fadvise %s: %s\n", prog,
				in->path, strerror(err));
			return -1;
		}
	}
	if (c->use_mmap && in->size) {
		void *p = mmap(NULL, in->size, PROT_READ, MAP_SHARED, in->fd,
			       0);

		if (p == MAP_FAILED) {
			fprintf(stderr, "%s: cannot mmap %s: %s\n", prog,
				in->path, strerror(errno));
			return -1;
		}
		in->map = p;
	}
	if (c->check) {
		char ref[PATH_MAX], tmp[PATH_MAX];

		if (c->check_is_dir) {
			snprintf(tmp, sizeof(tmp), "%s", in->path);
			if ((size_t)snprintf(ref, sizeof(ref), "%s/%s",
					     c->check, basename(tmp)) >=
			    sizeof(ref)) {
				fprintf(stderr, "%s: --check path too long\n",
					prog);
				return -1;
			}
		} else {
			snprintf(ref, sizeof(ref), "%s", c->check);
		}
		in->ref_fd = open(ref, O_RDONLY | O_CLOEXEC);
		if (in->ref_fd < 0) {
			fprintf(stderr, "%s: --check: cannot open %s: %s\n",
				prog, ref, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void close_input(struct input *in)
{
	if (in->map)
		munmap((void *)in->map, in->size);
	if (in->fd >= 0)
		close(in->fd);
	if (in->ref_fd >= 0)
		close(in->ref_fd);
}

/* Returns 0 when done with the file, 1 when the batch limit is hit. */
static int run_file(const char *path, const struct cfg *c, struct stats *st,
		    unsigned char *buf, unsigned char *cbuf)
{
	struct input in = { .path = path, .fd = -1, .ref_fd = -1,
			    .cbuf = cbuf, .rng = c->seed };
	uint64_t t0 = now_ns();
	int eof = 0, ret = 0;

	if (open_input(&in, c))
		goto fail;
	st->open_ns += now_ns() - t0;
	while (!eof) {
		uint64_t check0 = st->check_ns, t1;
		ssize_t n;

		if (c->max_batches && st->batches >= c->max_batches) {
			ret = 1;
			break;
		}
		if (c->time_limit_s > 0 &&
		    (double)(now_ns() - st->start_ns - st->check_ns) / 1e9 >=
		    c->time_limit_s) {
			st->limited = 1;
			ret = 1;
			break;
		}
		n = fill_batch(&in, c, st, buf, &eof);
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		t1 = now_ns();
		record_wait(st, t1 - t0 - (st->check_ns - check0));
		if (!st->batches)
			st->first_batch_ns = t1 - st->start_ns - st->check_ns;
		st->batches++;
		st->bytes += (uint64_t)n;

		if (c->compute_ms > 0) {
			sleep_ns((uint64_t)(c->compute_ms * 1e6));
			t0 = now_ns();
			st->compute_ns += t0 - t1;
		} else {
			t0 = t1;
		}
	}
	close_input(&in);
	return ret;
fail:
	close_input(&in);
	exit(1);
}

int main(int argc, char *argv[])
{
	enum { O_BATCH = 256, O_COMPUTE, O_READSIZE, O_MODE, O_BATCHES,
	       O_PASSES, O_SCAN, O_CHECK, O_STRIDE, O_RECORD, O_OFFSET,
	       O_RANDOM, O_TIMELIMIT, O_FADVISE };
	static const struct option longopts[] = {
		{ "batch", required_argument, NULL, O_BATCH },
		{ "compute-ms", required_argument, NULL, O_COMPUTE },
		{ "read-size", required_argument, NULL, O_READSIZE },
		{ "mode", required_argument, NULL, O_MODE },
		{ "batches", required_argument, NULL, O_BATCHES },
		{ "passes", required_argument, NULL, O_PASSES },
		{ "scan", no_argument, NULL, O_SCAN },
		{ "check", required_argument, NULL, O_CHECK },
		{ "stride", required_argument, NULL, O_STRIDE },
		{ "record", required_argument, NULL, O_RECORD },
		{ "offset", required_argument, NULL, O_OFFSET },
		{ "random", required_argument, NULL, O_RANDOM },
		{ "time-limit", required_argument, NULL, O_TIMELIMIT },
		{ "fadvise", required_argument, NULL, O_FADVISE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct cfg c = {
		.batch = 8ULL << 20,
		.read_size = 1ULL << 20,
		.compute_ms = 40.0,
		.passes = 1,
		.fadvise = -1,
	};
	struct stats st = { 0 };
	unsigned char *buf, *cbuf = NULL;
	uint64_t pass, end_ns, bufsize;
	double wall, compute, wait;
	int opt, i, bad = 0;
	char *end;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_BATCH:
			bad = parse_size(optarg, &c.batch) || !c.batch;
			break;
		case O_COMPUTE:
			errno = 0;
			c.compute_ms = strtod(optarg, &end);
			bad = errno || *end || end == optarg ||
			      !(c.compute_ms >= 0);
			break;
		case O_READSIZE:
			bad = parse_size(optarg, &c.read_size) ||
			      !c.read_size || c.read_size > (1ULL << 31);
			break;
		case O_MODE:
			if (!strcmp(optarg, "read"))
				c.use_mmap = 0;
			else if (!strcmp(optarg, "mmap"))
				c.use_mmap = 1;
			else
				bad = 1;
			break;
		case O_BATCHES:
			bad = parse_uint(optarg, &c.max_batches);
			break;
		case O_PASSES:
			bad = parse_uint(optarg, &c.passes) || !c.passes;
			break;
		case O_SCAN:
			c.scan = 1;
			break;
		case O_CHECK:
			c.check = optarg;
			break;
		case O_STRIDE:
			bad = parse_size(optarg, &c.stride) || !c.stride;
			break;
		case O_RECORD:
			bad = parse_size(optarg, &c.record) || !c.record ||
			      c.record > (1ULL << 31);
			break;
		case O_OFFSET:
			bad = parse_size(optarg, &c.offset);
			break;
		case O_RANDOM:
			c.random = 1;
			bad = parse_uint(optarg, &c.seed);
			/* xorshift needs a non-zero state */
			c.seed = c.seed * 0x9E3779B97F4A7C15ULL + 1;
			break;
		case O_TIMELIMIT:
			errno = 0;
			c.time_limit_s = strtod(optarg, &end);
			bad = errno || *end || end == optarg ||
			      !(c.time_limit_s >= 0);
			break;
		case O_FADVISE:
			if (!strcmp(optarg, "sequential"))
				c.fadvise = POSIX_FADV_SEQUENTIAL;
			else if (!strcmp(optarg, "random"))
				c.fadvise = POSIX_FADV_RANDOM;
			else if (!strcmp(optarg, "normal"))
				c.fadvise = POSIX_FADV_NORMAL;
			else
				bad = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "%s: bad value '%s' for --%s\n", prog,
				optarg, longopts[opt - O_BATCH].name);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no FILE given (see %s --help)\n", prog,
			prog);
		return 2;
	}
	if (!c.stride != !c.record) {
		fprintf(stderr, "%s: --stride and --record go together\n",
			prog);
		return 2;
	}
	if (c.random && (c.stride || c.use_mmap)) {
		fprintf(stderr, "%s: --random goes with neither --stride nor "
			"--mode mmap\n", prog);
		return 2;
	}
	if (c.stride && c.record > c.stride) {
		fprintf(stderr, "%s: --record must not exceed --stride\n",
			prog);
		return 2;
	}
	if (c.scan) {
		c.compute_ms = 0;
		c.batch = c.stride || c.random ? 1 : c.read_size;
	}
	if (c.check) {
		struct stat sb;

		if (stat(c.check, &sb) < 0) {
			fprintf(stderr, "%s: --check: cannot stat %s: %s\n",
				prog, c.check, strerror(errno));
			return 2;
		}
		c.check_is_dir = S_ISDIR(sb.st_mode);
		cbuf = malloc(c.read_size);
		if (!cbuf) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return 1;
		}
	}
	bufsize = c.batch + (c.stride ? c.record : 0) +
		  (c.random ? c.read_size : 0);
	buf = malloc(bufsize);
	if (!buf) {
		fprintf(stderr, "%s: cannot allocate a %llu-byte batch\n", prog,
			(unsigned long long)bufsize);
		return 1;
	}

	st.start_ns = now_ns();
	for (pass = 0; pass < c.passes; pass++) {
		for (i = optind; i < argc; i++)
			if (run_file(argv[i], &c, &st, buf, cbuf))
				goto done;
	}
done:
	end_ns = now_ns();
	qsort(st.waits, st.nwaits, sizeof(*st.waits), cmp_u64);

	wall = (double)(end_ns - st.start_ns - st.check_ns) / 1e9;
	compute = (double)st.compute_ns / 1e9;
	wait = wall - compute;
	printf("mode=%s scan=%d files=%d passes=%llu batch_bytes=%llu "
	       "bytes=%llu batches=%llu wall_s=%.3f compute_s=%.3f "
	       "wait_s=%.3f data_wait_pct=%.1f mb_s=%.1f read_mb_s=%.1f "
	       "open_s=%.3f first_batch_ms=%.2f batch_wait_p50_ms=%.2f "
	       "batch_wait_p90_ms=%.2f batch_wait_p99_ms=%.2f "
	       "batch_wait_max_ms=%.2f limited=%d%s\n",
	       c.use_mmap ? "mmap" : "read", c.scan, argc - optind,
	       (unsigned long long)c.passes, (unsigned long long)c.batch,
	       (unsigned long long)st.bytes, (unsigned long long)st.batches,
	       wall, compute, wait, wall > 0 ? wait / wall * 100.0 : 0.0,
	       wall > 0 ? (double)st.bytes / wall / 1e6 : 0.0,
	       wait > 0 ? (double)st.bytes / wait / 1e6 : 0.0,
	       (double)st.open_ns / 1e9,
	       (double)st.first_batch_ns / 1e6, pct_ms(&st, 50),
	       pct_ms(&st, 90), pct_ms(&st, 99), pct_ms(&st, 100),
	       st.limited, c.check ? " check=ok" : "");
	free(st.waits);
	free(buf);
	free(cbuf);
	return 0;
}
