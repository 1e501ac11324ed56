/*
 * check_fill.c - the background fill of one file read at random (fill.c)
 * when the file does not fit memory: through a disk tier (the real disk
 * cache decorator, src/diskcache/, over engine_harness.h's backend, in a
 * temporary directory), as far as a tier smaller than the file holds, and
 * the advice line when nothing holds it; and of a shuffled tree larger
 * than the tier: a stable subset of it (fillset.c), the same after a
 * "remount" (a new tier and engine on the same directory), which then
 * reads none of it from the store.
 *
 * The reader: random 4 KiB READs of a 48 MiB file until the fill is done
 * (PF_FILL_RANDOM_READS of them start it), or whole files of the tree in
 * an order that never follows.  The backend's reads complete inside its
 * submit (tb.autocomplete), the decorator's writes on its ring thread; the
 * engine runs on the real clock.
 *
 * And the race under it, on the decorator alone (tcase "join", tb's reads
 * completed by the test): a reader's miss and the fill's read of the
 * same tier block, in either order, are one read of the store.
 */
#include <limits.h>

#include "engine_harness.h"
#include "pf_diskcache.h"
#include "tmptree.h"
#include "../src/engine/ahead/ahead_int.h"

#define BIG (48ull << 20)
#define MEM (8ull << 20)
#define TIER_BLOCK (64u << 10)

static char dir[64];
static struct pf_backend *tier;	/* the decorator over tb, or NULL */
static bool fill_only;		/* engine_over(): no read-ahead across files */
static struct pf_efile *big;

/* The decorator destroys its inner backend: tb's is static. */
static void t_destroy(struct pf_backend *be)
{
	(void)be;
}

/* bytes the store read of each file of tb */
static uint64_t file_bytes[TB_MAXFILES];

/* t_submit, counting each file's bytes */
static int t_submit_counted(struct pf_backend *be, struct pf_bio *bio)
{
	const struct tfile *f = (const struct tfile *)bio->file;

	for (int i = 0; i < bio->iovcnt; i++)
		__atomic_add_fetch(&file_bytes[f->id], bio->iov[i].iov_len,
				   __ATOMIC_RELAXED);
	return t_submit(be, bio);
}

static const struct pf_backend_ops t_ops_inner = {
	.name = "test",
	.getattr = t_getattr,
	.readdir = t_readdir,
	.open = t_open,
	.close = t_close,
	.submit = t_submit_counted,
	.destroy = t_destroy,
};

/* A disk tier of @tier_bytes over tb, in dir (made anew when @fresh), and
 * an engine of MEM with the fill on over it (over tb: @tier_bytes 0). */
static void engine_over(uint64_t tier_bytes, bool fresh)
{
	struct pf_engine_cfg cfg;

	tier = NULL;
	if (tier_bytes) {
		struct pf_diskcache_cfg dc = { .source = "t",
					       .size = tier_bytes,
					       .block_size = TIER_BLOCK,
					       .staging = 2u << 20 };
		char err[256];
		int ret;

		if (fresh) {
			snprintf(dir, sizeof(dir), "/tmp/pftest.fillXXXXXX");
			ck_assert_ptr_nonnull(mkdtemp(dir));
		}
		dc.dir = dir;
		ret = pf_diskcache_backend_new(&tb.be, &dc, &tier, err,
					       sizeof(err));
		ck_assert_msg(ret == 0, "%s", err);
	}
	harness_cfg(&cfg, MEM, 16);
	cfg.fill = 1;
	if (fill_only)
		cfg.next_file = 0;
	ck_assert_int_eq(pf_engine_new(&cfg, tier ? tier : &tb.be, &eng), 0);
	if (!rq)
		rq = calloc(1, sizeof(*rq));
	ck_assert_ptr_nonnull(rq);
}

/* tb with file "big"; a disk tier of @tier_bytes over it (0: none); an
 * engine of MEM with the fill on over that; "big" opened. */
static void up(uint64_t tier_bytes)
{
	struct stat st;

	tb_reset(&t_ops_inner);
	tb_add_file("big", BIG, NULL);
	tb.autocomplete = 1;
	engine_over(tier_bytes, true);
	big = pf_efile_new(eng, "big", 1);
	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(pf_efile_open(big, &st), 0);
}

static void down(void)
{
	pf_engine_quiesce(eng);
	pf_efile_close(big);
	pf_efile_put(big);
	pf_engine_free(eng);
	eng = NULL;
	if (tier) {
		tier->ops->destroy(tier);
		rm_tree(dir);
	}
	free(rq);
	rq = NULL;
}

static uint64_t xs = 88172645463325252ull;

/* A 4 KiB READ of "big" at a random 4 KiB offset, checked. */
static void read_random(void)
{
	uint64_t off;

	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	off = (xs % (BIG / 4096)) * 4096;
	read_wait(big, -1, off, 4096, rq);
	assert_file_bytes(rq, &tb.files[0], off, 4096);
}

/* A bytes field of the stats' "name": N, the first after @after. */
static uint64_t stats_num(const char *after, const char *name)
{
	char *js = pf_engine_stats_json(eng, "test");
	char pat[64];
	const char *p;
	uint64_t v = UINT64_MAX;

	ck_assert_ptr_nonnull(js);
	snprintf(pat, sizeof(pat), "\"%s\": ", name);
	p = strstr(js, after);
	if (p)
		p = strstr(p, pat);
	if (p)
		v = strtoull(p + strlen(pat), NULL, 10);
	free(js);
	return v;
}

/*
 * Random READs, the memory watched, until the fill is done (a bounded
 * while).  Returns the most memory_used seen.
 */
static uint64_t read_until_done(void)
{
	struct pf_engine_totals t;
	uint64_t most = 0;
	int i;

	for (i = 0; i < 3000; i++) {
		read_random();
		pf_engine_totals(eng, &t);
		if (t.memory_used > most)
			most = t.memory_used;
		if (i > PF_FILL_RANDOM_READS &&
		    stats_quiet("\"state\": \"done\"", true))
			break;
		if (i > PF_FILL_RANDOM_READS)
			usleep(2000);
	}
	ck_assert(stats_has("\"state\": \"done\""));
	return most;
}

START_TEST(test_fill_through_disk)
{
	struct pf_engine_totals t;
	uint64_t most;
	unsigned submits;

	up(128ull << 20);
	most = read_until_done();
	pf_engine_totals(eng, &t);
	/* the file went through the tier, memory within its budget and
	 * holding none of it now */
	ck_assert(stats_has("\"through\": true"));
	ck_assert_uint_eq(stats_num("\"fill\"", "bytes_done"), BIG);
	ck_assert_uint_le(most, t.memory_max);
	ck_assert_uint_le(t.memory_ahead, 4 * TIER_BLOCK);
	ck_assert_uint_lt(t.memory_used, t.memory_max / 2);
	ck_assert_uint_eq(stats_num("\"disk_cache\"", "bytes_cached"), BIG);
	/* one fetch per byte: the store read the file once (the fill's
	 * reads join a reader's miss of their block in flight) */
	ck_assert_uint_eq(tb.bytes, BIG);
	/* every byte from the tier: the store reads nothing more */
	submits = tb.submits;
	for (uint64_t off = 0; off < BIG; off += 1u << 20) {
		read_wait(big, -1, off, 1u << 20, rq);
		assert_file_bytes(rq, &tb.files[0], off, 1u << 20);
	}
	ck_assert_uint_eq(tb.submits, submits);
	/* it fitted the tier: no advice */
	ck_assert(stats_has("\"advice\": []"));
	down();
}
END_TEST

START_TEST(test_fill_tier_smaller_than_file)
{
	uint64_t limit;

	/* a tier of 16 MiB holds 14 (capacity() keeps an eighth) */
	up(16ull << 20);
	read_until_done();
	limit = stats_num("\"fill\"", "bytes_done");
	ck_assert_uint_ge(limit, 12ull << 20);
	ck_assert_uint_le(limit, 14ull << 20);
	ck_assert_uint_eq(stats_num("\"fill\"", "bytes_total"), BIG);
	ck_assert(stats_has("\"through\": true"));
	/* what it holds stays: nothing of it was evicted by the fill */
	ck_assert_uint_ge(stats_num("\"disk_cache\"", "bytes_cached"), limit);
	ck_assert_uint_eq(stats_num("\"disk_cache\"", "evictions"), 0);
	/* and the user is told what would hold it all */
	ck_assert(stats_has("\"advice\": [\"random reads of big "
			    "(50331648 bytes) fit neither memory nor the disk "
			    "cache: cache_size=55.9M"));
	down();
}
END_TEST

START_TEST(test_advice_without_tier)
{
	up(0);
	for (unsigned i = 0; i < 4 * PF_FILL_RANDOM_READS; i++)
		read_random();
	ck_assert(stats_wait("\"state\": \"too_big\""));
	/* 48 MiB x 8/7 = 54.9 MiB of a disk cache, 48 / (3/4) = 64 MiB of
	 * memory, each rounded up (and a MiB more) */
	ck_assert(stats_has("\"advice\": [\"random reads of big "
			    "(50331648 bytes) do not fit memory: add "
			    "cache_dir=DIR (55.9M free needed) or "
			    "max_memory=65.0M\"]"));
	/* nothing was filled: the reader's READs only */
	ck_assert_uint_eq(tb.bytes, 4 * PF_FILL_RANDOM_READS * 4096);
	down();
}
END_TEST

/* ---- a shuffled tree larger than the tier ------------------------------ */

#define TDIRS 2
#define TPER 150
#define TFILE (128u << 10)
#define TFILES (TDIRS * TPER)
#define TTIER (16ull << 20)

/* tb with the tree "d<d>/f<nnn>", TFILES files of TFILE bytes (37.5 MiB:
 * more than twice the tier's 16 MiB, which is more than MEM) */
static void tree_up(void)
{
	char path[32];

	tb_reset(&t_ops_inner);
	memset(file_bytes, 0, sizeof(file_bytes));
	for (unsigned d = 0; d < TDIRS; d++)
		for (unsigned f = 0; f < TPER; f++) {
			snprintf(path, sizeof(path), "d%u/f%03u", d, f);
			tb_add_file(path, TFILE, NULL);
		}
	tb.autocomplete = 1;
}

/* Stops the engine and the tier, leaving the tier's directory. */
static void tree_engine_down(void)
{
	pf_engine_quiesce(eng);
	for (unsigned i = 0; i < TB_MAXFILES; i++) {
		if (efiles[i])
			pf_efile_put(efiles[i]);
		efiles[i] = NULL;
	}
	pf_engine_free(eng);
	eng = NULL;
	tier->ops->destroy(tier);
	tier = NULL;
}

/* A reader opens @n files of the tree whole in an order that never follows
 * (97 is prime to TFILES, and 97 mod TPER is no stride the learner takes),
 * from the @k0-th on, each checked byte for byte; returns the most memory
 * the engine used meanwhile. */
static uint64_t tree_read_shuffled(unsigned k0, unsigned n)
{
	struct pf_engine_totals t;
	uint64_t most = 0;

	for (unsigned k = k0; k < k0 + n; k++) {
		unsigned id = (k * 97 + 13) % TFILES;
		struct pf_efile *f = tfile_open(id);

		read_wait(f, -1, 0, TFILE, rq);
		assert_file_bytes(rq, &tb.files[id], 0, TFILE);
		pf_efile_close(f);
		pf_engine_totals(eng, &t);
		if (t.memory_used > most)
			most = t.memory_used;
		/* (the opens' directories are listed meanwhile) */
		usleep(2000);
	}
	return most;
}

/* The fill is done (a bounded while); returns the most memory used. */
static uint64_t tree_fill_done(void)
{
	struct pf_engine_totals t;
	uint64_t most = 0;

	for (int i = 0; i < 3000; i++) {
		pf_engine_totals(eng, &t);
		if (t.memory_used > most)
			most = t.memory_used;
		if (stats_quiet("\"state\": \"done\"", true))
			break;
		usleep(10000);
	}
	ck_assert(stats_has("\"state\": \"done\""));
	return most;
}

START_TEST(test_tree_larger_than_tier)
{
	struct pf_engine_totals t;
	struct names ns = { 0 };
	uint64_t most, budget, part, sub_bytes, cap;
	size_t nsub;
	bool in_sub[TFILES] = { false };

	tree_up();
	engine_over(TTIER, true);
	most = tree_read_shuffled(0, 60);
	ck_assert(stats_wait("\"tier_full\": true"));
	most |= tree_fill_done();
	pf_engine_totals(eng, &t);
	/* a subset of the tree, through the tier, within 3/4 of its
	 * capacity() (its slots less an eighth) */
	ck_assert(stats_has("\"through\": true"));
	ck_assert_uint_eq(stats_num("\"fill\"", "tree_files"), TFILES);
	ck_assert_uint_eq(stats_num("\"fill\"", "bytes_total"),
			  (uint64_t)TFILES * TFILE);
	cap = stats_num("\"disk_cache\"", "capacity");
	budget = (cap - cap / 8) / 4 * 3;
	part = stats_num("\"fill\"", "part_bytes");
	ck_assert_uint_gt(part, 0);
	ck_assert_uint_le(part, budget);
	ck_assert_uint_eq(stats_num("\"fill\"", "bytes_done"), part);
	/* all of it on disk, as the fill's; memory within budget */
	ck_assert_uint_eq(stats_num("\"fill\"", "in_tier"), part);
	ck_assert_uint_ge(stats_num("\"disk_cache\"", "bytes_kept"), part);
	ck_assert_uint_le(stats_num("\"disk_cache\"", "bytes_cached"), cap);
	ck_assert_uint_le(most, t.memory_max);
	ck_assert_uint_lt(t.memory_max, part);
	/* the subset is the one the files' ranks choose from the listing */
	for (unsigned i = 0; i < TFILES; i++)
		ck_assert_int_eq(pf_next_names_add_sized(&ns, tb.files[i].path,
							 TFILE), 0);
	nsub = pf_fillset_choose(&ns, budget, &sub_bytes);
	ck_assert_uint_eq(sub_bytes, part);
	ck_assert_uint_eq(stats_num("\"fill\"", "part_files"), nsub);
	for (size_t i = 0; i < nsub; i++)
		in_sub[tb_find(ns.v[i])->id] = true;
	pf_next_names_clear(&ns);
	free(ns.v);
	free(ns.size);
	/* the user is told what would hold it all */
	ck_assert(stats_has("\"advice\": [\"shuffled reads of / (39321600 "
			    "bytes) fit neither memory nor the disk cache: "
			    "cache_size=43.9M"));

	/* a remount: a new tier and engine on the same directory; the
	 * reader in another order; the fill finds the subset whole on disk
	 * and the store reads none of it */
	tree_engine_down();
	memset(file_bytes, 0, sizeof(file_bytes));
	engine_over(TTIER, false);
	tree_read_shuffled(1000, 60);
	tree_fill_done();
	ck_assert_uint_eq(stats_num("\"fill\"", "part_bytes"), part);
	ck_assert_uint_eq(stats_num("\"fill\"", "on_disk"), nsub);
	ck_assert_uint_eq(stats_num("\"fill\"", "in_tier"), part);
	for (unsigned i = 0; i < TFILES; i++)
		if (in_sub[i])
			ck_assert_msg(file_bytes[i] == 0, "%s: %llu bytes "
				      "from the store", tb.files[i].path,
				      (unsigned long long)file_bytes[i]);
	/* every file of the subset whole from the tier, exact (in name
	 * order: the learner may read ahead the files after them) */
	for (unsigned i = 0; i < TFILES; i++) {
		struct pf_efile *f;

		if (!in_sub[i])
			continue;
		f = tfile_open(i);
		read_wait(f, -1, 0, TFILE, rq);
		assert_file_bytes(rq, &tb.files[i], 0, TFILE);
		pf_efile_close(f);
		ck_assert_uint_eq(file_bytes[i], 0);
	}
	tree_engine_down();
	rm_tree(dir);
	free(rq);
	rq = NULL;
}
END_TEST

/* ---- nodes sharing a tier: the peers' files after this node's ------- */

#define PFILES 48
#define PFILE (64u << 10)

/* the order in which the fill first read each file from the store (0: it
 * did not) */
static unsigned fill_seq;
static unsigned first_fill[TB_MAXFILES];

/* t_submit_counted, noting the fill's first read of each file */
static int t_submit_peers(struct pf_backend *be, struct pf_bio *bio)
{
	const struct tfile *f = (const struct tfile *)bio->file;

	if ((bio->flags & PF_BIO_FILL) && !first_fill[f->id])
		first_fill[f->id] = __atomic_add_fetch(&fill_seq, 1,
						       __ATOMIC_RELAXED);
	return t_submit_counted(be, bio);
}

/* A shared tier's placement as the fill sees it: the odd files are the
 * peers' to fill. */
static bool t_peer_fills(struct pf_backend *be, struct pf_bfile *bf,
			 uint64_t off, uint64_t len)
{
	(void)be;
	(void)off;
	(void)len;
	return ((const struct tfile *)bf)->id % 2;
}

static const struct pf_backend_ops t_ops_peers = {
	.name = "test",
	.getattr = t_getattr,
	.readdir = t_readdir,
	.open = t_open,
	.close = t_close,
	.submit = t_submit_peers,
	.destroy = t_destroy,
	.peer_fills = t_peer_fills,
};

/*
 * A shuffled tree that fits memory, over a backend whose tier places half
 * of the files on other nodes: the fill reads every file of this node's
 * before any of the peers', and every file once.
 */
START_TEST(test_fill_peers_last)
{
	char path[32];
	unsigned last_own = 0;
	unsigned first_peer = UINT_MAX;
	unsigned peers = 0;

	tb_reset(&t_ops_peers);
	memset(file_bytes, 0, sizeof(file_bytes));
	memset(first_fill, 0, sizeof(first_fill));
	fill_seq = 0;
	for (unsigned i = 0; i < PFILES; i++) {
		snprintf(path, sizeof(path), "p/f%03u", i);
		tb_add_file(path, PFILE, NULL);
	}
	tb.autocomplete = 1;
	/* (the fill alone reads ahead: no file is another's ghost, which
	 * the fill would leave to it) */
	fill_only = true;
	engine_over(0, true);
	fill_only = false;
	/* a reader in an order that never follows */
	static const unsigned order[] = { 17, 3, 40, 29, 8, 35, 12, 44, 1,
					  22, 31, 6, 38, 19, 27, 10 };

	for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		unsigned id = order[k];
		struct pf_efile *f = tfile_open(id);

		read_wait(f, -1, 0, PFILE, rq);
		assert_file_bytes(rq, &tb.files[id], 0, PFILE);
		pf_efile_close(f);
		usleep(2000);
	}
	tree_fill_done();
	ck_assert(stats_has("\"through\": false"));
	ck_assert_uint_eq(stats_num("\"fill\"", "peer_files"), PFILES / 2);
	for (unsigned i = 0; i < PFILES; i++) {
		ck_assert_uint_eq(file_bytes[i], PFILE);
		if (!first_fill[i])
			continue;
		if (i % 2) {
			peers++;
			if (first_fill[i] < first_peer)
				first_peer = first_fill[i];
		} else if (first_fill[i] > last_own) {
			last_own = first_fill[i];
		}
	}
	ck_assert_uint_gt(peers, 0);
	ck_assert_uint_gt(last_own, 0);
	ck_assert_msg(last_own < first_peer, "the fill read a peer's file "
		      "(#%u) before its own last (#%u)", first_peer, last_own);
	engine_stop();
	free(rq);
	rq = NULL;
}
END_TEST

/* The names "s/NNN" for i in [0, @n), 1000 bytes each (s/007
 * larger than any budget below, with @huge). */
static void names_of(struct names *ns, unsigned n, bool huge)
{
	char path[32];

	memset(ns, 0, sizeof(*ns));
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "s/%03u", i);
		ck_assert_int_eq(pf_next_names_add_sized(ns, path,
							 huge && i == 7 ?
							 1ull << 40 : 1000),
				 0);
	}
}

static void names_drop(struct names *ns)
{
	pf_next_names_clear(ns);
	free(ns->v);
	free(ns->size);
}

static bool names_holds(const struct names *ns, const char *path)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], path) == 0)
			return true;
	return false;
}

START_TEST(test_fillset_stable)
{
	struct names a, b;
	uint64_t bytes;
	unsigned gone = 0;

	/* 50 of 200 files of 1000 bytes; a file bigger than the budget is
	 * passed over; the kept ones stay in name order */
	names_of(&a, 200, true);
	ck_assert_uint_eq(pf_fillset_choose(&a, 50000, &bytes), 50);
	ck_assert_uint_eq(bytes, 50000);
	ck_assert(!names_holds(&a, "s/007"));
	for (size_t i = 1; i < a.n; i++)
		ck_assert_int_lt(strcmp(a.v[i - 1], a.v[i]), 0);
	/* the same listing, the same subset */
	names_of(&b, 200, true);
	ck_assert_uint_eq(pf_fillset_choose(&b, 50000, &bytes), 50);
	for (size_t i = 0; i < a.n; i++)
		ck_assert_str_eq(a.v[i], b.v[i]);
	names_drop(&b);
	/* a file more in the tree: one file of the subset may leave it,
	 * no more */
	names_of(&b, 201, true);
	ck_assert_uint_eq(pf_fillset_choose(&b, 50000, &bytes), 50);
	for (size_t i = 0; i < a.n; i++)
		gone += !names_holds(&b, a.v[i]);
	ck_assert_uint_le(gone, 1);
	names_drop(&a);
	names_drop(&b);
	/* nothing fits */
	names_of(&a, 3, false);
	ck_assert_uint_eq(pf_fillset_choose(&a, 999, &bytes), 0);
	ck_assert_uint_eq(a.n, 0);
	names_drop(&a);
}
END_TEST

/*
 * A random reader whose READs are the mount's read-ahead (an mmap reader's
 * read-around) gets a note in the stats, without a tier only; READs of
 * 4 KiB, or an unknown read-ahead, get none.
 */
START_TEST(test_note_read_around)
{
	up(0);
	for (unsigned i = 0; i < 40; i++)
		read_random();
	pf_engine_set_read_ahead(eng, 1u << 20);
	for (unsigned i = 0; i < 40; i++)
		read_random();
	ck_assert(stats_has("\"read_ahead\": 1048576"));
	ck_assert(stats_has("\"notes\": []"));
	down();

	up(0);
	pf_engine_set_read_ahead(eng, 4u << 20);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t off;

		xs ^= xs << 13;
		xs ^= xs >> 7;
		xs ^= xs << 17;
		off = (xs % (BIG / 4096 - 256)) * 4096;
		read_wait(big, -1, off, PF_ENGINE_READ_MAX, rq);
		assert_file_bytes(rq, &tb.files[0], off, PF_ENGINE_READ_MAX);
	}
	/* (READs before the tracker saw the pattern are another stream's) */
	ck_assert(stats_has("\"notes\": [\"random READs of big: "));
	ck_assert(stats_has(" are 1024 KiB, the mount's read-ahead: "));
	ck_assert(stats_has("readahead_kb=N sets it"));
	down();

	/* with a tier, the fill decides: no note */
	up(128ull << 20);
	pf_engine_set_read_ahead(eng, 1u << 20);
	for (unsigned i = 0; i < 40; i++)
		read_wait(big, -1, (uint64_t)i * 7 % 40 << 20,
			  PF_ENGINE_READ_MAX, rq);
	ck_assert(stats_has("\"notes\": []"));
	down();
}
END_TEST

/* ---- a reader's miss and the fill's read of one tier block ------------ */

/* A read of the decorator: its bio, its buffer, whether and how it ended. */
struct wbio {
	struct pf_bio bio;
	struct iovec iov;
	pthread_mutex_t lock;
	bool done;
	int64_t res;
	unsigned char buf[TIER_BLOCK];
};

static struct pf_bfile *tf;	/* "big" opened through the tier */

static void wbio_done(struct pf_bio *bio, int64_t res)
{
	struct wbio *w = bio->priv;

	pthread_mutex_lock(&w->lock);
	w->res = res;
	w->done = true;
	pthread_mutex_unlock(&w->lock);
}

/* The tier (staging @staging) over tb, whose reads wait for the test. */
static void tier_up(uint64_t staging)
{
	struct pf_diskcache_cfg dc = { .source = "t", .size = 64ull << 20,
				       .block_size = TIER_BLOCK,
				       .staging = staging };
	char err[256];
	struct stat st;

	tb_reset(&t_ops_inner);
	tb_add_file("big", BIG, NULL);
	snprintf(dir, sizeof(dir), "/tmp/pftest.joinXXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	dc.dir = dir;
	ck_assert_msg(pf_diskcache_backend_new(&tb.be, &dc, &tier, err,
					       sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tier->ops->open(tier, "big", &tf, &st), 0);
}

static void tier_down(void)
{
	tier->ops->close(tier, tf);
	tier->ops->destroy(tier);
	rm_tree(dir);
}

/* Submits a read of [off, off + len) of "big" (@flags: PF_BIO_*). */
static struct wbio *submit(uint64_t off, uint64_t len, unsigned flags)
{
	struct wbio *w = calloc(1, sizeof(*w));

	ck_assert_ptr_nonnull(w);
	ck_assert_uint_le(len, sizeof(w->buf));
	pthread_mutex_init(&w->lock, NULL);
	w->iov = (struct iovec){ w->buf, len };
	w->bio = (struct pf_bio){ .file = tf, .off = off, .iov = &w->iov,
				  .iovcnt = 1, .done = wbio_done, .priv = w,
				  .flags = flags };
	ck_assert_int_eq(pf_backend_submit(tier, &w->bio), 0);
	return w;
}

/* Waits (10 s at most, completing tb's reads as they come) for @w to end:
 * its result; then frees it, the bytes checked when it read some. */
static int64_t finish(struct wbio *w)
{
	int64_t res;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		bool done;

		pthread_mutex_lock(&w->lock);
		done = w->done;
		pthread_mutex_unlock(&w->lock);
		if (done)
			break;
		complete_pending();
		usleep(10000);
	}
	ck_assert_int_lt(tries, 1000);
	res = w->res;
	for (int64_t i = 0; i < res; i++)
		if (w->buf[i] != tfile_byte(&tb.files[0], w->bio.off + i))
			ck_abort_msg("wrong byte at %llu",
				     (unsigned long long)(w->bio.off + i));
	free(w);
	return res;
}

static uint64_t tier_stat(const char *name)
{
	char js[4096];
	char pat[64];
	const char *p;

	tier->ops->stats_json(tier, js, sizeof(js));
	snprintf(pat, sizeof(pat), "\"%s\": ", name);
	p = strstr(js, pat);
	ck_assert_ptr_nonnull(p);
	return strtoull(p + strlen(pat), NULL, 10);
}

/*
 * What tests/mount_bigfill.sh met: a reader's 4 KiB miss reads its whole
 * tier block; the fill, finding the block not on disk yet, read it again,
 * once for each piece the engine cut it in (at the reader's block).  The
 * fill's reads join the reader's: one read of the store, the reader
 * answered at once, the fill once the block is on disk.
 */
START_TEST(test_join_fill_meets_reader)
{
	struct wbio *rd;
	struct wbio *f1;
	struct wbio *f2;

	tier_up(2u << 20);
	rd = submit(TIER_BLOCK + 8192, 4096, 0);
	ck_assert_uint_eq(tb.submits, 1);
	ck_assert_uint_eq(tb.bytes, TIER_BLOCK);
	f1 = submit(TIER_BLOCK, TIER_BLOCK / 2, PF_BIO_FILL | PF_BIO_CACHE);
	f2 = submit(TIER_BLOCK + TIER_BLOCK / 2, TIER_BLOCK / 2,
		    PF_BIO_FILL | PF_BIO_CACHE);
	ck_assert_uint_eq(tb.submits, 1);
	ck_assert_uint_eq(tier_stat("joined"), 2);
	ck_assert_uint_eq(complete_pending(), 1);
	ck_assert_int_eq(finish(rd), 4096);
	ck_assert_int_eq(finish(f1), TIER_BLOCK / 2);
	ck_assert_int_eq(finish(f2), TIER_BLOCK / 2);
	/* the fill's were done once the block was on disk */
	ck_assert_uint_eq(tier_stat("bytes_cached"), TIER_BLOCK);
	ck_assert_uint_eq(tb.submits, 1);
	tier_down();
}
END_TEST

/*
 * The other way: a reader's miss of a block the fill is reading joins it,
 * also while the fill's read waits for staging behind the readers' (then
 * it goes ahead with the readers' reserve: 4 blocks of staging, the fill
 * may take 3).  A failed read fails who joined it.
 */
START_TEST(test_join_reader_meets_fill)
{
	struct wbio *f[4];
	struct wbio *rd;
	struct wbio *bad;

	tier_up(4 * TIER_BLOCK);
	for (unsigned i = 0; i < 4; i++)
		f[i] = submit(i * TIER_BLOCK, TIER_BLOCK,
			      PF_BIO_FILL | PF_BIO_CACHE);
	ck_assert_uint_eq(count_pending(-1, NULL), 3);
	rd = submit(3 * TIER_BLOCK + 100, 4096, 0);
	ck_assert_uint_eq(count_pending(-1, NULL), 4);
	ck_assert_uint_eq(tb.submits, 4);
	complete_until_idle();
	ck_assert_int_eq(finish(rd), 4096);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(finish(f[i]), TIER_BLOCK);
	ck_assert_uint_eq(tb.submits, 4);
	ck_assert_uint_eq(tier_stat("joined"), 1);
	ck_assert_uint_eq(tier_stat("bytes_cached"), 4 * TIER_BLOCK);
	/* a hit now: no read of the store */
	ck_assert_int_eq(finish(submit(2 * TIER_BLOCK + 5, 3000, 0)), 3000);
	ck_assert_uint_eq(tb.submits, 4);

	bad = submit(9 * TIER_BLOCK, TIER_BLOCK, PF_BIO_FILL | PF_BIO_CACHE);
	rd = submit(9 * TIER_BLOCK + 4096, 4096, 0);
	ck_assert_uint_eq(tb.submits, 5);
	tb.fail_next = EIO;
	ck_assert_uint_eq(complete_pending(), 1);
	ck_assert_int_eq(finish(bad), -EIO);
	ck_assert_int_eq(finish(rd), -EIO);
	tier_down();
}
END_TEST

static Suite *fill_suite(void)
{
	Suite *s = suite_create("fill");
	TCase *tc;

	tc = tcase_create("beyond_memory");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fill_through_disk);
	tcase_add_test(tc, test_fill_tier_smaller_than_file);
	tcase_add_test(tc, test_advice_without_tier);
	tcase_add_test(tc, test_note_read_around);
	suite_add_tcase(s, tc);
	tc = tcase_create("join");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_join_fill_meets_reader);
	tcase_add_test(tc, test_join_reader_meets_fill);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree_beyond_tier");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fillset_stable);
	tcase_add_test(tc, test_tree_larger_than_tier);
	tcase_add_test(tc, test_fill_peers_last);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(fill_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
