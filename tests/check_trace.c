/*
 * check_trace.c - the pipeline trace: events in, a valid Chrome Trace Event
 * Format document out (read back with the project's JSON reader), file
 * names escaped, overlapping events on lanes of their own, hits gathered
 * and sampled, drops counted, the time limit (an injected clock) and the
 * -o trace options.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_json.h"
#include "pf_log.h"
#include "pf_opts.h"
#include "pf_pattern.h"
#include "pf_trace.h"

#define T0 1000000000000ull	/* the fake clock at the trace's start */
#define US 1000ull
#define MS 1000000ull
#define MiB (1024ull * 1024)

static atomic_uint_fast64_t fake_now;
static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return atomic_load(&fake_now);
}

static void setup(void)
{
	strcpy(dir, "/tmp/check_trace.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.json", dir);
	atomic_store(&fake_now, T0);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static void start(double seconds, unsigned ring)
{
	struct pf_trace_cfg cfg = {
		.path = path,
		.seconds = seconds,
		.clock = fake_clock,
		.ring_events = ring,
	};
	char err[256];

	ck_assert(!pf_trace_on());
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), 0);
	ck_assert(!pf_trace_on());
	ck_assert_int_eq(pf_trace_start("prefetchfs test"), 0);
	ck_assert(pf_trace_on());
}

static char *slurp(size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/*
 * The finished file, parsed: a document with "displayTimeUnit": "ms", an
 * array "traceEvents" and an object "otherData".  Also checks every track
 * (pid, tid): events in time order, and no "X" event overlapping another
 * that it does not nest in.
 */
static struct pf_json *load(const struct pf_json **events)
{
	struct pf_json *root;
	size_t len;
	char *text = slurp(&len);
	double last_ts[4096];
	double last_end[4096];

	ck_assert_int_eq(pf_json_parse(text, len, &root), 0);
	free(text);
	ck_assert_str_eq(pf_json_str(root, "displayTimeUnit", ""), "ms");
	*events = pf_json_get(root, "traceEvents");
	ck_assert_ptr_nonnull(*events);
	ck_assert_int_eq((*events)->type, PF_JSON_ARR);
	ck_assert_ptr_nonnull(pf_json_get(root, "otherData"));
	for (int i = 0; i < 4096; i++) {
		last_ts[i] = -1;
		last_end[i] = -1;
	}
	for (const struct pf_json *e = (*events)->child; e; e = e->next) {
		const char *ph = pf_json_str(e, "ph", "");
		int tid = (int)pf_json_num(e, "tid", -1);
		double ts = pf_json_num(e, "ts", -1);

		ck_assert(*ph);
		if (strcmp(ph, "X") != 0 && strcmp(ph, "i") != 0)
			continue;
		ck_assert_int_ge(tid, 0);
		ck_assert_int_lt(tid, 4096);
		ck_assert(ts >= 0);
		ck_assert_msg(ts >= last_ts[tid], "tid %d: ts %.3f after %.3f",
			      tid, ts, last_ts[tid]);
		last_ts[tid] = ts;
		if (strcmp(ph, "X") == 0) {
			double dur = pf_json_num(e, "dur", -1);

			ck_assert(dur >= 0);
			/* starts after the last one ended: no overlap */
			ck_assert_msg(ts >= last_end[tid] - 0.0005,
				      "tid %d: X at %.3f overlaps one ending "
				      "%.3f", tid, ts, last_end[tid]);
			last_end[tid] = ts + dur;
		}
	}
	return root;
}

static int count(const struct pf_json *events, const char *ph,
		 const char *name)
{
	int n = 0;

	for (const struct pf_json *e = events->child; e; e = e->next)
		if (strcmp(pf_json_str(e, "ph", ""), ph) == 0 &&
		    (!name || strcmp(pf_json_str(e, "name", ""), name) == 0))
			n++;
	return n;
}

static const struct pf_json *find(const struct pf_json *events,
				  const char *ph, const char *name)
{
	for (const struct pf_json *e = events->child; e; e = e->next)
		if (strcmp(pf_json_str(e, "ph", ""), ph) == 0 &&
		    strcmp(pf_json_str(e, "name", ""), name) == 0)
			return e;
	return NULL;
}

/* The tid of the track named @name, or -1. */
static int track(const struct pf_json *events, const char *name)
{
	for (const struct pf_json *e = events->child; e; e = e->next) {
		const struct pf_json *args = pf_json_get(e, "args");

		if (strcmp(pf_json_str(e, "name", ""), "thread_name") == 0 &&
		    strcmp(pf_json_str(args, "name", ""), name) == 0)
			return (int)pf_json_num(e, "tid", -1);
	}
	return -1;
}

static double arg(const struct pf_json *e, const char *key)
{
	return pf_json_num(pf_json_get(e, "args"), key, -1);
}

static double other(const struct pf_json *root, const char *key)
{
	return pf_json_num(pf_json_get(root, "otherData"), key, -1);
}

static void read_ev(unsigned stream, uint64_t off, uint64_t size,
		    uint64_t t0, uint64_t t1, bool waited)
{
	struct pf_trace_read r = {
		.tag = 7,
		.stream = stream,
		.pattern = PF_PAT_SEQUENTIAL,
		.off = off,
		.size = size,
		.t0 = t0,
		.t1 = t1,
		.waited = waited,
		.wait_off = off,
	};

	pf_trace_read(&r);
}

START_TEST(test_events_to_json)
{
	struct pf_json *root;
	const struct pf_json *ev;
	const struct pf_json *e;
	struct pf_trace_read r = {
		.tag = 7, .stream = 3, .pattern = PF_PAT_SEQUENTIAL,
		.off = MiB, .size = MiB, .t0 = T0 + 2 * MS, .t1 = T0 + 5 * MS,
		.waited = true, .missed = true, .wait_off = MiB + 65536,
	};
	struct pf_trace_fetch ra = {
		.tag = 7, .stream = 3, .prefetch = true, .off = 2 * MiB,
		.len = MiB, .res = (int64_t)MiB, .t0 = T0 + 2 * MS,
		.t1 = T0 + 4 * MS,
	};
	struct pf_trace_fetch bad = {
		.tag = 7, .stream = 3, .off = 3 * MiB, .len = MiB,
		.res = -EIO, .t0 = T0 + 3 * MS, .t1 = T0 + 6 * MS,
	};
	struct pf_trace_plan pl = {
		.tag = 7, .stream = 3, .pattern = PF_PAT_SEQUENTIAL,
		.t = T0 + 2500 * US, .next_off = MiB, .batch = 4 * MiB,
		.window = 4 * MiB, .depth = 2, .ahead = 6 * MiB,
		.issued = 2 * MiB,
	};

	start(30, 0);
	pf_trace_file(7, "a.bin");
	read_ev(3, 0, MiB, T0 + 1 * MS, T0 + 1 * MS + 10 * US, false);
	pf_trace_read(&r);
	pf_trace_fetch(&ra);
	pf_trace_fetch(&bad);
	pf_trace_plan(&pl);
	pf_trace_push(7, 2 * MiB + 4096, MiB - 4096, T0 + 4500 * US,
		      T0 + 4600 * US, 0);
	pf_trace_counters(T0 + 2 * MS, 1, 0, 2 * MiB);
	/* prefetch=off: no stream, a track per file */
	read_ev(0, 0, 4096, T0 + 7 * MS, T0 + 8 * MS, true);
	ra.stream = 0;
	ra.prefetch = false;
	ra.t0 = T0 + 7 * MS;
	ra.t1 = T0 + 8 * MS;
	pf_trace_fetch(&ra);
	pf_trace_stop();
	ck_assert(!pf_trace_on());

	root = load(&ev);
	e = find(ev, "X", "hit");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(e, "cat", ""), "read");
	ck_assert(pf_json_num(e, "ts", 0) == 1000.0);
	ck_assert(pf_json_num(e, "dur", 0) == 10.0);
	ck_assert(arg(e, "offset") == 0 && arg(e, "size") == MiB);
	ck_assert_int_eq((int)pf_json_num(e, "tid", 0),
			 track(ev, "stream 3 a.bin (sequential)"));

	e = find(ev, "X", "wait");
	ck_assert_ptr_nonnull(e);
	ck_assert(pf_json_num(e, "ts", 0) == 2000.0);
	ck_assert(pf_json_num(e, "dur", 0) == 3000.0);
	ck_assert(arg(e, "block") == MiB + 65536);
	ck_assert(arg(e, "demand_fetch") == 1);

	e = find(ev, "X", "read-ahead");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(e, "cat", ""), "fetch");
	ck_assert(pf_json_num(e, "dur", 0) == 2000.0);
	ck_assert(arg(e, "offset") == 2 * MiB && arg(e, "bytes") == MiB);
	ck_assert_int_eq((int)pf_json_num(e, "tid", 0),
			 track(ev, "fetches stream 3 a.bin"));
	/* overlaps the read-ahead: a second lane of the stream's fetches */
	e = find(ev, "X", "demand");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(pf_json_get(e, "args"), "error", ""),
			 strerror(EIO));
	ck_assert_int_eq((int)pf_json_num(e, "tid", 0),
			 track(ev, "fetches stream 3 a.bin #2"));

	e = find(ev, "i", "refill");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(e, "s", ""), "t");
	ck_assert(pf_json_num(e, "ts", 0) == 2500.0);
	ck_assert_str_eq(pf_json_str(pf_json_get(e, "args"), "pattern", ""),
			 "sequential");
	ck_assert(arg(e, "batch") == 4 * MiB && arg(e, "window") == 4 * MiB);
	ck_assert(arg(e, "windows") == 2 && arg(e, "windows_ahead") == 1.5);
	ck_assert(arg(e, "issued") == 2 * MiB);

	e = find(ev, "X", "push");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(pf_json_get(e, "args"), "file", ""),
			 "a.bin");
	ck_assert(arg(e, "bytes") == MiB - 4096);
	ck_assert_int_eq((int)pf_json_num(e, "tid", 0), track(ev, "pusher"));

	e = find(ev, "C", "fetches");
	ck_assert_ptr_nonnull(e);
	ck_assert(arg(e, "in_flight") == 1 && arg(e, "queued") == 0);
	e = find(ev, "C", "memory");
	ck_assert_ptr_nonnull(e);
	ck_assert(arg(e, "used_MiB") == 2.0);

	ck_assert_int_ge(track(ev, "reads a.bin"), 1);
	ck_assert_int_ge(track(ev, "fetches a.bin"), 1);
	ck_assert_int_eq(count(ev, "X", "demand"), 2);

	ck_assert_int_eq(count(ev, "M", "process_name"), 1);
	ck_assert_ptr_nonnull(find(ev, "i", "trace end"));
	ck_assert(other(root, "events_dropped") == 0);
	ck_assert_str_eq(pf_json_str(pf_json_get(root, "otherData"),
				     "stopped_by", ""), "unmount");
	pf_json_free(root);
}
END_TEST

START_TEST(test_escaping)
{
	/* quote, backslash, control bytes, valid UTF-8, an invalid byte */
	const char *name = "q\"b\\c\nd\x01 \xc3\xa9 \xff.bin";
	/* as a JSON reader decodes it: the stray 0xff as U+00FF */
	const char *want = "q\"b\\c\nd\x01 \xc3\xa9 \xc3\xbf.bin";
	struct pf_json *root;
	const struct pf_json *ev;
	const struct pf_json *e;
	char tname[256];

	start(30, 0);
	pf_trace_file(7, name);
	read_ev(1, 0, 4096, T0 + MS, T0 + 2 * MS, false);
	pf_trace_push(7, 0, 4096, T0 + MS, T0 + 2 * MS, 0);
	pf_trace_stop();

	root = load(&ev);
	snprintf(tname, sizeof(tname), "stream 1 %s (sequential)", want);
	ck_assert_int_ge(track(ev, tname), 1);
	e = find(ev, "X", "push");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(pf_json_str(pf_json_get(e, "args"), "file", ""),
			 want);
	pf_json_free(root);
}
END_TEST

START_TEST(test_lanes)
{
	struct pf_json *root;
	const struct pf_json *ev;
	int tids[5];
	char name[64];
	struct pf_trace_plan pl = {
		.tag = 7, .stream = 1, .pattern = PF_PAT_SEQUENTIAL,
		.t = T0 + 1050 * US, .window = MiB,
	};

	start(30, 0);
	pf_trace_file(7, "b.bin");
	/* five READs waiting at once, as the kernel's read-ahead sends */
	for (int i = 0; i < 5; i++)
		read_ev(1, (uint64_t)i * MiB, MiB, T0 + MS + i * 100 * US,
			T0 + 10 * MS, true);
	pf_trace_plan(&pl);
	/* after all of them: back on the first lane */
	read_ev(1, 5 * MiB, MiB, T0 + 11 * MS, T0 + 12 * MS, true);
	pf_trace_stop();

	root = load(&ev);
	ck_assert_int_eq(count(ev, "X", "wait"), 6);
	tids[0] = track(ev, "stream 1 b.bin (sequential)");
	ck_assert_int_ge(tids[0], 1);
	for (int i = 1; i < 5; i++) {
		snprintf(name, sizeof(name), "stream 1 b.bin (sequential) #%d",
			 i + 1);
		tids[i] = track(ev, name);
		ck_assert_int_ge(tids[i], 1);
		for (int j = 0; j < i; j++)
			ck_assert_int_ne(tids[i], tids[j]);
	}
	ck_assert_int_eq(track(ev, "stream 1 b.bin (sequential) #6"), -1);
	/* the refill instant nests in the first lane's READ */
	ck_assert_int_eq((int)pf_json_num(find(ev, "i", "refill"), "tid", 0),
			 tids[0]);
	pf_json_free(root);
}
END_TEST

START_TEST(test_hits_gathered)
{
	struct pf_json *root;
	const struct pf_json *ev;
	const struct pf_json *e;
	uint64_t t;

	start(30, 0);
	pf_trace_file(7, "c.bin");
	/* 1000 READs of 128 KiB, one after the other: one event */
	for (int i = 0; i < 1000; i++) {
		t = T0 + MS + (uint64_t)i * 20 * US;
		read_ev(1, (uint64_t)i * 131072, 131072, t, t + 10 * US,
			false);
	}
	/* after a pause (compute): a new one */
	t = T0 + 100 * MS;
	read_ev(1, 1000ull * 131072, 131072, t, t + 10 * US, false);
	/* not where the stream is: another */
	read_ev(1, 0, 4096, t + 20 * US, t + 30 * US, false);
	pf_trace_stop();

	root = load(&ev);
	ck_assert_int_eq(count(ev, "X", "hits"), 1);
	ck_assert_int_eq(count(ev, "X", "hit"), 2);
	e = find(ev, "X", "hits");
	ck_assert(arg(e, "reads") == 1000);
	ck_assert(arg(e, "size") == 1000.0 * 131072);
	ck_assert(pf_json_num(e, "ts", 0) == 1000.0);
	ck_assert(pf_json_num(e, "dur", 0) == 999 * 20 + 10);
	pf_json_free(root);
}
END_TEST

START_TEST(test_hits_sampled)
{
	struct pf_json *root;
	const struct pf_json *ev;
	double shown = 0;
	int events;
	const int n = 150000;

	start(30, 1u << 18);
	/* random READs answered from memory: nothing to gather */
	for (int i = 0; i < n; i++) {
		uint64_t t = T0 + (uint64_t)i * 10 * US;

		read_ev(1, (uint64_t)i * 2 * MiB, 4096, t, t + 5 * US, false);
	}
	pf_trace_stop();

	root = load(&ev);
	events = count(ev, "X", "hit");
	for (const struct pf_json *e = ev->child; e; e = e->next)
		if (strcmp(pf_json_str(e, "name", ""), "hit") == 0)
			shown += arg(e, "reads");
	/* 100000, then one in 16 */
	ck_assert_int_ge(events, 100000 + 50000 / 16 - 1);
	ck_assert_int_le(events, 100000 + 50000 / 16 + 1);
	ck_assert(other(root, "events_dropped") == 0);
	ck_assert(shown + other(root, "hit_reads_unshown") == n);
	pf_json_free(root);
}
END_TEST

START_TEST(test_drops_counted)
{
	struct pf_json *root;
	const struct pf_json *ev;
	const int n = 20000;
	double dropped;

	/* a small ring: what does not fit is dropped, and counted */
	start(30, 1024);
	for (int i = 0; i < n; i++) {
		struct pf_trace_fetch f = {
			.tag = 7, .stream = 1, .prefetch = true,
			.off = (uint64_t)i * 65536, .len = 65536,
			.res = 65536, .t0 = T0 + (uint64_t)i * MS,
			.t1 = T0 + (uint64_t)i * MS + 500 * US,
		};

		pf_trace_fetch(&f);
	}
	pf_trace_stop();

	root = load(&ev);
	dropped = other(root, "events_dropped");
	ck_assert(dropped >= 0);
	ck_assert_int_eq(count(ev, "X", "read-ahead") + (int)dropped, n);
	pf_json_free(root);
}
END_TEST

#define PRODUCERS 4
#define PER_PRODUCER 50000

static void *producer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < PER_PRODUCER; i++) {
		struct pf_trace_fetch f = {
			.tag = 9, .stream = id, .prefetch = true,
			.off = (uint64_t)i * 4096, .len = 4096, .res = 4096,
			.t0 = T0 + (uint64_t)i * 10 * US,
			.t1 = T0 + (uint64_t)i * 10 * US + 5 * US,
		};

		pf_trace_fetch(&f);
	}
	return NULL;
}

START_TEST(test_many_producers)
{
	struct pf_json *root;
	const struct pf_json *ev;
	pthread_t th[PRODUCERS];
	static unsigned char seen[PRODUCERS + 1][PER_PRODUCER];
	int n = 0;

	/* a small ring, wrapped many times while the writer drains it */
	start(30, 4096);
	for (unsigned i = 0; i < PRODUCERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, producer,
						(void *)(uintptr_t)(i + 1)), 0);
	for (unsigned i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	pf_trace_stop();

	root = load(&ev);
	/* every event whole: its stream's offsets, each once */
	for (const struct pf_json *e = ev->child; e; e = e->next) {
		double off;
		double stream;

		if (strcmp(pf_json_str(e, "name", ""), "read-ahead") != 0)
			continue;
		off = arg(e, "offset");
		stream = arg(e, "stream");
		ck_assert(stream >= 1 && stream <= PRODUCERS);
		ck_assert(off >= 0 && off < PER_PRODUCER * 4096.0);
		ck_assert(pf_json_num(e, "ts", 0) ==
			  off / 4096 * 10);
		ck_assert_int_eq(seen[(int)stream][(int)(off / 4096)], 0);
		seen[(int)stream][(int)(off / 4096)] = 1;
		n++;
	}
	ck_assert_int_eq(n + (int)other(root, "events_dropped"),
			 PRODUCERS * PER_PRODUCER);
	pf_json_free(root);
}
END_TEST

START_TEST(test_time_limit)
{
	struct pf_json *root;
	const struct pf_json *ev;
	struct pf_trace_fetch late = {
		.tag = 7, .stream = 1, .prefetch = true, .len = 4096,
		.res = 4096, .t0 = T0 + 3000 * MS, .t1 = T0 + 3001 * MS,
	};
	struct stat st1;
	struct stat st2;
	int i;

	start(2, 0);
	read_ev(1, 0, 4096, T0 + 1000 * MS, T0 + 1001 * MS, true);
	pf_trace_fetch(&late);	/* starts after the limit */
	/* the limit passes: the writer finishes the file by itself */
	atomic_store(&fake_now, T0 + 2500 * MS);
	for (i = 0; i < 500 && pf_trace_running(); i++)
		usleep(10000);
	ck_assert(!pf_trace_running());
	ck_assert(!pf_trace_on());
	read_ev(1, 0, 4096, T0 + 1500 * MS, T0 + 1501 * MS, true); /* no-op */

	root = load(&ev);
	ck_assert_int_eq(count(ev, "X", "wait"), 1);
	ck_assert_int_eq(count(ev, "X", "read-ahead"), 0);
	for (const struct pf_json *e = ev->child; e; e = e->next)
		ck_assert(pf_json_num(e, "ts", 0) <= 2e6);
	ck_assert_str_eq(pf_json_str(pf_json_get(root, "otherData"),
				     "stopped_by", ""), "time limit");
	ck_assert(other(root, "after_limit") == 1);
	ck_assert(other(root, "limit_s") == 2);
	pf_json_free(root);
	/* unmount later changes nothing */
	ck_assert_int_eq(stat(path, &st1), 0);
	pf_trace_stop();
	ck_assert_int_eq(stat(path, &st2), 0);
	ck_assert_int_eq(st1.st_size, st2.st_size);
}
END_TEST

START_TEST(test_never_started)
{
	struct pf_trace_cfg cfg = { .path = path, .seconds = 30 };
	struct pf_json *root;
	const struct pf_json *ev;
	char err[256];

	/* the mount failed after the file was created: still a document */
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), 0);
	pf_trace_stop();
	root = load(&ev);
	ck_assert_int_eq(count(ev, "X", NULL), 0);
	ck_assert_ptr_nonnull(find(ev, "i", "trace end"));
	pf_json_free(root);
	pf_trace_stop();	/* twice: nothing */
}
END_TEST

START_TEST(test_bad_path)
{
	struct pf_trace_cfg cfg = { .seconds = 30 };
	char err[256];

	cfg.path = "/nonexistent-dir-of-check-trace/t.json";
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, cfg.path));
	ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
	ck_assert_ptr_null(strchr(err, '\n'));
	cfg.path = dir;
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), -EISDIR);
	cfg.path = path;
	cfg.ring_events = 1000;	/* not a power of two */
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), -EINVAL);
	cfg.ring_events = 0;
	cfg.seconds = 0;
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), -EINVAL);
	/* none of that left anything behind */
	cfg.seconds = 1;
	ck_assert_int_eq(pf_trace_open(&cfg, err, sizeof(err)), 0);
	pf_trace_stop();
}
END_TEST

static int parse(struct pf_opts *o, char *err, const char *opts)
{
	char *argv[] = { (char *)"prefetchfs", (char *)"-o", (char *)opts,
			 (char *)"/src", (char *)"/mnt", NULL };

	pf_opts_default(o, 8ull << 30);
	return pf_opts_parse(o, 5, argv, err, 256);
}

START_TEST(test_options)
{
	static struct pf_opts o;
	char err[256];

	pf_opts_default(&o, 8ull << 30);
	ck_assert_str_eq(o.trace, "");
	ck_assert(o.trace_seconds == 30);
	ck_assert_int_eq(parse(&o, err, "trace=/tmp/t.json,trace_seconds=5"),
			 0);
	ck_assert_str_eq(o.trace, "/tmp/t.json");
	ck_assert(o.trace_seconds == 5);
	ck_assert_int_eq(parse(&o, err, "trace_seconds=0.5"), 0);
	ck_assert(o.trace_seconds == 0.5);
	ck_assert_int_eq(parse(&o, err, "trace_seconds=0"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "trace_seconds"));
	ck_assert_int_eq(parse(&o, err, "trace_seconds=soon"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "trace_seconds"));
	ck_assert_int_eq(parse(&o, err, "trace="), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "trace"));
	ck_assert_int_eq(parse(&o, err, "trace"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "needs a value"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	pf_log_set_level(PF_LOG_WARN);	/* "trace ... finished" */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_events_to_json);
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_lanes);
	tcase_add_test(tc, test_hits_gathered);
	tcase_add_test(tc, test_hits_sampled);
	tcase_add_test(tc, test_drops_counted);
	tcase_add_test(tc, test_many_producers);
	tcase_add_test(tc, test_time_limit);
	tcase_add_test(tc, test_never_started);
	tcase_add_test(tc, test_bad_path);
	tcase_add_test(tc, test_options);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
