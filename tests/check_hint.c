/*
 * check_hint.c - the control file's parser (lines split across writes,
 * bad lines, bounds, a new plan replacing the old, missing paths) and the
 * plan follower on a fake clock: fetches simulated with a fixed latency,
 * a reader in the plan's order, with small reorderings (parallel
 * workers), off the plan (abandoned), skipping entries (given up), two
 * plans at once, and the Little's-law depth growing with the latency.
 * Expected values are exact where the arithmetic is.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_json.h"
#include "pf_hint.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024)
#define MS 1000000ull
#define US 1000ull

/* ---- a fake namespace: f0..f9999 of fsize(i) bytes, "big", "my file" */

#define BIG_ID 100000
#define SPACE_ID 100001
#define BIG_SIZE (1024 * MiB)

static unsigned resolves;

static uint64_t fsize(unsigned i)
{
	return 100 * KiB + (i % 7) * KiB;
}

static int resolve(void *ctx, const char *path, uint64_t *file,
		   uint64_t *size)
{
	unsigned i;
	int n = 0;

	(void)ctx;
	resolves++;
	if (!strcmp(path, "big")) {
		*file = BIG_ID;
		*size = BIG_SIZE;
		return 0;
	}
	if (!strcmp(path, "my file")) {
		*file = SPACE_ID;
		*size = 10;
		return 0;
	}
	if (!strcmp(path, "empty")) {
		*file = 99999;
		*size = 0;
		return 0;
	}
	if (!strcmp(path, "broken"))
		return -EIO;
	if (sscanf(path, "f%u%n", &i, &n) == 1 && path[n] == '\0' &&
	    i < 10000) {
		*file = i;
		*size = fsize(i);
		return 0;
	}
	return -ENOENT;
}

static struct pf_hint_cfg cfg;
static struct pf_hint_text *txt;
static struct pf_hint_batch bat;

static void setup(void)
{
	pf_hint_cfg_default(&cfg);
	txt = pf_hint_text_new(&cfg);
	ck_assert_ptr_nonnull(txt);
	pf_hint_batch_init(&bat);
	resolves = 0;
}

static void teardown(void)
{
	pf_hint_text_free(txt);
	txt = NULL;
	pf_hint_batch_fini(&bat);
}

static int wr(const char *s, uint64_t off)
{
	return pf_hint_parse(txt, s, strlen(s), off, resolve, NULL, &bat);
}

static void ent_is(size_t i, uint64_t file, uint64_t off, uint64_t len)
{
	ck_assert_uint_lt(i, bat.n);
	ck_assert_uint_eq(bat.e[i].file, file);
	ck_assert_uint_eq(bat.e[i].off, off);
	ck_assert_uint_eq(bat.e[i].len, len);
}

/* ---- the parser -------------------------------------------------------- */

START_TEST(t_lines)
{
	const char *s = "f1\nbig 4096 65536\n\n# a comment\n/f2\nmy file\n"
			"my file 2 100\nf3 100 1000000\n";

	ck_assert_int_eq(wr(s, 0), (int)strlen(s));
	ck_assert(bat.restart);
	ck_assert_uint_eq(bat.n, 6);
	ck_assert_uint_eq(bat.declared, 6);
	ent_is(0, 1, 0, fsize(1));
	ent_is(1, BIG_ID, 4096, 65536);
	ent_is(2, 2, 0, fsize(2));
	ent_is(3, SPACE_ID, 0, 10);
	ent_is(4, SPACE_ID, 2, 8);	/* clipped to the file */
	ent_is(5, 3, 100, fsize(3) - 100);
	ck_assert_int_eq(bat.rc, (int)strlen(s));
}
END_TEST

/* Lines split across writes anywhere give the same entries. */
START_TEST(t_split)
{
	const char *s = "f10\nbig 0 4096\nf11 5 6\nbig 8192 4096\n";
	size_t len = strlen(s), cut, i;
	struct pf_hint_entry all[4];

	ck_assert_int_eq(wr(s, 0), (int)len);
	ck_assert_uint_eq(bat.n, 4);
	memcpy(all, bat.e, sizeof(all));
	for (cut = 1; cut < len; cut++) {
		size_t got = 0;
		struct pf_hint_entry e[4];

		ck_assert_int_eq(pf_hint_parse(txt, s, cut, 0, resolve, NULL,
					       &bat), (int)cut);
		for (i = 0; i < bat.n; i++)
			e[got++] = bat.e[i];
		ck_assert_int_eq(pf_hint_parse(txt, s + cut, len - cut, cut,
					       resolve, NULL, &bat),
				 (int)(len - cut));
		ck_assert(!bat.restart);
		for (i = 0; i < bat.n; i++)
			e[got++] = bat.e[i];
		ck_assert_uint_eq(got, 4);
		ck_assert(!memcmp(e, all, sizeof(e)));
	}
	/* one byte at a time */
	for (i = 0; i < len; i++) {
		ck_assert_int_eq(pf_hint_parse(txt, s + i, 1, i, resolve, NULL,
					       &bat), 1);
		ck_assert_uint_eq(bat.n, s[i] == '\n' ? 1 : 0);
	}
}
END_TEST

/* A final line without its newline is never applied. */
START_TEST(t_unterminated)
{
	ck_assert_int_eq(wr("f1\nf2", 0), 5);
	ck_assert_uint_eq(bat.n, 1);
	ck_assert_uint_eq(resolves, 1);
}
END_TEST

static void bad(const char *s, size_t n, int err, const char *reason)
{
	teardown();
	setup();
	if (n == 0)
		n = strlen(s);
	ck_assert_int_eq(wr("f1\n", 0), 3);
	ck_assert_int_eq(pf_hint_parse(txt, s, n, 3, resolve, NULL, &bat),
			 err);
	ck_assert_int_eq(bat.rc, err);
	ck_assert_uint_eq(bat.n, 0);
	if (!strstr(bat.why, reason))
		ck_abort_msg("why \"%s\" lacks \"%s\"", bat.why, reason);
	/* the plan is refused until a write at offset 0 */
	ck_assert_int_eq(pf_hint_parse(txt, "f2\n", 3, 3 + n,
				       resolve, NULL, &bat), -EINVAL);
	ck_assert(strstr(bat.why, "offset 0") != NULL);
	ck_assert_int_eq(wr("f2\n", 0), 3);
	ck_assert_uint_eq(bat.n, 1);
}

START_TEST(t_bad)
{
	char *longl = malloc(PF_HINT_LINE_MAX + 10);

	bad("f2\nf3 0 0\n", 0, -EINVAL, "line 3: zero length");
	bad("f2 1 99999999999999999999\n", 0, -EINVAL,
	    "line 2: number out of range");
	bad("f2 4611686018427387903 2\n", 0, -EINVAL,
	    "line 2: offset + length");
	bad("f2\nf3\0\n", 7, -EINVAL, "line 3: NUL byte");
	bad("f2\n/\n", 0, -EINVAL, "line 3: no path");
	bad("f2\nbroken\n", 0, -EIO, "line 3: broken");
	memset(longl, 'x', PF_HINT_LINE_MAX + 9);
	longl[PF_HINT_LINE_MAX + 9] = '\0';
	bad(longl, 0, -EINVAL, "line 2: longer than");
	free(longl);
	/* writes off the end of the text */
	teardown();
	setup();
	ck_assert_int_eq(wr("f1\n", 0), 3);
	ck_assert_int_eq(wr("f2\n", 7), -EINVAL);
	ck_assert(strstr(bat.why, "offset 7") != NULL);
	teardown();
	setup();
	ck_assert_int_eq(wr("f1\n", 5), -EINVAL);	/* no plan started */
}
END_TEST

/* Missing paths and ranges past the end are counted and skipped. */
START_TEST(t_missing)
{
	const char *s = "f1\nnope\nf2 200000 10\nempty\nf99999\nf3\n";

	ck_assert_int_eq(wr(s, 0), (int)strlen(s));
	ck_assert_uint_eq(bat.n, 2);
	ck_assert_uint_eq(bat.declared, 6);
	ck_assert_uint_eq(bat.missing, 2);
	ck_assert_uint_eq(bat.past_eof, 2);
	ent_is(0, 1, 0, fsize(1));
	ent_is(1, 3, 0, fsize(3));
}
END_TEST

START_TEST(t_bounds)
{
	struct pf_hint_cfg c;
	struct pf_hint_text *t;

	pf_hint_cfg_default(&c);
	ck_assert_uint_eq(c.max_entries, PF_HINT_MAX_ENTRIES);
	ck_assert_uint_eq(c.max_text, PF_HINT_MAX_TEXT);
	c.max_entries = 3;
	c.max_text = 64;
	t = pf_hint_text_new(&c);
	ck_assert_int_eq(pf_hint_parse(t, "f1\nf2\nnope\nf3\n", 14, 0,
				       resolve, NULL, &bat), 14);
	ck_assert_uint_eq(bat.n, 3);
	ck_assert_int_eq(pf_hint_parse(t, "f4\n", 3, 14, resolve, NULL, &bat),
			 -ENOSPC);
	ck_assert(strstr(bat.why, "line 5: more than 3 entries") != NULL);
	/* text */
	ck_assert_int_eq(pf_hint_parse(t, "f1\n", 3, 0, resolve, NULL, &bat),
			 3);
	ck_assert_int_eq(pf_hint_parse(t, "#234567890123456789012345678901"
				       "234567890123456789012345678901\n",
				       62, 3, resolve, NULL, &bat), -ENOSPC);
	ck_assert(strstr(bat.why, "more than 64 bytes") != NULL);
	pf_hint_text_free(t);
}
END_TEST

/* ---- the follower: a simulation ---------------------------------------- */

#define MAXE 4096
#define MAXFL 8192

struct sim {
	struct pf_hintset *s;
	uint64_t now;
	uint64_t lat;
	struct pf_hint_range fl[MAXFL];
	uint64_t due[MAXFL];
	unsigned nfl;
	uint64_t ready[2][MAXE];	/* bytes of each entry fetched */
	struct pf_hint *plan[2];
	unsigned stalls;		/* READs of entries not ready */
	unsigned handed, released;
	uint64_t released_bytes;
	uint64_t max_ahead, max_inflight;
};

static struct sim *sim;

/* t_records: a bit per byte of the big file's records, set when fetched */
#define REC_N 400
#define REC_LEN (110 * KiB)
#define REC_PAGE 4096ull
static uint8_t *rec_have;
static uint64_t rec_twice;	/* bytes handed out more than once */
static void rec_fetched(uint64_t off, uint64_t len, bool ahead);

static void sim_new(void)
{
	sim = calloc(1, sizeof(*sim));
	ck_assert_ptr_nonnull(sim);
	sim->s = pf_hintset_new(&cfg);
	ck_assert_ptr_nonnull(sim->s);
	sim->now = 1000 * MS;
	sim->lat = 10 * MS;
}

static void sim_free(void)
{
	if (!sim)
		return;
	pf_hintset_free(sim->s);
	free(sim);
	sim = NULL;
}

static int slot_of(uint32_t id)
{
	int k;

	for (k = 0; k < 2; k++) {
		struct pf_hint_stats st;

		if (!sim->plan[k])
			continue;
		pf_hint_stats(sim->plan[k], &st);
		if (st.id == id)
			return k;
	}
	return -1;
}

static void drain_releases(void)
{
	struct pf_hint_range r[16];
	unsigned k, i;

	do {
		k = pf_hintset_release(sim->s, r, 16);
		for (i = 0; i < k; i++) {
			sim->released++;
			sim->released_bytes += r[i].len;
		}
	} while (k == 16);
}

static void track(void)
{
	unsigned k;

	for (k = 0; k < 2; k++) {
		struct pf_hint_stats st;

		if (!sim->plan[k])
			continue;
		pf_hint_stats(sim->plan[k], &st);
		if (st.ahead_bytes > sim->max_ahead)
			sim->max_ahead = st.ahead_bytes;
		if (st.inflight > sim->max_inflight)
			sim->max_inflight = st.inflight;
	}
}

/* Completes what is due, then starts what the planner asks for. */
static void pump(void)
{
	struct pf_hint_range r[64];
	unsigned i, k;

	for (i = 0; i < sim->nfl;) {
		if (sim->due[i] > sim->now) {
			i++;
			continue;
		}
		k = (unsigned)slot_of(sim->fl[i].plan);
		pf_hintset_done(sim->s, &sim->fl[i], sim->now, 0);
		if ((int)k >= 0 && sim->fl[i].entry < MAXE)
			sim->ready[k][sim->fl[i].entry] += sim->fl[i].len;
		if (rec_have && sim->fl[i].file == BIG_ID)
			rec_fetched(sim->fl[i].off, sim->fl[i].len, true);
		sim->fl[i] = sim->fl[sim->nfl - 1];
		sim->due[i] = sim->due[sim->nfl - 1];
		sim->nfl--;
	}
	do {
		k = pf_hintset_next(sim->s, sim->now, r, 64);
		for (i = 0; i < k; i++) {
			ck_assert_uint_lt(sim->nfl, MAXFL);
			ck_assert_uint_eq(r[i].issued_ns, sim->now);
			sim->fl[sim->nfl] = r[i];
			sim->due[sim->nfl] = sim->now + sim->lat;
			sim->nfl++;
			sim->handed++;
		}
	} while (k == 64);
	track();
	drain_releases();
}

/* The clock moves on @ns, completing what falls due on the way, each
 * at the nanosecond it is due. */
static void advance(uint64_t ns)
{
	uint64_t end = sim->now + ns;

	while (sim->now < end) {
		uint64_t next = end;
		unsigned i;

		for (i = 0; i < sim->nfl; i++)
			if (sim->due[i] > sim->now && sim->due[i] < next)
				next = sim->due[i];
		sim->now = next;
		pump();
	}
}

/* Plan slot @k declares @text. */
static void declare(int k, const char *text, uint64_t off)
{
	size_t len = strlen(text);

	if (!sim->plan[k]) {
		sim->plan[k] = pf_hintset_open(sim->s);
		ck_assert_ptr_nonnull(sim->plan[k]);
	}
	ck_assert_int_eq(pf_hint_parse(txt, text, len, off, resolve, NULL,
				       &bat), (int)len);
	ck_assert_int_eq(pf_hint_apply(sim->plan[k], &bat, sim->now),
			 (int)len);
	pump();
}

/* A reader reads [off, off + len) of @file, which is entry @e of plan
 * slot @k (-1: in no plan); it takes 20 us. */
static void rd(int k, unsigned e, uint64_t file, uint64_t off, uint64_t len)
{
	pump();
	if (k >= 0 && sim->ready[k][e] == 0)
		sim->stalls++;
	pf_hintset_read(sim->s, file, off, len, sim->now);
	advance(20 * US);
}

/* Whole file f<i>, as entry @e of slot @k, in 128 KiB READs. */
static void rd_file(int k, unsigned e, unsigned i)
{
	uint64_t off;

	for (off = 0; off < fsize(i); off += 128 * KiB) {
		uint64_t n = fsize(i) - off < 128 * KiB ? fsize(i) - off
							  : 128 * KiB;

		rd(k, e, i, off, n);
	}
}

static char *plan_text(unsigned first, unsigned n, const unsigned *perm)
{
	char *s = malloc((size_t)n * 16 + 1);
	size_t len = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		len += (size_t)sprintf(s + len, "f%u\n",
				       first + (perm ? perm[i] : i));
	return s;
}

static struct pf_hint_stats stats(int k)
{
	struct pf_hint_stats st;

	pf_hint_stats(sim->plan[k], &st);
	return st;
}

static void fsetup(void)
{
	setup();
	sim = NULL;
	sim_new();
}

static void fteardown(void)
{
	sim_free();
	teardown();
}

/*
 * 1000 files read in the declared order, batches of 32 then 40 ms of
 * compute: everything read was fetched ahead, nothing is wasted, every
 * entry read is handed back, the plan finishes.
 */
START_TEST(t_in_order)
{
	char *s = plan_text(0, 1000, NULL);
	struct pf_hint_stats st;
	unsigned i;

	declare(0, s, 0);
	free(s);
	st = stats(0);
	ck_assert_uint_eq(st.entries, 1000);
	ck_assert_uint_eq(st.state, PF_HINT_FOLLOWING);
	/* before any READ: the floor, 4 MiB of ~103 KiB files */
	ck_assert_uint_eq(sim->nfl, 40);
	ck_assert_uint_eq(sim->fl[0].file, 0);
	ck_assert_uint_eq(sim->fl[39].file, 39);
	advance(100 * MS);
	for (i = 0; i < 1000; i++) {
		rd_file(0, i, i);
		if (i % 32 == 31)
			advance(40 * MS);
	}
	st = stats(0);
	ck_assert_str_eq(pf_hint_state_name(st.state), "finished");
	ck_assert(strstr(st.why, "all 1000 entries") != NULL);
	ck_assert_uint_eq(st.read_planned, 1000);
	ck_assert_uint_eq(st.read_unplanned, 0);
	ck_assert_uint_eq(st.done, 1000);
	ck_assert_uint_eq(st.given_up, 0);
	ck_assert_uint_eq(st.fetched, 1000);
	ck_assert_uint_eq(st.wasted_bytes, 0);
	ck_assert_uint_eq(st.ahead_bytes, 0);
	ck_assert_uint_eq(sim->stalls, 0);
	ck_assert_uint_eq(sim->released, 1000);
	ck_assert_uint_eq(st.batch_entries, 32);
	ck_assert_uint_eq(st.latency_ns, 10 * MS);	/* no jitter */
	ck_assert_uint_le(sim->max_inflight, cfg.max_inflight);
	ck_assert_uint_le(sim->max_ahead, cfg.budget);
	/* two batches of ~103 KiB files at least */
	ck_assert_uint_ge(st.target_entries, 64);
}
END_TEST

/* Four workers, each reading every fourth file of a batch of 32, in
 * shuffled order within the batch: all planned, nothing wasted. */
START_TEST(t_reorder)
{
	char *s = plan_text(0, 512, NULL);
	struct pf_hint_stats st;
	unsigned b, i, perm[32];

	declare(0, s, 0);
	free(s);
	advance(50 * MS);
	for (b = 0; b < 16; b++) {
		for (i = 0; i < 32; i++)
			perm[i] = (i % 4) * 8 + i / 4;
		for (i = 31; i > 0; i--) {
			unsigned j = (i * 7 + b) % (i + 1), t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
		for (i = 0; i < 32; i++)
			rd_file(0, b * 32 + perm[i], b * 32 + perm[i]);
		advance(30 * MS);
	}
	st = stats(0);
	ck_assert_uint_eq(st.state, PF_HINT_FINISHED);
	ck_assert_uint_eq(st.read_planned, 512);
	ck_assert_uint_eq(st.read_unplanned, 0);
	ck_assert_uint_eq(st.done, 512);
	ck_assert_uint_eq(st.wasted_bytes, 0);
	ck_assert_uint_eq(sim->released, 512);
}
END_TEST

/*
 * The reader follows another order: after cfg.judge READs of which fewer
 * than half matched, the plan is abandoned, fetches nothing more and
 * hands back what it held, all of it counted as wasted.
 */
START_TEST(t_abandon)
{
	char *s;
	struct pf_hint_stats st;
	unsigned i, handed;

	cfg.reorder = 64;
	sim_free();
	sim_new();
	s = plan_text(0, 2000, NULL);
	declare(0, s, 0);
	free(s);
	advance(50 * MS);
	for (i = 0; i < 10; i++)	/* a good start */
		rd(0, i, i, 0, 4096);
	for (i = 0; i < 200; i++) {
		unsigned f = 1000 + (i * 37) % 997;

		rd(0, f, f, 0, 4096);
		if (stats(0).state != PF_HINT_FOLLOWING)
			break;
	}
	st = stats(0);
	ck_assert_str_eq(pf_hint_state_name(st.state), "abandoned");
	ck_assert(strstr(st.why, "reads stopped matching") != NULL);
	/* judged from the 64th READ on: 10 hits, 54 misses */
	ck_assert_uint_eq(i, 53);
	ck_assert(strstr(st.why, "10 of the last 64") != NULL);
	ck_assert_uint_eq(st.read_unplanned, 54);
	ck_assert_uint_eq(st.ahead_bytes, 0);
	ck_assert_uint_eq(st.ahead_entries, 0);
	ck_assert_uint_eq(st.wasted_bytes + 10 * 4096, st.fetched_bytes);
	ck_assert_uint_ge(sim->released, st.fetched);
	handed = sim->handed;
	advance(100 * MS);
	rd(0, 11, 11, 0, 4096);
	ck_assert_uint_eq(sim->handed, handed);
	/* an abandoned plan judges nothing more */
	ck_assert_uint_eq(stats(0).read_unplanned, 54);
}
END_TEST

/* The reader skips entries: they are given up once the reads are
 * cfg.reorder entries past them, their bytes wasted and handed back. */
START_TEST(t_give_up)
{
	char *s;
	struct pf_hint_stats st;
	unsigned i;

	cfg.reorder = 16;
	sim_free();
	sim_new();
	s = plan_text(0, 100, NULL);
	declare(0, s, 0);
	free(s);
	advance(50 * MS);
	for (i = 0; i < 100; i++) {
		if (i == 5 || i == 6)
			continue;
		rd_file(0, i, i);
	}
	st = stats(0);
	ck_assert_uint_eq(st.state, PF_HINT_FINISHED);
	ck_assert_uint_eq(st.done, 98);
	ck_assert_uint_eq(st.given_up, 2);
	ck_assert_uint_eq(st.wasted_bytes, fsize(5) + fsize(6));
	ck_assert_uint_eq(sim->released, 100);
}
END_TEST

/*
 * Two ranks, each with its plan over the records of one big file (rank 0
 * the even records, rank 1 the odd ones), reading at once: independent,
 * each counts only its own, neither is abandoned.  Closing one hands back
 * what it holds; the other goes on.
 */
START_TEST(t_two_plans)
{
	char *s0 = malloc(300 * 40), *s1 = malloc(300 * 40);
	size_t l0 = 0, l1 = 0;
	struct pf_hint_stats a, b;
	struct pf_hint_text *t1 = pf_hint_text_new(&cfg);
	unsigned i;
	const uint64_t rec = 64 * KiB;

	cfg.reorder = 32;
	sim_free();
	sim_new();
	for (i = 0; i < 300; i++) {
		uint64_t r0 = 2 * ((i * 7) % 300), r1 = r0 + 1;

		l0 += (size_t)sprintf(s0 + l0, "big %llu %llu\n",
				      (unsigned long long)(r0 * rec),
				      (unsigned long long)rec);
		l1 += (size_t)sprintf(s1 + l1, "big %llu %llu\n",
				      (unsigned long long)(r1 * rec),
				      (unsigned long long)rec);
	}
	declare(0, s0, 0);
	sim->plan[1] = pf_hintset_open(sim->s);
	ck_assert_int_eq(pf_hint_parse(t1, s1, l1, 0, resolve, NULL, &bat),
			 (int)l1);
	ck_assert_int_eq(pf_hint_apply(sim->plan[1], &bat, sim->now),
			 (int)l1);
	ck_assert_uint_eq(pf_hintset_count(sim->s), 2);
	advance(50 * MS);
	for (i = 0; i < 200; i++) {
		uint64_t r0 = 2 * ((i * 7) % 300);

		rd(0, i, BIG_ID, r0 * rec, rec);
		rd(1, i, BIG_ID, (r0 + 1) * rec, rec);
		if (i % 16 == 15)
			advance(20 * MS);
	}
	a = stats(0);
	b = stats(1);
	ck_assert_uint_eq(a.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(b.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(a.read_planned, 200);
	ck_assert_uint_eq(b.read_planned, 200);
	ck_assert_uint_eq(a.read_unplanned + b.read_unplanned, 0);
	ck_assert_uint_eq(a.done + b.done, 400);
	ck_assert_uint_eq(a.wasted_bytes + b.wasted_bytes, 0);
	ck_assert_uint_eq(sim->stalls, 0);
	ck_assert_uint_ne(a.id, b.id);
	/* a READ in neither plan's window (rank 1's last record) is out of
	 * both: both hold entries of the file */
	rd(-1, 0, BIG_ID, 587 * rec, rec);
	ck_assert_uint_eq(stats(0).read_unplanned, 1);
	ck_assert_uint_eq(stats(1).read_unplanned, 1);
	/* a READ of another file is nobody's business */
	rd(-1, 0, 4, 0, 4096);
	ck_assert_uint_eq(stats(0).read_unplanned, 1);
	/* rank 1 closes: what it fetched ahead comes back */
	sim->released = 0;
	sim->released_bytes = 0;
	pf_hintset_close(sim->s, sim->plan[1]);
	sim->plan[1] = NULL;
	drain_releases();
	ck_assert_uint_eq(sim->released_bytes, b.ahead_bytes);
	ck_assert_uint_eq(pf_hintset_count(sim->s), 1);
	for (; i < 300; i++)
		rd(0, i, BIG_ID, 2 * ((i * 7) % 300) * rec, rec);
	ck_assert_uint_eq(stats(0).state, PF_HINT_FINISHED);
	/* in-flight fetches of the closed plan are handed back as they end */
	advance(50 * MS);
	ck_assert_uint_eq(sim->nfl, 0);
	pf_hint_text_free(t1);
	free(s0);
	free(s1);
}
END_TEST

/*
 * Little's law: a reader consuming a steady 16 KiB record a millisecond
 * (16 MB/s, every READ a burst of its own) with fetches taking 20 ms, then
 * 200 ms: the depth follows the latency, rate x latency + 2 records.
 */
static struct pf_hint_stats steady(uint64_t lat)
{
	char *s = malloc(4000 * 40);
	size_t len = 0;
	unsigned i;

	sim_free();
	sim_new();
	sim->lat = lat;
	for (i = 0; i < 4000; i++)
		len += (size_t)sprintf(s + len, "big %llu 16384\n",
				       (unsigned long long)i * 16384 * 3);
	declare(0, s, 0);
	free(s);
	advance(lat);
	for (i = 0; i < 3000; i++) {
		/* the first 250 ms learn the rate, with the floors only
		 * (none here); the depth then takes one latency to fill */
		if (i == 500)
			sim->stalls = 0;
		rd(0, i, BIG_ID, (uint64_t)i * 16384 * 3, 16384);
		advance(MS - 20 * US);
	}
	return stats(0);
}

START_TEST(t_little)
{
	struct pf_hint_stats s20, s200;
	const uint64_t rate = 16384 * 1000;	/* bytes per second */

	cfg.min_ahead = 0;
	cfg.min_ahead_entries = 1;
	cfg.gap_ns = 500 * US;
	cfg.budget = 1024 * MiB;
	cfg.max_inflight = 1024;
	s20 = steady(20 * MS);
	ck_assert_uint_eq(sim->stalls, 0);
	s200 = steady(200 * MS);
	ck_assert_uint_eq(sim->stalls, 0);
	ck_assert_uint_eq(s20.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(s200.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(s20.latency_ns, 20 * MS);
	ck_assert_uint_eq(s200.latency_ns, 200 * MS);
	ck_assert_uint_eq(s20.batch_entries, 1);
	ck_assert_uint_eq(s20.rate_bps, rate);
	ck_assert_uint_eq(s20.target_bytes, rate / 50 + 2 * 16384);
	ck_assert_uint_eq(s200.target_bytes, rate / 5 + 2 * 16384);
	ck_assert_uint_eq(s200.target_entries, 202);
	ck_assert_uint_ge(s200.ahead_bytes, s200.target_bytes);
	ck_assert_uint_ge(s200.inflight, 8 * s20.inflight);
	ck_assert_uint_ge(s20.inflight, 19);
}
END_TEST

/* A caps: max_inflight and the budget hold whatever the targets say. */
START_TEST(t_caps)
{
	struct pf_hint_stats st;

	cfg.max_inflight = 5;
	cfg.budget = 3 * MiB;
	cfg.piece = 256 * KiB;
	sim_free();
	sim_new();
	sim->lat = 50 * MS;
	declare(0, "big 0 67108864\n", 0);
	ck_assert_uint_eq(sim->nfl, 5);
	ck_assert_uint_eq(sim->fl[0].len, 256 * KiB);
	ck_assert_uint_eq(sim->fl[4].off, 4 * 256 * KiB);
	advance(500 * MS);
	st = stats(0);
	ck_assert_uint_eq(st.ahead_bytes, 3 * MiB);
	ck_assert_uint_le(sim->max_ahead, 3 * MiB);
	ck_assert_uint_le(sim->max_inflight, 5);
	/* reading it moves the window along the file, in pieces */
	rd(0, 0, BIG_ID, 0, 2 * MiB);
	advance(500 * MS);
	st = stats(0);
	ck_assert_uint_eq(st.ahead_bytes, 3 * MiB);
	ck_assert_uint_eq(st.fetched_bytes, 5 * MiB);
	ck_assert_uint_eq(st.read_planned_bytes, 2 * MiB);
}

/* Bursts inside one big entry (touching no new entry) end at compute
 * gaps as others do: the depth is two of them plus rate x latency, not
 * the whole entry read so far. */
START_TEST(t_big_bursts)
{
	struct pf_hint_stats st;
	uint64_t off = 0;
	unsigned b, r;

	cfg.min_ahead = 0;
	sim_free();
	sim_new();
	declare(0, "big 0 268435456\n", 0);
	for (b = 0; b < 20; b++) {
		for (r = 0; r < 4; r++) {
			rd(0, 0, BIG_ID, off, 128 * KiB);
			off += 128 * KiB;
		}
		advance(50 * MS);
	}
	st = stats(0);
	ck_assert_uint_eq(st.state, PF_HINT_FOLLOWING);
	/* 2 x 512 KiB + ~10 MiB/s x 10 ms */
	ck_assert_uint_ge(st.target_bytes, 1024 * KiB);
	ck_assert_uint_le(st.target_bytes, 1024 * KiB + 256 * KiB);
	ck_assert_uint_le(st.ahead_bytes, st.target_bytes + MiB);
}
END_TEST

/* A new plan on the same handle replaces the old: what the old one
 * fetched comes back, its fetches in flight are handed back as they end,
 * stats start over (gen counts plans). */
START_TEST(t_replace)
{
	char *s = plan_text(0, 100, NULL);
	struct pf_hint_stats st;
	unsigned fetched;

	declare(0, s, 0);
	free(s);
	advance(5 * MS);	/* some in flight, none done */
	st = stats(0);
	fetched = (unsigned)st.fetched;
	ck_assert_uint_gt(fetched, 0);
	ck_assert_uint_eq(st.gen, 1);
	s = plan_text(500, 10, NULL);
	declare(0, s, 0);
	free(s);
	st = stats(0);
	ck_assert_uint_eq(st.gen, 2);
	ck_assert_uint_eq(st.entries, 10);
	ck_assert_uint_eq(st.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(sim->released, fetched);
	advance(20 * MS);
	/* and those in flight as they land */
	ck_assert_uint_eq(sim->released, 2 * fetched);
	ck_assert_uint_eq(stats(0).fetched, 10);
	/* a bad write drops the plan, with the line in the stats */
	ck_assert_int_eq(pf_hint_parse(txt, "f1 0 0\n", 7, 0, resolve, NULL,
				       &bat), -EINVAL);
	ck_assert_int_eq(pf_hint_apply(sim->plan[0], &bat, sim->now),
			 -EINVAL);
	st = stats(0);
	ck_assert_uint_eq(st.state, PF_HINT_ABANDONED);
	ck_assert_str_eq(st.why, "bad input: line 1: zero length");
	ck_assert_uint_eq(st.bad_writes, 1);
	ck_assert_uint_eq(st.entries, 0);
	/* appending to a finished plan follows again */
	declare(0, "f1\n", 0);
	rd_file(0, 0, 1);
	ck_assert_uint_eq(stats(0).state, PF_HINT_FINISHED);
	declare(0, "f2\n", 3);
	ck_assert_uint_eq(stats(0).state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(stats(0).entries, 2);
	ck_assert_uint_eq(stats(0).bad_writes, 1);
}
END_TEST

/* The set's bound on entries: the write that would pass it fails and
 * drops its plan, later writes to it fail, other plans go on; a new plan
 * fits again once the old one is gone. */
START_TEST(t_total)
{
	struct pf_hint_text *t1 = pf_hint_text_new(&cfg);
	struct pf_hint *p1;
	struct pf_hint_stats st;

	cfg.max_total_entries = 5;
	sim_free();
	sim_new();
	declare(0, "f1\nf2\nf3\n", 0);
	p1 = pf_hintset_open(sim->s);
	ck_assert_int_eq(pf_hint_parse(t1, "f4\nf5\n", 6, 0, resolve, NULL,
				       &bat), 6);
	ck_assert_int_eq(pf_hint_apply(p1, &bat, sim->now), 6);
	ck_assert_int_eq(pf_hint_parse(t1, "f6\n", 3, 6, resolve, NULL, &bat),
			 3);
	ck_assert_int_eq(pf_hint_apply(p1, &bat, sim->now), -ENOSPC);
	pf_hint_stats(p1, &st);
	ck_assert_uint_eq(st.state, PF_HINT_ABANDONED);
	ck_assert_str_eq(st.why, "the mount's plans would hold more than 5 "
				 "entries");
	ck_assert_int_eq(pf_hint_parse(t1, "f7\n", 3, 9, resolve, NULL, &bat),
			 3);
	ck_assert_int_eq(pf_hint_apply(p1, &bat, sim->now), -EINVAL);
	pf_hint_stats(p1, &st);
	ck_assert_uint_eq(st.bad_writes, 2);
	ck_assert_str_eq(st.why, "the mount's plans would hold more than 5 "
				 "entries");
	ck_assert_uint_eq(stats(0).state, PF_HINT_FOLLOWING);
	/* a new, smaller plan on the same handle fits */
	ck_assert_int_eq(pf_hint_parse(t1, "f8\n", 3, 0, resolve, NULL, &bat),
			 3);
	ck_assert_int_eq(pf_hint_apply(p1, &bat, sim->now), 3);
	pf_hint_stats(p1, &st);
	ck_assert_uint_eq(st.state, PF_HINT_FOLLOWING);
	ck_assert_uint_eq(st.entries, 1);
	pf_hintset_close(sim->s, sim->plan[0]);
	sim->plan[0] = NULL;
	ck_assert_int_eq(pf_hint_parse(t1, "f9\nf10\nf11\nf12\n", 15, 3,
				       resolve, NULL, &bat), 15);
	ck_assert_int_eq(pf_hint_apply(p1, &bat, sim->now), 15);
	pf_hint_text_free(t1);
}
END_TEST

/* The same file twice (sampling with replacement), records a READ only
 * partly covers, and a READ spanning two records. */
START_TEST(t_overlap)
{
	struct pf_hint_stats st;

	declare(0, "f1\nf2\nf1\nbig 5000 3000\nbig 8000 100\n", 0);
	advance(50 * MS);
	rd_file(0, 0, 1);
	st = stats(0);
	ck_assert_uint_eq(st.done, 1);
	rd_file(0, 1, 2);
	rd_file(0, 2, 1);
	/* one page-aligned READ covers both records */
	rd(0, 3, BIG_ID, 4096, 8192);
	st = stats(0);
	ck_assert_uint_eq(st.done, 5);
	ck_assert_uint_eq(st.read_planned, 2 * 1 + 1 + 1);
	ck_assert_uint_eq(st.state, PF_HINT_FINISHED);
	ck_assert_uint_eq(st.wasted_bytes, 0);
}
END_TEST

/* READs stamped slightly out of order (clock read before the lock) do
 * not end bursts: batches of 32 stay batches of 32. */
START_TEST(t_clock_skew)
{
	char *s = plan_text(0, 2000, NULL);
	struct pf_hint_stats st;
	unsigned i;

	declare(0, s, 0);
	free(s);
	advance(50 * MS);
	for (i = 0; i < 640; i++) {
		uint64_t t = sim->now - (i % 2 ? 30 * US : 0);

		pf_hintset_read(sim->s, i, 0, fsize(i), t);
		advance(20 * US);
		if (i % 32 == 31)
			advance(20 * MS);
	}
	st = stats(0);
	ck_assert_uint_eq(st.read_planned, 640);
	ck_assert_uint_eq(st.batch_entries, 32);
}
END_TEST

/* Appending in many writes: each READ sees every entry applied so far. */
START_TEST(t_appends)
{
	char line[32];
	uint64_t off = 0;
	unsigned i;

	for (i = 0; i < 300; i++) {
		snprintf(line, sizeof(line), "f%u\n", 300 - i);
		declare(0, line, off);
		off += strlen(line);
		if (i % 10 == 9)
			rd(0, i - 9, 300 - (i - 9), 0, 4096);
	}
	ck_assert_uint_eq(stats(0).read_planned, 30);
	ck_assert_uint_eq(stats(0).read_unplanned, 0);
	ck_assert_uint_eq(stats(0).entries, 300);
}
END_TEST

struct sbuf {
	char s[4096];
	size_t n;
};

static void sb_put(void *arg, const char *s, size_t n)
{
	struct sbuf *b = arg;

	ck_assert_uint_lt(b->n + n, sizeof(b->s));
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

/* The stats as JSON parse back to the same figures. */
START_TEST(t_json)
{
	struct pf_hint_stats st;
	struct sbuf sb = { .n = 0 };
	struct pf_json *j;

	declare(0, "f1\nnope\n", 0);
	ck_assert_int_eq(pf_hint_parse(txt, "\"q\" 0 0\n", 8, 8, resolve,
				       NULL, &bat), -EINVAL);
	pf_hint_apply(sim->plan[0], &bat, sim->now);
	pf_hint_stats(sim->plan[0], &st);
	pf_hint_stats_json(&st, sb_put, &sb);
	ck_assert_int_eq(pf_json_parse(sb.s, sb.n, &j), 0);
	ck_assert_str_eq(pf_json_str(j, "state", ""), "abandoned");
	ck_assert_str_eq(pf_json_str(j, "why", ""),
			 "bad input: line 3: zero length");
	ck_assert(pf_json_num(j, "declared", -1) == 2);
	ck_assert(pf_json_num(j, "missing", -1) == 1);
	ck_assert(pf_json_num(j, "entries", -1) == 1);
	ck_assert(pf_json_num(j, "fetched", -1) == 1);
	ck_assert(pf_json_num(j, "wasted_bytes", -1) == (double)fsize(1));
	ck_assert(pf_json_num(j, "bad_writes", -1) == 1);
	ck_assert(pf_json_num(j, "batch_entries", -1) == 0);
	ck_assert(pf_json_num(j, "id", -1) == st.id);
	pf_json_free(j);
}
END_TEST

/*
 * A DataLoader's workers ask for several batches at once: a READ of entry
 * 96 while entry 1 is the oldest unread one.  The plan's depth counts from
 * the furthest entry read, so it aims past it.
 */
START_TEST(t_spread)
{
	char *s = plan_text(0, 512, NULL);
	struct pf_hint_stats st;

	declare(0, s, 0);
	free(s);
	advance(50 * MS);
	rd_file(0, 0, 0);
	st = stats(0);
	ck_assert_uint_lt(st.target_entries, 64);
	rd_file(0, 96, 96);
	st = stats(0);
	ck_assert_uint_eq(st.read_planned, 2);
	ck_assert_uint_ge(st.target_entries, 95 + 2);
	ck_assert_uint_ge(st.target_bytes, 95 * 100 * KiB);
	ck_assert_uint_le(st.target_bytes, cfg.budget);
}
END_TEST

/*
 * Shuffled records of one file, 110 KiB each (not page-aligned), read as
 * the kernel asks for them: each READ widened to whole pages, so half of
 * them begin in the record before theirs and the other half end in the
 * record after.  Every byte a READ asks for was fetched ahead (not only
 * the record's own bytes), a READ's page of a neighbour does not count as
 * reading the neighbour (which would leave it to be fetched on demand),
 * and no more than a page per record is fetched twice.
 */
static void rec_fetched(uint64_t off, uint64_t len, bool ahead)
{
	uint64_t i, end = off + len;

	if (end > (uint64_t)REC_N * REC_LEN + REC_PAGE)
		end = (uint64_t)REC_N * REC_LEN + REC_PAGE;
	for (i = off; i < end; i++) {
		if (ahead && (rec_have[i / 8] & (1u << (i % 8))))
			rec_twice++;
		rec_have[i / 8] |= (uint8_t)(1u << (i % 8));
	}
}

START_TEST(t_records)
{
	uint64_t bytes = (uint64_t)REC_N * REC_LEN + REC_PAGE;
	char *s = malloc(REC_N * 40 + 1);
	unsigned perm[REC_N], i, j, missed = 0;
	uint64_t x = 12345, off, end, b;
	struct pf_hint_stats st;
	size_t len = 0;

	ck_assert_ptr_nonnull(s);
	rec_have = calloc(bytes / 8 + 1, 1);
	ck_assert_ptr_nonnull(rec_have);
	rec_twice = 0;
	for (i = 0; i < REC_N; i++)
		perm[i] = i;
	for (i = REC_N - 1; i > 0; i--) {
		unsigned t;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		j = (unsigned)((x >> 33) % (i + 1));
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < REC_N; i++)
		len += (size_t)sprintf(s + len, "big %llu %llu\n",
				       (unsigned long long)(perm[i] * REC_LEN),
				       (unsigned long long)REC_LEN);
	declare(0, s, 0);
	free(s);
	advance(100 * MS);
	for (i = 0; i < REC_N; i++) {
		pump();
		off = perm[i] * REC_LEN;
		end = off + REC_LEN;
		off -= off % REC_PAGE;
		end = (end + REC_PAGE - 1) / REC_PAGE * REC_PAGE;
		for (b = off; b < end; b++) {
			if (!(rec_have[b / 8] & (1u << (b % 8)))) {
				missed++;
				break;
			}
		}
		/* a miss is fetched on demand */
		rec_fetched(off, end - off, false);
		pf_hintset_read(sim->s, BIG_ID, off, end - off, sim->now);
		advance(20 * US);
		if (i % 32 == 31)
			advance(40 * MS);
	}
	st = stats(0);
	ck_assert_uint_eq(missed, 0);
	ck_assert_uint_eq(st.fetched, REC_N);
	ck_assert_uint_eq(st.done, REC_N);
	ck_assert_uint_eq(st.given_up, 0);
	ck_assert_uint_eq(st.read_planned, REC_N);
	ck_assert_uint_le(rec_twice, REC_N * REC_PAGE);
	free(rec_have);
	rec_have = NULL;
}
END_TEST

/*
 * The budget is memory: 110 KiB records not aligned to 64 KiB blocks span
 * three blocks each; what is fetched ahead fits the budget in blocks, not
 * only in bytes (else the cache evicts read-ahead before it is read).
 */
START_TEST(t_records_budget)
{
	char *s = malloc(200 * 40 + 1);
	uint64_t spans = 0, lo, hi;
	size_t len = 0;
	unsigned i;

	ck_assert_ptr_nonnull(s);
	sim_free();
	cfg.budget = 4 * MiB;
	cfg.block = 64 * KiB;
	cfg.min_ahead = 64 * MiB;	/* the budget is what stops it */
	sim_new();
	for (i = 0; i < 200; i++)
		len += (size_t)sprintf(s + len, "big %llu %llu\n",
				       (unsigned long long)((i * 7 % 200) *
							    REC_LEN),
				       (unsigned long long)REC_LEN);
	declare(0, s, 0);
	free(s);
	ck_assert_uint_gt(sim->nfl, 8);
	for (i = 0; i < sim->nfl; i++) {
		lo = sim->fl[i].off / (64 * KiB) * (64 * KiB);
		hi = (sim->fl[i].off + sim->fl[i].len + 64 * KiB - 1) /
		     (64 * KiB) * (64 * KiB);
		spans += hi - lo;
	}
	ck_assert_uint_le(spans, cfg.budget);
	/* and close to it: the budget is used */
	ck_assert_uint_ge(spans + 3 * 64 * KiB, cfg.budget);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plan");
	TCase *p = tcase_create("parser");
	TCase *f = tcase_create("follower");

	tcase_add_checked_fixture(p, setup, teardown);
	tcase_add_test(p, t_lines);
	tcase_add_test(p, t_split);
	tcase_add_test(p, t_unterminated);
	tcase_add_test(p, t_bad);
	tcase_add_test(p, t_missing);
	tcase_add_test(p, t_bounds);
	suite_add_tcase(s, p);
	tcase_add_checked_fixture(f, fsetup, fteardown);
	tcase_set_timeout(f, 60);
	tcase_add_test(f, t_in_order);
	tcase_add_test(f, t_reorder);
	tcase_add_test(f, t_abandon);
	tcase_add_test(f, t_give_up);
	tcase_add_test(f, t_two_plans);
	tcase_add_test(f, t_little);
	tcase_add_test(f, t_caps);
	tcase_add_test(f, t_big_bursts);
	tcase_add_test(f, t_replace);
	tcase_add_test(f, t_overlap);
	tcase_add_test(f, t_appends);
	tcase_add_test(f, t_clock_skew);
	tcase_add_test(f, t_total);
	tcase_add_test(f, t_json);
	tcase_add_test(f, t_spread);
	tcase_add_test(f, t_records);
	tcase_add_test(f, t_records_budget);
	suite_add_tcase(s, f);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
