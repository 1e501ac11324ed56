/*
 * diskcache.c - the store of the disk cache: block slots in one data file,
 * an index in memory, an append-only journal that rebuilds the index at
 * start-up (its records, compaction and replay: diskcache_journal.c; the
 * structures both share: diskcache_store.h), and the admission/eviction
 * policy.
 *
 * DESIGN
 * Layout of the cache directory (0700, every file 0600, all opened through
 * the directory's descriptor without following a symlink: see
 * diskcache_dir.c):
 *   lock     flock()ed exclusively while a daemon uses the directory
 *   key      32 random bytes, the key that seals every block
 *   data     nslots slots of block_size bytes (sparse: a slot takes disk
 *            space once written); slot i is at offset i * block_size.
 *            The default block is small (16K): a file's last block takes
 *            a whole slot, so a small file wastes at most one small slot
 *            (110 KiB in 112 KiB), and blocks of one file written
 *            together land in consecutive slots, which the decorator
 *            reads and writes with one request
 *   journal  fixed 64-byte records, each with its own CRC32C: a header
 *            (block size, slots), then PUT (slot holds block blk of key,
 *            len bytes, sealed with nonce and tag; flags J_KEPT: the
 *            fill's, see the policy; 0 in an older build's records, which
 *            ignores them) and DEL (slot is empty)
 * A block is written to its slot first and journalled after the write
 * completed (the journal's disk space for its record allocated before:
 * on a disk the data fills, no block is written that cannot be
 * journalled); every read from the cache checks the block against the tag
 * journalled with it, a MAC under DIR/key of the block's key, index,
 * length and bytes (diskcache_mac.c).  So a kill -9 (or a power cut) at
 * any moment leaves at worst records whose data is missing or was
 * overwritten by a later write that was not journalled yet: those blocks
 * fail the check, are dropped and read from the store; and a block
 * rewritten by anyone without the key (its record too) fails it the same
 * way.  Replay stops at the first record that is torn or fails its own
 * CRC and truncates the journal there.
 * The block size of a new cache grows with its size (the index has at
 * most so many slots), and the default size is the free disk space, which
 * other files change between two mounts: a cache keeps its block size
 * while a new one would get one at most twice or half as large (with at
 * most the slots the index may have), else it starts empty with one line.
 * Start-up reads the journal once: its length is bounded by compaction
 * (rewritten with one PUT per live slot when it holds more than
 * 2 x nslots records), so start-up time grows with the cache's size in
 * slots, never with the number of files cached.
 *
 * Policy: keep a stable subset, admit only over cold blocks.  Every block
 * access (lookup, hit or miss) ticks a clock; a slot remembers the tick
 * of its last hit or write.  A new block takes a free slot, else the first
 * slot from a clock hand (at most SCAN_MAX looked at) that is cold: not
 * touched in the last COLD_FACTOR (8) x nslots ticks.  If none is cold the
 * new block is not admitted.
 * Two classes of blocks: a reader's miss, and the engine's background
 * fill's (PF_DC_FILL, flagged J_KEPT in the journal; also a reader's
 * block the fill found cached and claimed, pf_dc_keep()).  The fill plans
 * what the cache holds (at most its capacity less a share; of a tree
 * larger than the cache, a stable subset: engine/ahead/fill.c), so:
 *  - a fill's block may take the slot of any reader's block (cold or not)
 *    and of a cold fill's block of an earlier run (another data set's),
 *    never a fill's block of this run: the fill never evicts its own;
 *  - a reader's miss takes a cold reader's block, or a fill's block not
 *    touched in KEEP_FACTOR (32) x nslots ticks (the readers moved on to
 *    other data long ago), so readers of the files outside a subset cycle
 *    through the rest of the slots and never push the subset out.  A data set read in a new random order every
 * epoch touches each cached block once per epoch, two hits at most two
 * epochs apart; as long as that is shorter than the cold window (data up
 * to 4x the cache, with room for reads the memory tier absorbs) the first
 * cache-full of blocks stays and the hit rate is cache/data.  LRU would
 * keep the most recently read blocks and lose each before it is read
 * again.  When the readers move on to other data, the old blocks go cold
 * after 8 cache-fulls of accesses and are replaced.  After a restart the
 * clock starts again at 0 and every block counts as touched then.
 *
 * Threads and locks: dc->lock guards the index (slots, hash, free list,
 * clock, counters) and is never held across I/O.  Journal appends and
 * compaction (pf_dc_commit, pf_dc_drop, pf_dc_maintain) run on one thread
 * only, the decorator's ring thread (or the test's), so the journal's fd
 * and length need no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "pf_diskcache.h"
#include "pf_log.h"
#include "diskcache_int.h"
#include "diskcache_store.h"

#define SCAN_MAX 64
#define COLD_FACTOR 8
#define KEEP_FACTOR 32	/* a fill's block: cold for a reader's miss after */
#define MIN_SLOTS 16
#define MAX_AUTO_SLOTS (1u << 20)
#define INDEX_PER_SLOT 80	/* slot, free list, buckets (at most 2/slot) */
/* ---- index (dc->lock held) --------------------------------------------- */

static uint32_t bucket_of(const struct pf_dc *dc, uint64_t ka, uint64_t kb,
			  uint64_t blk)
{
	return (uint32_t)(mix64(ka ^ mix64(kb + blk)) & (dc->nbuckets - 1));
}

static uint32_t find(const struct pf_dc *dc, uint64_t ka, uint64_t kb,
		     uint64_t blk)
{
	uint32_t i = dc->buckets[bucket_of(dc, ka, kb, blk)];

	while (i != NIL) {
		const struct dc_slot *s = &dc->slots[i];

		if (s->ka == ka && s->kb == kb && s->blk == blk)
			return i;
		i = s->hnext;
	}
	return NIL;
}

static void hash_in(struct pf_dc *dc, uint32_t i)
{
	struct dc_slot *s = &dc->slots[i];
	uint32_t b = bucket_of(dc, s->ka, s->kb, s->blk);

	s->hnext = dc->buckets[b];
	dc->buckets[b] = i;
}

static void hash_out(struct pf_dc *dc, uint32_t i)
{
	struct dc_slot *s = &dc->slots[i];
	uint32_t *pp = &dc->buckets[bucket_of(dc, s->ka, s->kb, s->blk)];

	while (*pp != NIL && *pp != i)
		pp = &dc->slots[*pp].hnext;
	if (*pp == i)
		*pp = s->hnext;
	s->hnext = NIL;
}

/* Valid slot @s's share of the class counters, added or taken out. */
static void count_class(struct pf_dc *dc, const struct dc_slot *s, bool add)
{
	if (s->kept && add)
		dc->kept_bytes += s->len;
	else if (s->kept)
		dc->kept_bytes -= s->len;
	else if (add)
		dc->nplain++;
	else
		dc->nplain--;
}

/* A valid or writing slot's block is the fill's of this run. */
static void make_kept(struct pf_dc *dc, struct dc_slot *s)
{
	if (s->state == S_VALID)
		count_class(dc, s, false);
	s->kept = K_NOW;
	if (s->state == S_VALID)
		count_class(dc, s, true);
}

/* Takes a valid slot out of the index (it stays allocated). */
static void unvalidate(struct pf_dc *dc, uint32_t i)
{
	struct dc_slot *s = &dc->slots[i];

	if (s->state != S_VALID)
		return;
	hash_out(dc, i);
	dc->nvalid--;
	dc->bytes -= s->len;
	count_class(dc, s, false);
	s->kept = K_NO;
	s->state = S_FREE;
}

static void release(struct pf_dc *dc, uint32_t i)
{
	struct dc_slot *s = &dc->slots[i];

	unvalidate(dc, i);
	s->state = S_FREE;
	s->kept = K_NO;
	s->pins = 0;
	if (!dc->no_new)
		dc->freel[dc->nfree++] = i;
}

/* ---- replay (diskcache_journal.c: one thread, no lock) ----------------- */

void pf_dc_index_del(struct pf_dc *dc, uint32_t slot)
{
	unvalidate(dc, slot);
}

void pf_dc_index_put(struct pf_dc *dc, uint32_t slot, uint64_t ka,
		     uint64_t kb, uint64_t blk, uint32_t len,
		     const struct pf_dc_sum *sum, bool kept)
{
	struct dc_slot *s = &dc->slots[slot];
	uint32_t dup;

	unvalidate(dc, slot);
	/* the same block written again elsewhere: the later one holds */
	dup = find(dc, ka, kb, blk);
	if (dup != NIL)
		unvalidate(dc, dup);
	s->ka = ka;
	s->kb = kb;
	s->blk = blk;
	s->len = len;
	s->sum = *sum;
	s->touch = 0;
	s->state = S_VALID;
	s->kept = kept ? K_BEFORE : K_NO;
	hash_in(dc, slot);
	dc->nvalid++;
	dc->bytes += len;
	count_class(dc, s, true);
}

/* ---- open, close ------------------------------------------------------- */

/* Slots for a cache of @size bytes, or, for 0, what leaves 10% free. */
static uint64_t size_default(int dirfd, int datafd)
{
	struct statvfs sv;
	struct stat st;
	uint64_t avail;
	uint64_t total;
	uint64_t ours = 0;

	if (fstatvfs(dirfd, &sv) < 0)
		return 0;
	if (fstat(datafd, &st) == 0)
		ours = (uint64_t)st.st_blocks * 512;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize + ours;
	total = (uint64_t)sv.f_blocks * sv.f_frsize;
	return avail > total / 10 ? avail - total / 10 : 0;
}

/*
 * Opens @dir (checked: see diskcache_dir.c) and the files in it: takes the
 * lock, reads or makes the key (*fresh: a new one), opens data and journal.
 */
static int files_open(struct pf_dc *dc, const char *dir, int dirfd,
		      bool *fresh, char *err, size_t errlen)
{
	char why[256];
	uint64_t nonce;
	int ret;

	if (dirfd > 0) {
		dc->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
		if (dc->dirfd < 0) {
			snprintf(err, errlen, "cache_dir '%s': %s", dir,
				 strerror(errno));
			return -errno;
		}
	} else {
		dc->dirfd = pf_dc_dir_open(dir, err, errlen);
		if (dc->dirfd < 0)
			return dc->dirfd;
	}
	dc->lockfd = pf_dc_dir_lock(dc->dirfd, dir, err, errlen);
	if (dc->lockfd < 0)
		return dc->lockfd;
	ret = pf_dc_dir_key(dc->dirfd, dc->mkey, fresh, why, sizeof(why));
	if (ret < 0)
		goto bad;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
		ret = -errno;
		snprintf(why, sizeof(why), "getrandom: %s", strerror(errno));
		goto bad;
	}
	atomic_init(&dc->nonce, nonce);
	dc->datafd = pf_dc_file_open(dc->dirfd, "data", O_RDWR | O_CREAT, why,
				     sizeof(why));
	if (dc->datafd < 0) {
		ret = dc->datafd;
		goto bad;
	}
	dc->jfd = pf_dc_file_open(dc->dirfd, "journal", O_RDWR | O_CREAT, why,
				  sizeof(why));
	if (dc->jfd < 0) {
		ret = dc->jfd;
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "cache_dir '%s': %s", dir, why);
	return ret;
}

/* The most slots of an index: 2^20, and what fits cfg->index_max. */
static uint64_t slots_max(const struct pf_dc_cfg *cfg)
{
	uint64_t n = MAX_AUTO_SLOTS;

	if (cfg && cfg->index_max && cfg->index_max / INDEX_PER_SLOT < n)
		n = cfg->index_max / INDEX_PER_SLOT;
	return n;
}

/*
 * The block size and number of slots of a cache of cfg->size bytes (0: of
 * the free space) whose journal has blocks of @had bytes (0: none).
 */
static int size_slots(struct pf_dc *dc, const char *dir,
		      const struct pf_dc_cfg *cfg, uint32_t had, char *err,
		      size_t errlen)
{
	uint64_t size = cfg && cfg->size ? cfg->size
					 : size_default(dc->dirfd, dc->datafd);
	uint64_t limit = slots_max(cfg);
	uint64_t n;

	/* blocks large enough for the largest read; a large cache gets
	 * larger blocks: the index stays <= 64 MiB and within the memory it
	 * is given */
	if (!(cfg && cfg->block_size)) {
		uint32_t least;

		while (cfg && dc->bs < cfg->min_block && dc->bs < MAX_BLOCK)
			dc->bs <<= 1;
		least = dc->bs;
		while (dc->bs < MAX_BLOCK && size / dc->bs > limit)
			dc->bs <<= 1;
		/*
		 * The size follows the free space, which other files change
		 * from one mount to the next: a cache keeps its block size
		 * (so its blocks) while it is within a factor 2 of a new
		 * cache's, with at most the slots the index may have.
		 */
		n = had ? size / had : 0;
		if (had < dc->bs && n > limit)
			n = limit;
		if (had >= least && had >= dc->bs / 2 && had <= dc->bs * 2 &&
		    n >= MIN_SLOTS && n < NIL) {
			dc->bs = had;
			dc->nslots = (uint32_t)n;
			return 0;
		}
	}
	if (had && had != dc->bs)
		pf_warn("cache_dir '%s' holds blocks of %u KiB, a cache of "
			"%" PRIu64 " MiB gets %u KiB ones: it starts empty",
			dir, had >> 10, size >> 20, dc->bs >> 10);
	n = size / dc->bs;
	if (n < MIN_SLOTS || n >= NIL) {
		snprintf(err, errlen, "cache_dir '%s': a cache of %" PRIu64
			 " bytes is %s", dir, size,
			 n < MIN_SLOTS ? "too small (the disk is full?)"
				       : "too large");
		return -ENOSPC;
	}
	dc->nslots = (uint32_t)n;
	return 0;
}

/* The index of dc->nslots slots, empty. */
static int index_alloc(struct pf_dc *dc, char *err, size_t errlen)
{
	dc->nbuckets = 1;
	while (dc->nbuckets < dc->nslots)
		dc->nbuckets <<= 1;
	dc->slots = calloc(dc->nslots, sizeof(*dc->slots));
	dc->buckets = malloc(dc->nbuckets * sizeof(*dc->buckets));
	dc->freel = malloc(dc->nslots * sizeof(*dc->freel));
	if (!dc->slots || !dc->buckets || !dc->freel) {
		snprintf(err, errlen, "out of memory for a disk cache index "
			 "of %u slots", dc->nslots);
		return -ENOMEM;
	}
	memset(dc->buckets, 0xff, dc->nbuckets * sizeof(*dc->buckets));
	for (uint32_t i = 0; i < dc->nslots; i++)
		dc->slots[i].hnext = NIL;
	dc->st.index_bytes = (uint64_t)dc->nslots * (sizeof(*dc->slots) +
						     sizeof(*dc->freel)) +
			     (uint64_t)dc->nbuckets * sizeof(*dc->buckets);
	return 0;
}

int pf_dc_open(const char *dir, const struct pf_dc_cfg *cfg,
	       struct pf_dc **out, char *err, size_t errlen)
{
	struct pf_dc *dc;
	bool rewrite = false;
	bool fresh;
	int ret;

	*out = NULL;
	dc = calloc(1, sizeof(*dc));
	if (!dc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	dc->dirfd = dc->lockfd = dc->datafd = dc->jfd = -1;
	pthread_mutex_init(&dc->lock, NULL);
	dc->bs = cfg && cfg->block_size ? cfg->block_size : PF_DC_BLOCK;
	if (dc->bs < 4096 || (dc->bs & (dc->bs - 1))) {
		snprintf(err, errlen, "disk cache block size %u: not a power "
			 "of two of at least 4K", dc->bs);
		ret = -EINVAL;
		goto out;
	}
	ret = files_open(dc, dir, cfg ? cfg->dirfd : -1, &fresh, err, errlen);
	if (ret < 0)
		goto out;
	/* a new key: the blocks sealed under the old one cannot be checked */
	ret = size_slots(dc, dir, cfg, fresh ? 0 : pf_dc_journal_block(dc), err,
			 errlen);
	if (ret < 0)
		goto out;
	ret = index_alloc(dc, err, errlen);
	if (ret < 0)
		goto out;
	ret = fresh ? 0 : pf_dc_journal_replay(dc, &rewrite);
	if (ret < 0) {
		snprintf(err, errlen, "cache_dir '%s': reading the journal: "
			 "%s", dir, strerror(-ret));
		goto out;
	}
	for (uint32_t i = dc->nslots; i-- > 0;)
		if (dc->slots[i].state != S_VALID)
			dc->freel[dc->nfree++] = i;
	/* sparse: slots take disk space only once written; a smaller
	 * cache than last time gives the space of the cut slots back */
	if (ftruncate(dc->datafd, (off_t)dc->nslots * dc->bs) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cache_dir '%s': sizing the data file: "
			 "%s", dir, strerror(-ret));
		goto out;
	}
	if (rewrite || fresh) {
		ret = pf_dc_journal_compact(dc);
		if (ret < 0) {
			snprintf(err, errlen, "cache_dir '%s': writing the "
				 "journal: %s", dir, strerror(-ret));
			goto out;
		}
	}
	dc->st.capacity = (uint64_t)dc->nslots * dc->bs;
	*out = dc;
	return 0;
out:
	pf_dc_close(dc);
	return ret;
}

void pf_dc_exiting(struct pf_dc *dc)
{
	pf_dc_dir_lock_mark(dc->lockfd, "exiting");
}

void pf_dc_close(struct pf_dc *dc)
{
	if (!dc)
		return;
	/*
	 * No fdatasync() of the data: at an unmount right after a fill it
	 * would wait for every dirty block (seconds), and a block lost to a
	 * power cut before writeback only fails its checksum.  The journal
	 * is small: it is synced, so its records survive.
	 */
	if (dc->datafd >= 0)
		close(dc->datafd);
	if (dc->jfd >= 0) {
		fdatasync(dc->jfd);
		close(dc->jfd);
	}
	if (dc->lockfd >= 0)
		close(dc->lockfd);
	if (dc->dirfd >= 0)
		close(dc->dirfd);
	explicit_bzero(dc->mkey, sizeof(dc->mkey));
	pthread_mutex_destroy(&dc->lock);
	free(dc->slots);
	free(dc->buckets);
	free(dc->freel);
	free(dc);
}

uint32_t pf_dc_block_size(const struct pf_dc *dc)
{
	return dc->bs;
}

int pf_dc_data_fd(const struct pf_dc *dc)
{
	return dc->datafd;
}

uint64_t pf_dc_slot_off(const struct pf_dc *dc, uint32_t slot)
{
	return (uint64_t)slot * dc->bs;
}

/* ---- index operations --------------------------------------------------- */

int pf_dc_lookup(struct pf_dc *dc, const struct pf_dc_key *key,
		 uint64_t blk, uint32_t len, struct pf_dc_sum *sum)
{
	uint32_t i;
	int ret = -ENOENT;

	pthread_mutex_lock(&dc->lock);
	dc->now++;
	i = find(dc, key->a, key->b, blk);
	if (i != NIL && dc->slots[i].state == S_VALID &&
	    dc->slots[i].len == len) {
		struct dc_slot *s = &dc->slots[i];

		s->touch = dc->now;
		s->pins++;
		*sum = s->sum;
		ret = (int)i;
	}
	pthread_mutex_unlock(&dc->lock);
	return ret;
}

bool pf_dc_has(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	       uint32_t len)
{
	uint32_t i;
	bool ret;

	pthread_mutex_lock(&dc->lock);
	i = find(dc, key->a, key->b, blk);
	ret = i != NIL && dc->slots[i].state == S_VALID &&
	      dc->slots[i].len == len;
	pthread_mutex_unlock(&dc->lock);
	return ret;
}

bool pf_dc_keep(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
		uint32_t len)
{
	uint32_t i;
	bool ret;

	pthread_mutex_lock(&dc->lock);
	i = find(dc, key->a, key->b, blk);
	ret = i != NIL && dc->slots[i].state != S_FREE &&
	      dc->slots[i].len == len;
	if (ret) {
		struct dc_slot *s = &dc->slots[i];

		/* (one being written counts once committed) */
		make_kept(dc, s);
		s->touch = dc->now;
	}
	pthread_mutex_unlock(&dc->lock);
	return ret;
}

void pf_dc_unpin(struct pf_dc *dc, uint32_t slot)
{
	pthread_mutex_lock(&dc->lock);
	if (dc->slots[slot].pins)
		dc->slots[slot].pins--;
	pthread_mutex_unlock(&dc->lock);
}

/*
 * Whether the block in valid slot @s may make room for a new one, a
 * fill's (@fill) or a reader's: see the policy at the top.
 */
static bool evictable(const struct pf_dc *dc, const struct dc_slot *s,
		      bool fill)
{
	uint64_t age = dc->now - s->touch;
	uint64_t cold = (uint64_t)COLD_FACTOR * dc->nslots;

	if (s->kept == K_NO)
		return fill || age > cold;
	if (fill)
		return s->kept == K_BEFORE && age > cold;
	return age > (uint64_t)KEEP_FACTOR * dc->nslots;
}

/*
 * An unpinned valid slot from the clock hand that may go for a new block,
 * a fill's (@fill) or a reader's, or NIL.  At most SCAN_MAX looked at, but
 * for a fill while readers' blocks are cached: its own blocks, written to
 * consecutive slots, make long runs the hand passes (a fill takes at most
 * 3/4 of the slots, so a rotation finds a reader's block every few slots
 * on average).  Locked.
 */
static uint32_t victim(struct pf_dc *dc, bool fill)
{
	uint32_t scan = fill && dc->nplain ? dc->nslots : SCAN_MAX;

	for (uint32_t n = 0; n < scan; n++) {
		uint32_t i = dc->hand;
		struct dc_slot *s = &dc->slots[i];

		dc->hand = i + 1 == dc->nslots ? 0 : i + 1;
		if (s->state == S_VALID && !s->pins && evictable(dc, s, fill))
			return i;
	}
	return NIL;
}

/* Under dc->lock: the disk is full; no free slot is used any more (the
 * capacity shrinks to what the disk holds: pf_dc_full()). */
static void no_new_slots(struct pf_dc *dc)
{
	dc->no_new = true;
	dc->nfree = 0;
}

int pf_dc_reserve(struct pf_dc *dc, const struct pf_dc_key *key,
		  uint64_t blk, uint32_t len, unsigned flags)
{
	bool fill = flags & PF_DC_FILL;
	struct dc_slot *s;
	uint32_t i;
	int room;
	int ret;

	if (len == 0 || len > dc->bs)
		return -EINVAL;
	/* the journal records of the blocks being written and of this one
	 * have their disk space before this one's data takes any */
	room = pf_dc_journal_room(dc, dc->jwriting + 1);
	pthread_mutex_lock(&dc->lock);
	i = find(dc, key->a, key->b, blk);
	if (i != NIL) {
		/* a reader's block the fill fetched too: the fill's now (one
		 * being written counts once committed) */
		if (fill)
			make_kept(dc, &dc->slots[i]);
		ret = -EEXIST;
		goto out;
	}
	if (room < 0) {
		/* the disk is full: as after a write that failed so */
		no_new_slots(dc);
		dc->st.rejected++;
		ret = -ENOSPC;
		goto out;
	}
	if (dc->nfree) {
		i = dc->freel[--dc->nfree];
	} else {
		i = victim(dc, fill);
		if (i == NIL) {
			dc->st.rejected++;
			ret = -ENOSPC;
			goto out;
		}
		unvalidate(dc, i);
		dc->st.evictions++;
	}
	s = &dc->slots[i];
	s->ka = key->a;
	s->kb = key->b;
	s->blk = blk;
	s->len = len;
	memset(&s->sum, 0, sizeof(s->sum));
	s->pins = 1;
	s->state = S_WRITING;
	s->kept = fill ? K_NOW : K_NO;
	/* in the hash already, so that a second reserve sees it */
	hash_in(dc, i);
	dc->jwriting++;
	ret = (int)i;
out:
	pthread_mutex_unlock(&dc->lock);
	return ret;
}

int pf_dc_commit(struct pf_dc *dc, uint32_t slot, const struct pf_dc_sum *sum)
{
	struct dc_slot *s = &dc->slots[slot];
	int ret;

	/* fields of a writing slot change only on this thread */
	ret = pf_dc_journal_put(dc, slot, s, sum);
	dc->jwriting--;
	pthread_mutex_lock(&dc->lock);
	if (ret < 0) {
		hash_out(dc, slot);
		release(dc, slot);
		dc->st.errors++;
	} else {
		s->sum = *sum;
		s->state = S_VALID;
		s->pins = 0;
		s->touch = dc->now;
		dc->nvalid++;
		dc->bytes += s->len;
		count_class(dc, s, true);
		dc->st.bytes_written += s->len;
	}
	pthread_mutex_unlock(&dc->lock);
	return ret;
}

void pf_dc_abort(struct pf_dc *dc, uint32_t slot)
{
	dc->jwriting--;
	pthread_mutex_lock(&dc->lock);
	hash_out(dc, slot);
	release(dc, slot);
	pthread_mutex_unlock(&dc->lock);
}

void pf_dc_drop(struct pf_dc *dc, uint32_t slot)
{
	bool gone = false;

	pthread_mutex_lock(&dc->lock);
	if (dc->slots[slot].state == S_VALID) {
		/* other readers of the slot check the CRC too */
		release(dc, slot);
		dc->st.dropped++;
		gone = true;
	} else if (dc->slots[slot].pins) {
		dc->slots[slot].pins--;
	}
	pthread_mutex_unlock(&dc->lock);
	if (gone && pf_dc_journal_del(dc, slot) < 0)
		pf_debug("disk cache: journal append failed");
}

void pf_dc_shrink(struct pf_dc *dc)
{
	pthread_mutex_lock(&dc->lock);
	no_new_slots(dc);
	pthread_mutex_unlock(&dc->lock);
}

bool pf_dc_full(struct pf_dc *dc)
{
	bool full;

	pthread_mutex_lock(&dc->lock);
	full = dc->no_new;
	pthread_mutex_unlock(&dc->lock);
	return full;
}

/* ---- synchronous put/get, counters ------------------------------------ */

int pf_dc_seal(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	       uint32_t slot, const void *buf, uint32_t len,
	       struct pf_dc_sum *sum)
{
	sum->nonce = atomic_fetch_add(&dc->nonce, 1);
	return pf_dc_mac(dc->mkey, sum->nonce, slot, key, blk, buf, len,
			 &sum->tag);
}

bool pf_dc_verify(struct pf_dc *dc, const struct pf_dc_key *key,
		  uint64_t blk, uint32_t slot, const void *buf, uint32_t len,
		  const struct pf_dc_sum *sum)
{
	uint64_t tag;

	return pf_dc_mac(dc->mkey, sum->nonce, slot, key, blk, buf, len,
			 &tag) == 0 &&
	       CRYPTO_memcmp(&tag, &sum->tag, sizeof(tag)) == 0;
}

int pf_dc_put(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	      const void *buf, uint32_t len)
{
	int slot = pf_dc_reserve(dc, key, blk, len, 0);
	struct pf_dc_sum sum;
	ssize_t n;

	if (slot < 0)
		return slot;
	n = pwrite(dc->datafd, buf, len,
		   (off_t)pf_dc_slot_off(dc, (uint32_t)slot));
	if (n == (ssize_t)len)
		n = pf_dc_seal(dc, key, blk, (uint32_t)slot, buf, len, &sum);
	else
		n = n < 0 ? -errno : -ENOSPC;
	if (n < 0) {
		pf_dc_abort(dc, (uint32_t)slot);
		return (int)n;
	}
	n = pf_dc_commit(dc, (uint32_t)slot, &sum);
	if (n >= 0)
		pf_dc_maintain(dc);
	return (int)n;
}

int pf_dc_get(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	      void *buf, uint32_t len)
{
	struct pf_dc_sum sum;
	int slot = pf_dc_lookup(dc, key, blk, len, &sum);
	ssize_t n;

	if (slot < 0)
		return slot;
	n = pread(dc->datafd, buf, len,
		  (off_t)pf_dc_slot_off(dc, (uint32_t)slot));
	if (n != (ssize_t)len ||
	    !pf_dc_verify(dc, key, blk, (uint32_t)slot, buf, len, &sum)) {
		pf_dc_drop(dc, (uint32_t)slot);
		return -EBADMSG;
	}
	pf_dc_unpin(dc, (uint32_t)slot);
	return 0;
}

void pf_dc_count(struct pf_dc *dc, int hit, uint64_t bytes)
{
	pthread_mutex_lock(&dc->lock);
	if (hit) {
		dc->st.hits++;
		dc->st.bytes_hit += bytes;
	} else {
		dc->st.misses++;
	}
	pthread_mutex_unlock(&dc->lock);
}

void pf_dc_count_error(struct pf_dc *dc)
{
	pthread_mutex_lock(&dc->lock);
	dc->st.errors++;
	pthread_mutex_unlock(&dc->lock);
}

void pf_dc_get_stats(struct pf_dc *dc, struct pf_dc_stats *st)
{
	pthread_mutex_lock(&dc->lock);
	*st = dc->st;
	st->blocks = dc->nvalid;
	st->bytes_cached = dc->bytes;
	st->bytes_kept = dc->kept_bytes;
	if (dc->no_new) {
		uint64_t used = 0;

		for (uint32_t i = 0; i < dc->nslots; i++)
			used += dc->slots[i].state != S_FREE;
		st->capacity = used * dc->bs;
	}
	pthread_mutex_unlock(&dc->lock);
}
