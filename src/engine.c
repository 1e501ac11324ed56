/*
 * engine.c - block cache, demand fetches and read-ahead for every file.
 *
 * DESIGN
 * A file's bytes live in blocks of block_size bytes keyed by (file, index)
 * in one hash table.  A block holds one valid byte interval [vlo, vhi) of
 * its part of the file: whole blocks for sequential read-ahead, exact
 * record or request ranges for strided and random readers, so that nothing
 * is fetched that will not be read.  A block is "busy" while a backend read
 * fills it; nobody may hold a reference to a busy block and a block with
 * references is never written, so the bytes a reply points at never change
 * under it.
 *
 * A READ is "driven": every block it needs is checked; ready blocks are
 * pinned, missing ones are allocated and fetched, and if anything is not
 * ready the READ parks on one block's waiter list (holding no pins, so no
 * READ waits while holding what another needs) and is driven again when
 * that block's fetch ends or its last pin goes.  When everything is ready
 * the reply is made from the block buffers with the lock released.
 *
 * Fetches go to the backend at most max_inflight at a time; demand fetches
 * past that wait in a FIFO, read-ahead is simply not planned.  Read-ahead
 * takes memory only from blocks that have been read already (LRU); a
 * demand miss may also take prefetched blocks nobody has read yet.  The
 * planner runs after every READ and after every completed fetch, so a
 * stream's windows keep filling while its reader computes.
 *
 * One mutex (e->lock) guards everything here.  Backend completions arrive
 * on the backend's thread; replies are made from whichever thread finished
 * the READ's last block, never under the lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "pf_clock.h"
#include "pf_engine.h"
#include "pf_json.h"
#include "pf_log.h"
#include "pf_pool.h"
#include "pf_trace.h"

#define PAGE_BYTES 4096u
#define MAX_EXTENTS 512
#define MAX_READ_BLOCKS 1024
/* files opened ahead of their readers (the next file of a directory) */
#define MAX_GHOSTS 4
enum { GHOST_NONE, GHOST_OPENING, GHOST_OPEN };

struct list {
	struct list *prev;
	struct list *next;
};

static void list_init(struct list *l)
{
	l->prev = l;
	l->next = l;
}

static void list_add_tail(struct list *head, struct list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n;
	n->next = n;
}

static bool list_empty(const struct list *l)
{
	return l->next == l;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct pread;

struct block {
	struct pf_efile *file;	/* NULL once detached from its file */
	uint64_t idx;
	struct block *hnext;
	struct list lru;	/* on e->lru_read / e->lru_unread when idle */
	struct list fnode;	/* on file->blocks while attached */
	char *buf;
	uint32_t vlo;
	uint32_t vhi;
	uint32_t refs;
	bool busy;
	bool read_seen;
	bool prefetched;
	bool in_lru;
	bool pushed;		/* its bytes went to the page cache */
	unsigned stream;	/* stream that prefetched it */
	struct pread *waiters;
};

/* A READ that could not be answered at once. */
struct pread {
	struct pf_efile *file;
	uint64_t off;
	size_t size;
	pf_reply_fn reply;
	void *req;
	unsigned stream;
	uint64_t t0;
	struct pread *wnext;
	struct block *parked;	/* whose waiter list holds it; NULL: memwait */
	uint64_t wait_off;	/* offset of the block it last parked on */
	unsigned cap;		/* room in blk[] */
	int err;
	bool waited;
	bool missed;
	bool heap;
	unsigned nblk;
	struct block *blk[];
};

/* The backend file handle of one open generation; fetches pin it. */
struct bref {
	struct pf_backend *be;
	struct pf_bfile *bf;
	unsigned refs;
};

struct fetch {
	struct pf_bio bio;
	struct pf_engine *e;
	struct pf_efile *file;
	struct bref *bref;
	uint64_t off;
	uint64_t len;
	bool prefetch;
	bool pushable;		/* read-ahead of a SEQUENTIAL stream */
	bool trip;		/* its last page is a tripwire, not pushed */
	unsigned stream;
	unsigned nblk;
	uint64_t t0;		/* issued (only while tracing) */
	struct fetch *qnext;
	struct block **blk;
	uint32_t *flo;
	struct iovec *iov;
};

/* The engine's per-stream accounting beside the tracker's learned state. */
struct sslot {
	unsigned id;		/* 0 = free */
	uint64_t hits;
	uint64_t misses;
	uint64_t waits;
	uint64_t wait_ns;
	uint64_t bytes_served;
	uint64_t bytes_fetched;
	uint64_t bytes_unused;
	unsigned inflight;
	uint64_t planned_upto;
	uint64_t refill_until;	/* read-ahead goes no further for now */
	unsigned depth;		/* windows kept ahead: cfg's, more after
				 * READs that waited for read-ahead */
};

struct pf_efile {
	struct pf_engine *e;
	char *path;
	uint64_t tag;
	unsigned refs;		/* owners (pf_efile_new / put) */
	unsigned opens;
	unsigned fetches;	/* fetches not yet completed */
	struct bref *cur;	/* while opens > 0 */
	uint64_t size;
	struct timespec mtime;
	bool have_version;
	struct pf_tracker *tracker;
	struct sslot *slots;
	unsigned nslots;
	struct list blocks;
	struct list node;	/* on e->files */
	/* the next file: see "the next file" below */
	bool next_asked;	/* this open generation asked for its successor */
	int ghost;		/* GHOST_*: opened by the engine itself (then
				 * it holds a reference and an open), not
				 * yet by a reader */
	uint64_t ghost_upto;	/* read-ahead of a ghost: planned up to ... */
	uint64_t ghost_want;	/* ... this offset */
};

struct pf_engine {
	struct pf_engine_cfg cfg;
	struct pf_plan_cfg plan;
	struct pf_backend *be;
	pthread_mutex_t lock;
	struct pf_pool *pool;
	struct block **hash;
	size_t hmask;
	struct list lru_read;	/* idle blocks that were read: evict first */
	struct list lru_unread;	/* idle prefetched blocks not read yet */
	struct list files;
	struct pread *memwait;	/* READs waiting for a free buffer */
	struct fetch *queue;	/* demand fetches waiting for a slot */
	struct fetch *queue_tail;
	unsigned inflight;	/* fetches submitted to the backend */
	unsigned queued;
	uint32_t bs;
	unsigned bshift;
	struct pf_engine_totals tot;
	/* the pusher: fetches whose bytes go to the push function */
	pf_push_fn push_fn;
	void *push_arg;
	pthread_t push_thread;
	pthread_cond_t push_cond;
	struct fetch *pushq;
	struct fetch *pushq_tail;
	uint64_t pushq_bytes;
	struct pf_efile *pushing; /* file the pusher is pushing for now */
	bool push_stop;
	bool stopping;		/* no more read-ahead: shutting down */
	/* the next-file thread and its requests (guarded by lock) */
	pthread_t next_thread;
	bool next_running;
	bool next_stop;
	pthread_cond_t next_cond;
	struct next_req *nextq;
	struct pf_efile *ghosts[MAX_GHOSTS];
	unsigned nghosts;
	pthread_cond_t idle_cond; /* signalled when nothing is in flight */
};

/* Work collected under the lock and done after it is released. */
struct todo {
	struct fetch *submit;
	struct pread *reply;
};

static void drive_list(struct pf_engine *e, struct pread *list,
		       struct todo *td);
static void efile_maybe_free(struct pf_engine *e, struct pf_efile *f);
static bool push_wanted(struct pf_engine *e, const struct fetch *ft,
			int err);
static void push_enqueue(struct pf_engine *e, struct fetch *ft);
static void plan_file(struct pf_engine *e, struct pf_efile *f,
		      struct todo *td);
static void next_ask(struct pf_engine *e, struct pf_efile *f,
		     uint64_t want);
static void ghosts_plan(struct pf_engine *e, struct todo *td);
static void ghost_release(struct pf_engine *e, struct pf_efile *f);
static int efile_open(struct pf_efile *f, struct stat *st, bool ghost);
static void next_stop(struct pf_engine *e);
static void *next_main(void *arg);
/* tracing (-o trace): see the end of the file */
static void trace_counters(struct pf_engine *e, uint64_t now);
static void trace_read(struct pf_efile *f, const struct pread *p,
		       uint64_t now);
static void trace_fetch(struct pf_engine *e, const struct fetch *ft,
			int64_t res);
static void trace_plan(struct pf_engine *e, struct pf_efile *f,
		       const struct pf_stream *st, const struct sslot *s,
		       uint64_t issued);

void pf_engine_cfg_default(struct pf_engine_cfg *cfg, uint64_t ram_bytes)
{
	uint64_t mem = ram_bytes / 4;

	memset(cfg, 0, sizeof(*cfg));
	if (mem < (256u << 20))
		mem = 256u << 20;
	if (mem > (16ull << 30))
		mem = 16ull << 30;
	cfg->block_size = 64u << 10;
	cfg->max_memory = mem;
	cfg->fetch_size = 1u << 20;
	cfg->max_inflight = 32;
	cfg->prefetch_batches = 2;
	cfg->prefetch = 1;
	pf_pattern_cfg_default(&cfg->pattern);
	cfg->min_window = 4u << 20;
	cfg->max_window = 256u << 20;
	cfg->push = 1;
	cfg->next_file = 1;
}

/* ---- blocks ---------------------------------------------------------- */

static size_t hash_of(const struct pf_engine *e, const struct pf_efile *f,
		      uint64_t idx)
{
	uint64_t h = (uint64_t)(uintptr_t)f * 0x9E3779B97F4A7C15ull;

	h ^= idx + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 31;
	return (size_t)h & e->hmask;
}

static struct block *block_find(struct pf_engine *e, struct pf_efile *f,
				uint64_t idx)
{
	struct block *b = e->hash[hash_of(e, f, idx)];

	while (b && !(b->file == f && b->idx == idx))
		b = b->hnext;
	return b;
}

static void hash_remove(struct pf_engine *e, struct block *b)
{
	struct block **pp = &e->hash[hash_of(e, b->file, b->idx)];

	while (*pp != b)
		pp = &(*pp)->hnext;
	*pp = b->hnext;
	b->hnext = NULL;
}

/* Bytes of the file that fall in block @idx. */
static uint32_t block_len(const struct pf_engine *e,
			  const struct pf_efile *f, uint64_t idx)
{
	uint64_t start = idx << e->bshift;

	if (start >= f->size)
		return 0;
	return f->size - start < e->bs ? (uint32_t)(f->size - start) : e->bs;
}

static struct sslot *slot_find(struct pf_efile *f, unsigned id)
{
	if (id == 0)
		return NULL;
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->slots[i].id == id)
			return &f->slots[i];
	return NULL;
}

/* Slot for stream @id, reusing one whose stream the tracker recycled. */
static struct sslot *slot_get(struct pf_efile *f, unsigned id)
{
	struct sslot *s = slot_find(f, id);

	if (s)
		return s;
	for (unsigned i = 0; i < f->nslots; i++) {
		s = &f->slots[i];
		if (s->id == 0 || !pf_tracker_find(f->tracker, s->id)) {
			memset(s, 0, sizeof(*s));
			s->id = id;
			return s;
		}
	}
	return NULL;
}

static void lru_remove(struct block *b)
{
	if (b->in_lru) {
		list_del(&b->lru);
		b->in_lru = false;
	}
}

/* Give an idle block back to the LRU, or free it if it is detached. */
static void block_idle(struct pf_engine *e, struct block *b);

static void block_destroy(struct pf_engine *e, struct block *b)
{
	lru_remove(b);
	if (b->file) {
		hash_remove(e, b);
		list_del(&b->fnode);
	}
	if (b->prefetched && !b->read_seen) {
		uint64_t unused = b->vhi - b->vlo;
		struct sslot *s = b->file ? slot_find(b->file, b->stream) :
					    NULL;

		e->tot.bytes_unused += unused;
		if (s)
			s->bytes_unused += unused;
	}
	pf_pool_put(e->pool, b->buf);
	free(b);
}

static void block_idle(struct pf_engine *e, struct block *b)
{
	if (b->busy || b->refs)
		return;
	if (!b->file || b->vhi == b->vlo) {
		block_destroy(e, b);
		return;
	}
	if (!b->in_lru) {
		list_add_tail(b->read_seen ? &e->lru_read : &e->lru_unread,
			      &b->lru);
		b->in_lru = true;
	}
}

/* A buffer: a fresh one while the budget allows, else an evicted one. */
static void *buf_get(struct pf_engine *e, bool demand)
{
	struct block *victim;
	void *buf = pf_pool_get(e->pool);

	if (buf)
		return buf;
	if (!list_empty(&e->lru_read))
		victim = container_of(e->lru_read.next, struct block, lru);
	else if (demand && !list_empty(&e->lru_unread))
		victim = container_of(e->lru_unread.next, struct block, lru);
	else
		return NULL;
	block_destroy(e, victim);
	return pf_pool_get(e->pool);
}

static struct block *block_new(struct pf_engine *e, struct pf_efile *f,
			       uint64_t idx, bool demand)
{
	struct block *b = calloc(1, sizeof(*b));
	size_t h;

	if (!b)
		return NULL;
	b->buf = buf_get(e, demand);
	if (!b->buf) {
		free(b);
		return NULL;
	}
	b->file = f;
	b->idx = idx;
	h = hash_of(e, f, idx);
	b->hnext = e->hash[h];
	e->hash[h] = b;
	list_add_tail(&f->blocks, &b->fnode);
	list_init(&b->lru);
	return b;
}

/* Drop a file's blocks (its version changed, or the file is going). */
static void file_drop_blocks(struct pf_engine *e, struct pf_efile *f)
{
	while (!list_empty(&f->blocks)) {
		struct block *b = container_of(f->blocks.next, struct block,
					       fnode);

		if (!b->busy && !b->refs) {
			block_destroy(e, b);
			continue;
		}
		/* in use: detach now, freed when its fetch or pin ends */
		lru_remove(b);
		hash_remove(e, b);
		list_del(&b->fnode);
		b->file = NULL;
	}
}

/* ---- fetches --------------------------------------------------------- */

/* A fetch being assembled from contiguous block parts. */
struct run {
	struct fetch *f;
	unsigned cap;
	bool pushable;		/* for the fetches it makes */
};

static void fetch_done(struct pf_bio *bio, int64_t res);

static struct fetch *fetch_alloc(unsigned cap)
{
	struct fetch *ft;
	size_t sz = sizeof(*ft) + cap * (sizeof(struct block *) +
					 sizeof(uint32_t) +
					 sizeof(struct iovec));
	char *p = calloc(1, sz);

	if (!p)
		return NULL;
	ft = (struct fetch *)p;
	p += sizeof(*ft);
	ft->iov = (struct iovec *)p;
	p += cap * sizeof(struct iovec);
	ft->blk = (struct block **)p;
	p += cap * sizeof(struct block *);
	ft->flo = (uint32_t *)p;
	return ft;
}

static void bref_put(struct bref *r)
{
	if (--r->refs == 0) {
		r->be->ops->close(r->be, r->bf);
		free(r);
	}
}

/* Hand a finished run to the dispatcher (under the lock). */
static void run_close(struct pf_engine *e, struct run *run, struct todo *td)
{
	struct fetch *ft = run->f;
	struct sslot *slot;

	if (!ft)
		return;
	run->f = NULL;
	ft->e = e;
	ft->bio.file = ft->bref->bf;
	ft->bio.off = ft->off;
	ft->bio.iov = ft->iov;
	ft->bio.iovcnt = (int)ft->nblk;
	ft->bio.done = fetch_done;
	ft->bio.priv = ft;
	ft->file->fetches++;
	ft->bref->refs++;
	slot = slot_find(ft->file, ft->stream);
	if (slot)
		slot->inflight++;
	e->tot.fetches++;
	if (ft->prefetch)
		e->tot.bytes_prefetched += ft->len;
	if (e->inflight < e->cfg.max_inflight) {
		e->inflight++;
		ft->qnext = td->submit;
		td->submit = ft;
	} else {
		ft->qnext = NULL;
		if (e->queue_tail)
			e->queue_tail->qnext = ft;
		else
			e->queue = ft;
		e->queue_tail = ft;
		e->queued++;
	}
	if (pf_trace_on()) {
		ft->t0 = pf_now_ns();
		trace_counters(e, ft->t0);
	}
}

/*
 * Add bytes [flo, fhi) of idle block @b to the run, closing the current
 * fetch first if they do not continue it.  Marks @b busy.  Returns false if
 * no memory was left for a fetch (then @b is left untouched).
 */
static bool run_add(struct pf_engine *e, struct run *run, struct pf_efile *f,
		    struct block *b, uint32_t flo, uint32_t fhi,
		    bool prefetch, unsigned stream, struct todo *td)
{
	uint64_t foff = (b->idx << e->bshift) + flo;
	struct fetch *ft = run->f;

	/* read-ahead fetches start at fetch_size boundaries where they can,
	 * so each holds one tripwire page at most (see push_enqueue) */
	if (ft && (ft->off + ft->len != foff || ft->nblk == run->cap ||
		   ft->len + (fhi - flo) > e->cfg.fetch_size ||
		   ft->prefetch != prefetch ||
		   (prefetch && foff % e->cfg.fetch_size == 0)))
		run_close(e, run, td);
	if (!run->f) {
		run->cap = (unsigned)(e->cfg.fetch_size >> e->bshift) + 2;
		ft = fetch_alloc(run->cap);
		if (!ft)
			return false;
		ft->file = f;
		ft->bref = f->cur;
		ft->off = foff;
		ft->prefetch = prefetch;
		ft->pushable = prefetch && run->pushable;
		ft->stream = stream;
		run->f = ft;
	}
	ft = run->f;
	ft->blk[ft->nblk] = b;
	ft->flo[ft->nblk] = flo;
	ft->iov[ft->nblk].iov_base = b->buf + flo;
	ft->iov[ft->nblk].iov_len = fhi - flo;
	ft->nblk++;
	ft->len += fhi - flo;
	lru_remove(b);
	b->busy = true;
	if (prefetch && b->vhi == b->vlo) {
		b->prefetched = true;
		b->stream = stream;
	}
	if (fhi == block_len(e, f, b->idx) && fhi != e->bs)
		run_close(e, run, td); /* end of file */
	return true;
}

/*
 * The part of idle block @b to fetch so that it covers [lo, hi) and its
 * valid bytes stay one interval.  Bytes that touch or overlap the valid
 * ones extend them.  A range apart from them replaces them if they have
 * been read since they were fetched (bridging the gap would fetch bytes
 * nobody asked for, as random readers would see), else the gap is fetched
 * too: then the valid bytes only ever grow until a READ is answered from
 * them, so two READs wanting different parts of one block cannot take
 * turns throwing away each other's bytes.
 */
static void fetch_range(struct block *b, uint32_t lo, uint32_t hi,
			uint32_t *flo, uint32_t *fhi)
{
	*flo = lo;
	*fhi = hi;
	if (b->vhi == b->vlo)
		return;
	if ((hi < b->vlo || lo > b->vhi) && b->read_seen) {
		b->vlo = 0;
		b->vhi = 0;
		return;
	}
	/* from the valid end to hi, or from lo to the valid start; both
	 * bridge a gap when [lo, hi) lies apart */
	if (lo >= b->vlo)
		*flo = b->vhi;
	else if (hi <= b->vhi)
		*fhi = b->vlo;
}

static bool block_covers(const struct block *b, uint32_t lo, uint32_t hi)
{
	return !b->busy && b->vlo <= lo && hi <= b->vhi;
}

/*
 * How many bytes from @from on, up to @to, are in memory without a gap (and
 * were pushed to the page cache, if @pushed).  Under the lock.
 */
static uint64_t resident_run(struct pf_engine *e, struct pf_efile *f,
			     uint64_t from, uint64_t to, bool pushed)
{
	uint64_t off = from;

	while (off < to) {
		uint64_t idx = off >> e->bshift;
		uint64_t bstart = idx << e->bshift;
		uint32_t lo = (uint32_t)(off - bstart);
		uint32_t hi = to - bstart < e->bs ? (uint32_t)(to - bstart) :
						    e->bs;
		struct block *b = block_find(e, f, idx);

		if (!b || (pushed && !b->pushed) || !block_covers(b, lo, hi))
			break;
		off = bstart + hi;
	}
	return off - from;
}

static void fetch_free(struct pf_engine *e, struct fetch *ft)
{
	struct pf_efile *f = ft->file;

	f->fetches--;
	bref_put(ft->bref);
	free(ft);
	efile_maybe_free(e, f);
}

/* ---- reads ----------------------------------------------------------- */

static uint64_t read_end(const struct pread *p)
{
	uint64_t end = p->off + p->size;

	return end > p->file->size ? p->file->size : end;
}

/*
 * Under the lock.  Returns true when @p can be answered now (its blocks are
 * pinned, or p->err is set); false when it was parked.
 */
static bool drive(struct pf_engine *e, struct pread *p, struct todo *td)
{
	struct pf_efile *f = p->file;
	uint64_t end = read_end(p);
	uint64_t first;
	uint64_t last;
	struct block *wait_on = NULL;
	bool nomem = false;
	struct run run = { 0 };

	p->nblk = 0;
	if (p->err || p->off >= end)
		return true;
	first = p->off >> e->bshift;
	last = (end - 1) >> e->bshift;
	for (uint64_t idx = first; idx <= last; idx++) {
		uint64_t bstart = idx << e->bshift;
		uint32_t blen = block_len(e, f, idx);
		uint32_t lo = idx == first ? (uint32_t)(p->off - bstart) : 0;
		uint32_t hi = idx == last ? (uint32_t)(end - bstart) : blen;
		struct block *b = block_find(e, f, idx);
		uint32_t flo;
		uint32_t fhi;

		if (b && block_covers(b, lo, hi)) {
			p->blk[p->nblk++] = b;
			continue;
		}
		if (b && (b->busy || b->refs)) {
			if (!wait_on)
				wait_on = b;
			continue;
		}
		if (!b) {
			b = block_new(e, f, idx, true);
			if (!b) {
				nomem = true;
				continue;
			}
		}
		/* fetch whole pages: the kernel asks in pages anyway */
		lo &= ~(PAGE_BYTES - 1);
		hi = (hi + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1);
		if (hi > blen)
			hi = blen;
		fetch_range(b, lo, hi, &flo, &fhi);
		if (!run_add(e, &run, f, b, flo, fhi, false, p->stream, td)) {
			block_idle(e, b);
			nomem = true;
			continue;
		}
		p->missed = true;
		if (!wait_on)
			wait_on = b;
	}
	run_close(e, &run, td);
	if (wait_on) {
		p->waited = true;
		p->parked = wait_on;
		p->wait_off = wait_on->idx << e->bshift;
		p->wnext = wait_on->waiters;
		wait_on->waiters = p;
		return false;
	}
	if (nomem) {
		p->waited = true;
		p->parked = NULL;
		p->wnext = e->memwait;
		e->memwait = p;
		return false;
	}
	for (unsigned i = 0; i < p->nblk; i++) {
		lru_remove(p->blk[i]);
		p->blk[i]->refs++;
	}
	return true;
}

/*
 * A READ parked by drive() still lives on the caller's stack: move it to
 * the heap, where it stays until it is answered.  It is at the head of the
 * list it was parked on.
 */
static struct pread *pread_park(struct pf_engine *e, struct pread *p)
{
	struct pread *h = malloc(sizeof(*p) + p->cap * sizeof(p->blk[0]));

	if (!h)
		return NULL;
	memcpy(h, p, sizeof(*p) + p->cap * sizeof(p->blk[0]));
	h->heap = true;
	if (p->parked)
		p->parked->waiters = h;
	else
		e->memwait = h;
	return h;
}

/*
 * Depth.  prefetch_batches windows ahead suffice when a fetch takes less
 * than the reader's batch period; against a store with a long first-byte
 * latency it does not, and the reader catches up with read-ahead still in
 * flight.  Each READ that waits for read-ahead (not for a demand fetch)
 * adds a window to its sequential stream, up to MAX_DEPTH and a quarter of the
 * memory, as the kernel's read-ahead grows on hits to pages in flight.
 */
#define MAX_DEPTH 16

static struct pf_plan_cfg stream_plan(const struct pf_engine *e,
				      const struct sslot *s)
{
	struct pf_plan_cfg pc = e->plan;

	if (s && s->depth > pc.windows)
		pc.windows = s->depth;
	return pc;
}

static void deepen(struct pf_engine *e, const struct pf_efile *f,
		   struct sslot *s)
{
	const struct pf_stream *st = pf_tracker_find(f->tracker, s->id);
	uint64_t win;
	unsigned d = s->depth > e->plan.windows ? s->depth : e->plan.windows;

	/* sequential only: a strided stream's record may still be settling
	 * (the kernel's read-ahead can lengthen a record's READs), and more
	 * windows of a wrong record would multiply what is fetched unread */
	if (!st || st->pattern != PF_PAT_SEQUENTIAL || d >= MAX_DEPTH)
		return;
	win = pf_plan_window(st, &e->plan);
	if ((uint64_t)(d + 1) * win > e->cfg.max_memory / 4)
		return;
	s->depth = d + 1;
}

/*
 * Answer a READ whose blocks are pinned, then unpin them.  Work that the
 * unpinning makes possible is added to @td.
 */
static void pread_finish(struct pf_engine *e, struct pread *p,
			 struct todo *td)
{
	struct iovec iov[MAX_READ_BLOCKS];
	struct pf_efile *f = p->file;
	uint64_t end = read_end(p);
	uint64_t served = 0;
	uint64_t now;
	struct sslot *s;
	int cnt = 0;

	if (!p->err) {
		for (unsigned i = 0; i < p->nblk; i++) {
			struct block *b = p->blk[i];
			uint64_t bstart = b->idx << e->bshift;
			uint64_t lo = p->off > bstart ? p->off - bstart : 0;
			uint64_t hi = end - bstart < e->bs ? end - bstart :
							      e->bs;

			iov[cnt].iov_base = b->buf + lo;
			iov[cnt].iov_len = hi - lo;
			served += hi - lo;
			cnt++;
		}
		p->reply(p->req, iov, cnt, 0);
	} else {
		p->reply(p->req, NULL, 0, p->err);
	}
	now = pf_now_ns();

	pthread_mutex_lock(&e->lock);
	e->tot.reads++;
	e->tot.bytes_served += served;
	s = slot_find(f, p->stream);
	if (p->waited) {
		e->tot.waits++;
		e->tot.wait_ns += now - p->t0;
		if (s) {
			s->waits++;
			s->wait_ns += now - p->t0;
			if (!p->missed && e->cfg.prefetch && f->tracker)
				deepen(e, f, s);
		}
	} else {
		e->tot.hits++;
		if (s)
			s->hits++;
	}
	if (p->missed) {
		e->tot.misses++;
		if (s)
			s->misses++;
	}
	if (s)
		s->bytes_served += served;
	if (f->tracker && p->stream)
		pf_tracker_done(f->tracker, p->stream, now);
	if (pf_trace_on())
		trace_read(f, p, now);
	for (unsigned i = 0; i < p->nblk; i++) {
		struct block *b = p->blk[i];

		b->read_seen = true;
		if (--b->refs == 0) {
			struct pread *w = b->waiters;

			b->waiters = NULL;
			block_idle(e, b);
			drive_list(e, w, td);
		}
	}
	if (e->memwait) {
		struct pread *w = e->memwait;

		e->memwait = NULL;
		drive_list(e, w, td);
	}
	pthread_mutex_unlock(&e->lock);
	if (p->heap)
		free(p);
}

/* Drive each READ of @list again; the ready ones go to td->reply. */
static void drive_list(struct pf_engine *e, struct pread *list,
		       struct todo *td)
{
	while (list) {
		struct pread *p = list;

		list = p->wnext;
		p->wnext = NULL;
		if (drive(e, p, td)) {
			p->wnext = td->reply;
			td->reply = p;
		}
	}
}

/* Submit and answer what was collected under the lock, until nothing is
 * left (answering a READ can make more work). */
static void todo_run(struct pf_engine *e, struct todo *td)
{
	while (td->submit || td->reply) {
		if (td->submit) {
			struct fetch *ft = td->submit;
			int ret;

			td->submit = ft->qnext;
			ret = pf_backend_submit(e->be, &ft->bio);
			if (ret < 0)
				fetch_done(&ft->bio, ret);
			continue;
		}
		struct pread *r = td->reply;

		td->reply = r->wnext;
		pread_finish(e, r, td);
	}
}

static void fetch_done(struct pf_bio *bio, int64_t res)
{
	struct fetch *ft = bio->priv;
	struct pf_engine *e = ft->e;
	struct pf_efile *f = ft->file;
	struct todo td = { 0 };
	bool pushed;
	int err = 0;
	struct sslot *s;

	if (res < 0) {
		err = (int)-res;
	} else if ((uint64_t)res < ft->len) {
		/* shorter than the size pinned at open: the file changed */
		err = EIO;
	}
	pthread_mutex_lock(&e->lock);
	e->inflight--;
	if (err) {
		e->tot.fetch_errors++;
		pf_debug("read of %s at %" PRIu64 "+%" PRIu64 " failed: %s",
			 f->path, ft->off, ft->len, strerror(err));
	}
	s = slot_find(f, ft->stream);
	if (s) {
		s->inflight--;
		if (!err)
			s->bytes_fetched += ft->len;
	}
	if (!err)
		e->tot.bytes_fetched += ft->len;
	/* decided before the blocks go idle: a detached one is freed then */
	pushed = push_wanted(e, ft, err);
	for (unsigned i = 0; i < ft->nblk; i++) {
		struct block *b = ft->blk[i];
		uint32_t flo = ft->flo[i];
		uint32_t fhi = flo + (uint32_t)ft->iov[i].iov_len;
		struct pread *w = b->waiters;

		b->busy = false;
		b->waiters = NULL;
		if (!err) {
			if (b->vhi == b->vlo) {
				b->vlo = flo;
				b->vhi = fhi;
			} else {
				b->vlo = flo < b->vlo ? flo : b->vlo;
				b->vhi = fhi > b->vhi ? fhi : b->vhi;
			}
			/* new bytes nobody has read yet */
			b->read_seen = false;
		}
		/* waiters of a failed block get the error, not a refetch */
		for (struct pread *p = w; err && p; p = p->wnext)
			p->err = err;
		if (pushed) {
			/* pinned for the pusher; its bytes are consumed in
			 * the reader's page cache */
			b->refs++;
			b->read_seen = true;
			b->pushed = true;
		} else {
			block_idle(e, b);
		}
		drive_list(e, w, &td);
	}
	if (pushed)
		push_enqueue(e, ft);
	/* a freed slot: the next queued demand fetch goes out */
	if (e->queue) {
		struct fetch *q = e->queue;

		e->queue = q->qnext;
		if (!e->queue)
			e->queue_tail = NULL;
		e->queued--;
		e->inflight++;
		q->qnext = td.submit;
		td.submit = q;
	}
	if (pf_trace_on())
		trace_fetch(e, ft, err ? -(int64_t)err : res);
	if (f->opens)
		plan_file(e, f, &td);
	if (e->nghosts)
		ghosts_plan(e, &td);
	if (!pushed)
		fetch_free(e, ft);
	if (e->memwait) {
		struct pread *w = e->memwait;

		e->memwait = NULL;
		drive_list(e, w, &td);
	}
	if (e->inflight + e->queued == 0)
		pthread_cond_broadcast(&e->idle_cond);
	pthread_mutex_unlock(&e->lock);
	todo_run(e, &td);
}


/* ---- pushing read-ahead to the page cache ----------------------------- */

static uint64_t trip_interval(struct pf_engine *e, const struct fetch *ft)
{
	const struct pf_stream *st = pf_tracker_find(ft->file->tracker,
						     ft->stream);
	uint64_t n = st ? st->batch / (2 * e->cfg.fetch_size) : 1;

	if (n < 1)
		n = 1;
	if (n > 8)
		n = 8;
	return n * e->cfg.fetch_size;
}

/*
 * Under the lock, from fetch_done() before the blocks are updated: is this
 * completed read-ahead fetch one for the pusher?  Only fetches that leave
 * every block whole and attached, so that no READ ever waits for a block
 * the pusher holds pinned.
 */
static bool push_wanted(struct pf_engine *e, const struct fetch *ft,
			int err)
{
	if (err || !ft->pushable || !e->push_fn || e->push_stop ||
	    !ft->file->opens ||
	    /* pinned for the pusher: never the memory others need */
	    e->pushq_bytes + ft->len > e->cfg.max_memory / 4 ||
	    pf_pool_in_use(e->pool) * 4 > pf_pool_max(e->pool) * 3 ||
	    (ft->off & (PAGE_BYTES - 1)) || ft->len <= PAGE_BYTES)
		return false;
	for (unsigned i = 0; i < ft->nblk; i++) {
		const struct block *b = ft->blk[i];
		uint32_t flo = ft->flo[i];
		uint32_t fhi = flo + (uint32_t)ft->iov[i].iov_len;
		uint32_t lo = b->vhi == b->vlo || flo < b->vlo ? flo : b->vlo;
		uint32_t hi = b->vhi == b->vlo || fhi > b->vhi ? fhi : b->vhi;

		if (b->file != ft->file || lo != 0 ||
		    hi != block_len(e, ft->file, b->idx))
			return false;
	}
	return true;
}

/* Queue a fetch whose blocks fetch_done() pinned for the pusher. */
static void push_enqueue(struct pf_engine *e, struct fetch *ft)
{
	/*
	 * Tripwires every half batch (between one and eight fetches apart):
	 * enough READs for the tracker to follow the stream and see its
	 * bursts, few enough to cost nothing.  Other fetches are pushed whole.
	 */
	ft->trip = (ft->off + ft->len) % trip_interval(e, ft) == 0;
	ft->qnext = NULL;
	if (e->pushq_tail)
		e->pushq_tail->qnext = ft;
	else
		e->pushq = ft;
	e->pushq_tail = ft;
	e->pushq_bytes += ft->len;
	pthread_cond_broadcast(&e->push_cond);
}

/*
 * Push one fetch's bytes but for its tripwire page, the last one (lock not
 * held).  The last: a batch ends at a tripwire boundary, so the READ of the
 * tripwire comes as the reader finishes a batch and its compute starts,
 * and the refill it brings overlaps the compute, not the next batch's reads.
 */
static uint64_t push_one(struct pf_engine *e, struct fetch *ft,
			 struct iovec *iov)
{
	uint64_t keep = ft->trip ? ft->len - PAGE_BYTES : ft->len;
	uint64_t bytes = 0;
	int cnt = 0;

	for (unsigned i = 0; i < ft->nblk && bytes < keep; i++) {
		struct iovec v = ft->iov[i];

		if (v.iov_len > keep - bytes)
			v.iov_len = keep - bytes;
		iov[cnt++] = v;
		bytes += v.iov_len;
	}
	e->push_fn(e->push_arg, ft->file->tag, ft->off, iov, cnt);
	return bytes;
}

static void *pusher_main(void *arg)
{
	struct pf_engine *e = arg;
	unsigned cap = (unsigned)(e->cfg.fetch_size >> e->bshift) + 2;
	struct iovec *iov = calloc(cap, sizeof(*iov));

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct todo td = { 0 };
		struct fetch *ft;
		uint64_t bytes = 0;
		bool stop;

		while (!e->pushq && !e->push_stop)
			pthread_cond_wait(&e->push_cond, &e->lock);
		/* (push_cond is also how pf_efile_open() waits for a push of
		 * its file to end; it rechecks its own condition) */
		ft = e->pushq;
		if (!ft)
			break;
		e->pushq = ft->qnext;
		if (!e->pushq)
			e->pushq_tail = NULL;
		e->pushq_bytes -= ft->len;
		/* only bytes of the version open now: a file that changed
		 * since has had its page cache dropped, or soon will */
		stop = e->push_stop || !iov || ft->bref != ft->file->cur;
		e->pushing = stop ? NULL : ft->file;
		pthread_mutex_unlock(&e->lock);

		if (!stop)
			bytes = push_one(e, ft, iov);

		pthread_mutex_lock(&e->lock);
		if (e->pushing) {
			e->pushing = NULL;
			pthread_cond_broadcast(&e->push_cond);
		}
		e->tot.bytes_pushed += bytes;
		for (unsigned i = 0; i < ft->nblk; i++) {
			struct block *b = ft->blk[i];

			if (--b->refs == 0) {
				struct pread *w = b->waiters;

				b->waiters = NULL;
				block_idle(e, b);
				drive_list(e, w, &td);
			}
		}
		fetch_free(e, ft);
		pthread_mutex_unlock(&e->lock);
		todo_run(e, &td);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	free(iov);
	return NULL;
}

int pf_engine_start_push(struct pf_engine *e, pf_push_fn fn, void *arg)
{
	int ret;

	if (!e->cfg.push || !e->cfg.prefetch)
		return 0;
	e->push_fn = fn;
	e->push_arg = arg;
	ret = pthread_create(&e->push_thread, NULL, pusher_main, e);
	if (ret) {
		e->push_fn = NULL;
		return -ret;
	}
	return 0;
}

void pf_engine_stop_push(struct pf_engine *e)
{
	if (!e->push_fn)
		return;
	pthread_mutex_lock(&e->lock);
	e->push_stop = true;
	pthread_cond_broadcast(&e->push_cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->push_thread, NULL);
	e->push_fn = NULL;
}

/*
 * A READ ahead of a sequential stream's frontier, where every byte between
 * the frontier and the READ was pushed to the page cache: the reader read
 * those bytes there, without READs (the tripwire pages make sure it comes
 * back every fetch_size).  Returns the offset the tracker should see the
 * READ start at: the frontier of that stream, so the pushed bytes and this
 * READ count as one contiguous READ; else @off unchanged.
 */
static bool pushed_between(struct pf_engine *e, struct pf_efile *f,
			   uint64_t from, uint64_t to)
{
	return resident_run(e, f, from, to, true) == to - from;
}

static uint64_t tripwire(struct pf_engine *e, struct pf_efile *f,
			 uint64_t off)
{
	uint64_t limit = (uint64_t)MAX_DEPTH * e->plan.max_window;
	unsigned n = pf_tracker_count(f->tracker);

	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *st = pf_tracker_stream(f->tracker, i);

		if (st->pattern != PF_PAT_SEQUENTIAL || off <= st->next_off ||
		    off - st->next_off > limit)
			continue;
		if (pushed_between(e, f, st->next_off, off))
			return st->next_off;
	}
	return off;
}

/* ---- read-ahead ------------------------------------------------------ */


/* Fetch the planner's ranges for stream @st that are not in memory yet. */
static void plan_stream(struct pf_engine *e, struct pf_efile *f,
			const struct pf_stream *st, struct todo *td)
{
	struct pf_extent ext[MAX_EXTENTS];
	struct sslot *s = slot_get(f, st->id);
	uint64_t issued = e->tot.bytes_prefetched;
	struct run run = { 0 };
	struct pf_plan_cfg pc;
	uint64_t horizon;
	unsigned n;

	if (!s)
		return;
	pc = stream_plan(e, s);
	n = pf_plan(st, &pc, f->size, ext, MAX_EXTENTS);
	if (st->pattern == PF_PAT_SEQUENTIAL && !f->next_asked) {
		/*
		 * Once the windows reach past the end, read ahead in the next
		 * file: one window, at most two of the smallest, enough to
		 * cover the new stream's first batch until it is learned (a
		 * next file that is not read costs no more than that).
		 */
		uint64_t win = pf_plan_window(st, &pc);
		uint64_t want = win < 2 * pc.min_window ? win :
							  2 * pc.min_window;

		if (st->next_off + pc.windows * win > f->size)
			next_ask(e, f, want);
	}
	if (n == 0 && st->pattern == PF_PAT_UNKNOWN && st->reads &&
	    st->bytes == st->next_off && st->next_off < e->plan.min_window &&
	    st->next_off < f->size) {
		/*
		 * A reader that started at the beginning of the file and has
		 * read it contiguously so far is almost always reading it
		 * through: one window ahead before the tracker is sure, so
		 * the first batch of every file does not wait READ by READ.
		 */
		ext[0].off = st->next_off;
		ext[0].len = e->plan.min_window;
		if (ext[0].len > f->size - ext[0].off)
			ext[0].len = f->size - ext[0].off;
		n = 1;
	}
	if (n == 0)
		return;
	run.pushable = e->push_fn && st->pattern == PF_PAT_SEQUENTIAL;
	if (st->pattern == PF_PAT_SEQUENTIAL) {
		/* whole blocks: the reader's frontier may sit mid-block */
		uint64_t start = ext[0].off & ~(uint64_t)(e->bs - 1);
		uint64_t end = ext[0].off + ext[0].len;

		end = (end + e->bs - 1) & ~(uint64_t)(e->bs - 1);
		if (end > f->size)
			end = f->size;
		ext[0].off = start;
		ext[0].len = end - start;
	}
	horizon = ext[n - 1].off + ext[n - 1].len;
	/* what was planned before and is still ahead need not be looked at */
	if (s->planned_upto < st->next_off || s->planned_upto > horizon)
		s->planned_upto = st->next_off;
	/*
	 * Once the batch is known, windows are refilled when the reader has
	 * consumed a batch, i.e. as its compute starts, so that the backend
	 * I/O overlaps the compute rather than the reading of the next batch
	 * (on a small machine the two compete for the CPUs).  Less than one
	 * window planned ahead refills at once.
	 */
	if (st->batch && st->bursts > 0) {
		uint64_t win = pf_plan_window(st, &e->plan);

		if (st->burst_bytes >= st->batch ||
		    s->planned_upto < st->next_off + win)
			s->refill_until = horizon;
		if (s->refill_until < horizon)
			horizon = s->refill_until;
	}
	if (st->pattern == PF_PAT_SEQUENTIAL) {
		/* a window ends at a block boundary: no partial blocks */
		horizon = (horizon + e->bs - 1) & ~(uint64_t)(e->bs - 1);
	}
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = ext[i].off;
		uint64_t end = ext[i].off + ext[i].len;

		if (end > horizon)
			end = horizon;
		if (end <= s->planned_upto)
			continue;
		if (off < s->planned_upto)
			off = s->planned_upto;
		while (off < end) {
			uint64_t idx = off >> e->bshift;
			uint64_t bstart = idx << e->bshift;
			uint32_t lo = (uint32_t)(off - bstart);
			uint32_t hi = end - bstart < e->bs ?
					      (uint32_t)(end - bstart) : e->bs;
			struct block *b;
			uint32_t flo;
			uint32_t fhi;

			if (!run.f && e->inflight + e->queued >=
					      e->cfg.max_inflight)
				goto out;
			b = block_find(e, f, idx);
			if (b && block_covers(b, lo, hi)) {
				run_close(e, &run, td);
				off = bstart + hi;
				s->planned_upto = off;
				continue;
			}
			/* a block being filled or read: look again later,
			 * its fetch may not cover what is planned here */
			if (b && (b->busy || b->refs))
				goto out;
			if (!b) {
				b = block_new(e, f, idx, false);
				if (!b)
					goto out;
			}
			fetch_range(b, lo, hi, &flo, &fhi);
			if (!run_add(e, &run, f, b, flo, fhi, true, st->id,
				     td)) {
				block_idle(e, b);
				goto out;
			}
			off = bstart + hi;
			s->planned_upto = off;
		}
	}
out:
	run_close(e, &run, td);
	if (pf_trace_on() && e->tot.bytes_prefetched != issued)
		trace_plan(e, f, st, s, e->tot.bytes_prefetched - issued);
}

static void plan_file(struct pf_engine *e, struct pf_efile *f,
		      struct todo *td)
{
	unsigned n;

	if (!e->cfg.prefetch || !f->tracker || !f->cur || e->stopping)
		return;
	n = pf_tracker_count(f->tracker);
	for (unsigned i = 0; i < n; i++)
		plan_stream(e, f, pf_tracker_stream(f->tracker, i), td);
}

void pf_engine_read(struct pf_efile *f, uint64_t off, size_t size,
		    pf_reply_fn reply, void *req)
{
	struct pf_engine *e = f->e;
	struct {
		struct pread p;
		struct block *blk[MAX_READ_BLOCKS];
	} st;
	struct pread *p = &st.p;
	struct todo td = { 0 };
	const struct pf_stream *stream = NULL;
	uint64_t now = pf_now_ns();

	if (size > (uint64_t)MAX_READ_BLOCKS << e->bshift) {
		reply(req, NULL, 0, EINVAL);
		return;
	}
	memset(p, 0, sizeof(*p));
	p->file = f;
	p->off = off;
	p->size = size;
	p->reply = reply;
	p->req = req;
	p->t0 = now;
	p->cap = MAX_READ_BLOCKS;

	pthread_mutex_lock(&e->lock);
	if (f->tracker) {
		uint64_t from = e->push_fn ? tripwire(e, f, off) : off;

		stream = pf_tracker_observe(f->tracker, from,
					    off + size - from, now);
		p->stream = stream->id;
		slot_get(f, stream->id);
	}
	if (!drive(e, p, &td)) {
		if (!pread_park(e, p)) {
			pf_err("out of memory parking a read");
			abort();
		}
		p = NULL;
	}
	if (stream && !e->stopping)
		plan_stream(e, f, stream, &td);
	pthread_mutex_unlock(&e->lock);
	if (p) {
		p->wnext = td.reply;
		td.reply = p;
	}
	todo_run(e, &td);
}

/* ---- files ----------------------------------------------------------- */

/* A new file with one reference, not yet on e->files; takes @path. */
static struct pf_efile *efile_alloc(struct pf_engine *e, char *path,
				    uint64_t tag)
{
	struct pf_efile *f = path ? calloc(1, sizeof(*f)) : NULL;

	if (!f) {
		free(path);
		return NULL;
	}
	f->path = path;
	f->e = e;
	f->tag = tag;
	f->refs = 1;
	list_init(&f->blocks);
	return f;
}

struct pf_efile *pf_efile_new(struct pf_engine *e, const char *path,
			      uint64_t tag)
{
	struct pf_efile *f = efile_alloc(e, strdup(path), tag);

	if (!f)
		return NULL;
	pthread_mutex_lock(&e->lock);
	/* a file the engine opened ahead of its reader: that one */
	for (struct list *l = e->files.next; e->nghosts && l != &e->files;
	     l = l->next) {
		struct pf_efile *g = container_of(l, struct pf_efile, node);

		if (g->tag == 0 && g->ghost && strcmp(g->path, path) == 0) {
			g->tag = tag;
			g->refs++;
			pthread_mutex_unlock(&e->lock);
			free(f->path);
			free(f);
			return g;
		}
	}
	list_add_tail(&e->files, &f->node);
	pthread_mutex_unlock(&e->lock);
	return f;
}

/* Under the lock: free @f if nothing refers to it any more. */
static void efile_maybe_free(struct pf_engine *e, struct pf_efile *f)
{
	if (f->refs || f->opens || f->fetches)
		return;
	file_drop_blocks(e, f);
	list_del(&f->node);
	pf_tracker_free(f->tracker);
	free(f->slots);
	free(f->path);
	free(f);
}

void pf_efile_put(struct pf_efile *f)
{
	struct pf_engine *e = f->e;

	pthread_mutex_lock(&e->lock);
	f->refs--;
	efile_maybe_free(e, f);
	pthread_mutex_unlock(&e->lock);
}

int pf_efile_open(struct pf_efile *f, struct stat *st)
{
	return efile_open(f, st, false);
}

static int efile_open(struct pf_efile *f, struct stat *st, bool ghost)
{
	struct pf_engine *e = f->e;
	struct pf_bfile *bf = NULL;
	struct bref *r;
	int changed = 0;
	int ret;

	pthread_mutex_lock(&e->lock);
	if (!ghost && f->ghost == GHOST_OPEN) {
		/*
		 * Opened ahead by the engine: the reader's open is a new
		 * open all the same and sees the file as it is now.  Its
		 * blocks stay if the version did not change.
		 */
		ghost_release(e, f);
	} else if (!ghost && f->ghost == GHOST_OPENING) {
		/* the next-file thread lets its open go when it returns */
		f->ghost = GHOST_NONE;
	}
	if (f->opens) {
		f->opens++;
		st->st_size = (off_t)f->size;
		st->st_mtim = f->mtime;
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	pthread_mutex_unlock(&e->lock);

	/* the backend open may block: not under the lock */
	ret = e->be->ops->open(e->be, f->path, &bf, st);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r) {
		e->be->ops->close(e->be, bf);
		return -ENOMEM;
	}
	r->be = e->be;
	r->bf = bf;
	r->refs = 1;

	pthread_mutex_lock(&e->lock);
	if (f->opens) {
		/* another thread opened it meanwhile: use its generation */
		f->opens++;
		st->st_size = (off_t)f->size;
		st->st_mtim = f->mtime;
		pthread_mutex_unlock(&e->lock);
		bref_put(r);
		return 0;
	}
	if (f->have_version && (f->size != (uint64_t)st->st_size ||
				f->mtime.tv_sec != st->st_mtim.tv_sec ||
				f->mtime.tv_nsec != st->st_mtim.tv_nsec)) {
		pf_info("%s changed since it was cached: dropping its blocks",
			f->path);
		/* a push of the old bytes must not land after the kernel
		 * drops the page cache for this open */
		while (e->pushing == f)
			pthread_cond_wait(&e->push_cond, &e->lock);
		file_drop_blocks(e, f);
		pf_tracker_free(f->tracker);
		f->tracker = NULL;
		changed = 1;
	}
	f->size = (uint64_t)st->st_size;
	f->mtime = st->st_mtim;
	f->have_version = true;
	if (!f->tracker && e->cfg.prefetch) {
		f->tracker = pf_tracker_new(&e->cfg.pattern);
		free(f->slots);
		f->nslots = e->cfg.pattern.max_streams;
		f->slots = calloc(f->nslots, sizeof(*f->slots));
		if (!f->tracker || !f->slots) {
			pf_tracker_free(f->tracker);
			f->tracker = NULL;
			free(f->slots);
			f->slots = NULL;
			f->nslots = 0;
		}
	}
	f->cur = r;
	f->opens = 1;
	f->next_asked = false;
	if (pf_trace_on() && f->tag)
		pf_trace_file(f->tag, f->path);
	pthread_mutex_unlock(&e->lock);
	return changed;
}

void pf_efile_close(struct pf_efile *f)
{
	struct pf_engine *e = f->e;
	struct bref *r = NULL;

	pthread_mutex_lock(&e->lock);
	if (--f->opens == 0) {
		r = f->cur;
		f->cur = NULL;
		bref_put(r);
	}
	efile_maybe_free(e, f);
	pthread_mutex_unlock(&e->lock);
}

/* ---- the next file ----------------------------------------------------- */

/*
 * Datasets are mostly shards read one after another in name order (the
 * order of sorted(os.listdir()), of glob, of WebDataset's brace lists), and
 * every new shard would start cold: its reader waits a first-byte latency
 * or more for its first batch.  So when the windows of a sequential stream
 * reach past the end of its file, the next file of the same directory (the
 * smallest name after it, in byte order, regular and not empty) is opened
 * by the engine itself, a "ghost" with no reader yet, and the rest of the
 * windows are read ahead there.  The reader's pf_efile_new() finds the
 * ghost by path, its pf_efile_open() takes over the open (and learns
 * whether the file changed), and the ghost's own open is dropped.
 *
 * Listing and opening may block (a listing request, a HEAD), so one thread
 * of the engine does them; the read-ahead is planned under the lock like
 * any other and continues as fetches complete.  At most MAX_GHOSTS files
 * are held open this way: a new one lets the oldest go (its blocks are
 * unread read-ahead, the first memory evicted, counted as unused).
 */
#define NEXT_LIST_NS (10ull * 1000000000ull) /* a listing is reused 10 s */

struct next_req {
	struct next_req *next;
	uint64_t want;		/* bytes to read ahead in the next file */
	char path[];		/* of the file whose end was reached */
};

struct names {
	char **v;
	size_t n;
	size_t cap;
};

/* Under the lock: ask the next-file thread for @f's successor. */
static void next_ask(struct pf_engine *e, struct pf_efile *f, uint64_t want)
{
	size_t len = strlen(f->path);
	struct next_req *r;

	f->next_asked = true;
	if (!e->next_running || e->stopping || f->ghost)
		return;
	r = malloc(sizeof(*r) + len + 1);
	if (!r)
		return;
	memcpy(r->path, f->path, len + 1);
	r->want = want;
	r->next = e->nextq;
	e->nextq = r;
	pthread_cond_signal(&e->next_cond);
}

/* Under the lock: plan the read-ahead of ghost @f that is still missing. */
static void ghost_plan(struct pf_engine *e, struct pf_efile *f,
		       struct todo *td)
{
	struct run run = { 0 };
	uint64_t off = f->ghost_upto;

	while (off < f->ghost_want && !e->stopping) {
		uint64_t idx = off >> e->bshift;
		uint32_t len = block_len(e, f, idx);
		struct block *b;
		uint32_t flo;
		uint32_t fhi;

		if (!run.f && e->inflight + e->queued >= e->cfg.max_inflight)
			break;
		b = block_find(e, f, idx);
		if (b && block_covers(b, 0, len)) {
			run_close(e, &run, td);
			off = (idx + 1) << e->bshift;
			continue;
		}
		if (b && (b->busy || b->refs))
			break;
		if (!b) {
			b = block_new(e, f, idx, false);
			if (!b)
				break;
		}
		fetch_range(b, 0, len, &flo, &fhi);
		if (!run_add(e, &run, f, b, flo, fhi, true, 0, td)) {
			block_idle(e, b);
			break;
		}
		off = (idx + 1) << e->bshift;
	}
	f->ghost_upto = off;
	run_close(e, &run, td);
}

static void ghosts_plan(struct pf_engine *e, struct todo *td)
{
	for (unsigned i = 0; i < e->nghosts; i++) {
		struct pf_efile *g = e->ghosts[i];

		if (g->ghost_upto < g->ghost_want)
			ghost_plan(e, g, td);
	}
}

/* Under the lock: drop the engine's open and reference of ghost @f. */
static void ghost_release(struct pf_engine *e, struct pf_efile *f)
{
	unsigned i;

	for (i = 0; i < e->nghosts && e->ghosts[i] != f; i++)
		;
	if (i < e->nghosts) {
		memmove(&e->ghosts[i], &e->ghosts[i + 1],
			(e->nghosts - i - 1) * sizeof(e->ghosts[0]));
		e->nghosts--;
	}
	f->ghost = GHOST_NONE;
	if (--f->opens == 0) {
		bref_put(f->cur);
		f->cur = NULL;
	}
	f->refs--;
	efile_maybe_free(e, f);
}

static int names_add(void *arg, const char *name, const struct stat *st)
{
	struct names *ns = arg;

	if (!S_ISREG(st->st_mode) || st->st_size == 0)
		return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return 1;
		ns->v = v;
		ns->cap = cap;
	}
	ns->v[ns->n] = strdup(name);
	if (!ns->v[ns->n])
		return 1;
	ns->n++;
	return 0;
}

static void names_clear(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	ns->n = 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Under the lock: the file at @path as a ghost being opened, with a
 * reference taken, or NULL when it needs none (a reader has it open, it is
 * a ghost already, its first block is in memory) or on allocation failure.
 * Takes @path.
 */
static struct pf_efile *ghost_get(struct pf_engine *e, char *path)
{
	struct pf_efile *f = NULL;

	for (struct list *l = e->files.next; l != &e->files; l = l->next) {
		struct pf_efile *c = container_of(l, struct pf_efile, node);

		if (strcmp(c->path, path) == 0) {
			f = c;
			break;
		}
	}
	if (f) {
		free(path);
		if (f->opens || f->ghost || block_find(e, f, 0))
			return NULL;
		f->refs++;
	} else {
		f = efile_alloc(e, path, 0);
		if (!f)
			return NULL;
		list_add_tail(&e->files, &f->node);
	}
	f->ghost = GHOST_OPENING;
	return f;
}

/* On the next-file thread, lock not held. */
static void next_open(struct pf_engine *e, const struct next_req *r,
		      struct names *ns, char **dir, uint64_t *listed)
{
	const char *slash = strrchr(r->path, '/');
	size_t dlen = slash ? (size_t)(slash - r->path) : 0;
	const char *base = slash ? slash + 1 : r->path;
	uint64_t now = pf_now_ns();
	struct todo td = { 0 };
	struct pf_efile *f;
	struct stat st;
	char *path;
	size_t lo = 0;
	size_t hi;
	int ret;

	if (!*dir || strlen(*dir) != dlen || memcmp(*dir, r->path, dlen) ||
	    now - *listed > NEXT_LIST_NS) {
		names_clear(ns);
		free(*dir);
		*dir = strndup(r->path, dlen);
		if (!*dir)
			return;
		if (e->be->ops->readdir(e->be, *dir, names_add, ns) < 0) {
			names_clear(ns);
			free(*dir);
			*dir = NULL;
			return;
		}
		if (ns->n)
			qsort(ns->v, ns->n, sizeof(*ns->v), name_cmp);
		*listed = now;
	}
	/* the first name after @base */
	hi = ns->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ns->v[mid], base) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ns->n)
		return;
	if (dlen)
		ret = asprintf(&path, "%s/%s", *dir, ns->v[lo]);
	else
		ret = asprintf(&path, "%s", ns->v[lo]);
	if (ret < 0)
		return;

	pthread_mutex_lock(&e->lock);
	if (e->stopping || e->next_stop) {
		free(path);
		f = NULL;
	} else {
		f = ghost_get(e, path);
	}
	pthread_mutex_unlock(&e->lock);
	if (!f)
		return;
	ret = efile_open(f, &st, true);

	pthread_mutex_lock(&e->lock);
	if (ret < 0) {
		f->ghost = GHOST_NONE;
		f->refs--;
		efile_maybe_free(e, f);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (f->ghost != GHOST_OPENING || e->stopping || e->next_stop) {
		/* a reader opened it meanwhile, or shutdown: not needed */
		ghost_release(e, f);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	f->ghost = GHOST_OPEN;
	f->ghost_upto = 0;
	f->ghost_want = r->want < f->size ? r->want : f->size;
	if (e->nghosts == MAX_GHOSTS)
		ghost_release(e, e->ghosts[0]);
	e->ghosts[e->nghosts++] = f;
	e->tot.next_files++;
	pf_debug("next file: %s opened ahead, %" PRIu64 " bytes read ahead",
		 f->path, f->ghost_want);
	ghost_plan(e, f, &td);
	pthread_mutex_unlock(&e->lock);
	todo_run(e, &td);
}

static void *next_main(void *arg)
{
	struct pf_engine *e = arg;
	struct names ns = { 0 };
	uint64_t listed = 0;
	char *dir = NULL;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		struct next_req *r;

		while (!e->nextq && !e->next_stop)
			pthread_cond_wait(&e->next_cond, &e->lock);
		if (e->next_stop)
			break;
		r = e->nextq;
		e->nextq = r->next;
		pthread_mutex_unlock(&e->lock);
		next_open(e, r, &ns, &dir, &listed);
		free(r);
		pthread_mutex_lock(&e->lock);
	}
	while (e->nextq) {
		struct next_req *r = e->nextq;

		e->nextq = r->next;
		free(r);
	}
	pthread_mutex_unlock(&e->lock);
	names_clear(&ns);
	free(ns.v);
	free(dir);
	return NULL;
}

/* Stops the next-file thread and lets every ghost go. */
static void next_stop(struct pf_engine *e)
{
	if (e->next_running) {
		pthread_mutex_lock(&e->lock);
		e->next_stop = true;
		pthread_cond_broadcast(&e->next_cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->next_thread, NULL);
		e->next_running = false;
	}
	pthread_mutex_lock(&e->lock);
	while (e->nghosts)
		ghost_release(e, e->ghosts[0]);
	pthread_mutex_unlock(&e->lock);
}

/* ---- engine ---------------------------------------------------------- */

int pf_engine_new(const struct pf_engine_cfg *cfg, struct pf_backend *be,
		  struct pf_engine **out)
{
	struct pf_engine *e;
	size_t nbufs;
	size_t buckets = 1024;
	int ret;

	if (cfg->block_size < PAGE_BYTES ||
	    (cfg->block_size & (cfg->block_size - 1)) ||
	    cfg->block_size > (16u << 20) ||
	    cfg->fetch_size < cfg->block_size || cfg->max_inflight == 0 ||
	    cfg->prefetch_batches < 2)
		return -EINVAL;
	nbufs = cfg->max_memory / cfg->block_size;
	if (nbufs < 2u * (cfg->fetch_size / cfg->block_size + 2))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->be = be;
	e->bs = (uint32_t)cfg->block_size;
	while ((1u << e->bshift) < e->bs)
		e->bshift++;
	e->plan.windows = cfg->prefetch_batches;
	e->plan.min_window = cfg->min_window;
	e->plan.max_window = cfg->max_window;
	while (buckets < 2 * nbufs)
		buckets <<= 1;
	e->hash = calloc(buckets, sizeof(*e->hash));
	if (!e->hash) {
		ret = -ENOMEM;
		goto out_free;
	}
	e->hmask = buckets - 1;
	ret = pf_pool_new(cfg->block_size, nbufs, &e->pool);
	if (ret < 0)
		goto out_hash;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->push_cond, NULL);
	pthread_cond_init(&e->idle_cond, NULL);
	list_init(&e->lru_read);
	list_init(&e->lru_unread);
	list_init(&e->files);
	e->tot.memory_max = (uint64_t)nbufs * cfg->block_size;
	pthread_cond_init(&e->next_cond, NULL);
	if (cfg->prefetch && cfg->next_file && be->ops->readdir &&
	    pthread_create(&e->next_thread, NULL, next_main, e) == 0)
		e->next_running = true;
	*out = e;
	return 0;

out_hash:
	free(e->hash);
out_free:
	free(e);
	return ret;
}

void pf_engine_quiesce(struct pf_engine *e)
{
	struct fetch *q;

	/*
	 * Fetches still queued for a free slot are never sent: they complete
	 * here with -ECANCELED (their waiters get the error), so shutdown
	 * waits only for the max_inflight reads the backend already has.
	 * Counted as in flight, as fetch_done() expects.
	 */
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_mutex_unlock(&e->lock);
	next_stop(e);
	pthread_mutex_lock(&e->lock);
	q = e->queue;
	e->queue = NULL;
	e->queue_tail = NULL;
	e->inflight += e->queued;
	e->queued = 0;
	pthread_mutex_unlock(&e->lock);
	while (q) {
		struct fetch *next = q->qnext;

		fetch_done(&q->bio, -ECANCELED);
		q = next;
	}
	pthread_mutex_lock(&e->lock);
	while (e->inflight + e->queued)
		pthread_cond_wait(&e->idle_cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

void pf_engine_free(struct pf_engine *e)
{
	if (!e)
		return;
	next_stop(e);
	while (!list_empty(&e->files)) {
		struct pf_efile *f = container_of(e->files.next,
						  struct pf_efile, node);

		f->refs = 0;
		f->opens = 0;
		if (f->cur) {
			bref_put(f->cur);
			f->cur = NULL;
		}
		f->fetches = 0;
		efile_maybe_free(e, f);
	}
	pf_engine_stop_push(e);
	pf_pool_free(e->pool);
	free(e->hash);
	pthread_cond_destroy(&e->push_cond);
	pthread_cond_destroy(&e->idle_cond);
	pthread_cond_destroy(&e->next_cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void pf_engine_totals(struct pf_engine *e, struct pf_engine_totals *t)
{
	pthread_mutex_lock(&e->lock);
	*t = e->tot;
	t->inflight = e->inflight + e->queued;
	t->memory_used = (uint64_t)pf_pool_in_use(e->pool) * e->bs;
	pthread_mutex_unlock(&e->lock);
}

/* ---- stats ----------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t len;
	size_t cap;
	bool oom;
};

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			sb->oom = true;
			return;
		}
		if ((size_t)n < sb->cap - sb->len) {
			sb->len += (size_t)n;
			return;
		}
		char *ns = realloc(sb->s, sb->cap * 2 + (size_t)n);

		if (!ns) {
			sb->oom = true;
			return;
		}
		sb->s = ns;
		sb->cap = sb->cap * 2 + (size_t)n;
	}
}

static void sb_put(void *arg, const char *s, size_t n)
{
	sb_printf(arg, "%.*s", (int)n, s);
}

/* A file name as a JSON string (see pf_json_quote()). */
static void sb_json_str(struct sbuf *sb, const char *str)
{
	pf_json_quote(str, sb_put, sb);
}

/* Bytes of @st's plan that are in memory, in order, up to the first gap. */
static uint64_t ready_ahead(struct pf_engine *e, struct pf_efile *f,
			    const struct pf_stream *st)
{
	struct pf_extent ext[MAX_EXTENTS];
	struct pf_plan_cfg pc = stream_plan(e, slot_find(f, st->id));
	unsigned n = pf_plan(st, &pc, f->size, ext, MAX_EXTENTS);
	uint64_t ready = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t got = resident_run(e, f, ext[i].off,
					    ext[i].off + ext[i].len, false);

		ready += got;
		if (got < ext[i].len)
			break;
	}
	return ready;
}

static bool recently_read(struct pf_efile *f, uint64_t now)
{
	unsigned n = pf_tracker_count(f->tracker);

	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *st = pf_tracker_stream(f->tracker, i);

		if (now - st->last_ns < 60ull * 1000000000u)
			return true;
	}
	return false;
}

static void stats_stream(struct sbuf *sb, struct pf_engine *e,
			 struct pf_efile *f, const struct pf_stream *st,
			 bool *first)
{
	struct sslot *s = slot_find(f, st->id);
	uint64_t win = pf_plan_window(st, &e->plan);
	uint64_t ready = e->cfg.prefetch ? ready_ahead(e, f, st) : 0;
	sb_printf(sb, "%s\n    {\"file\": ", *first ? "" : ",");
	*first = false;
	sb_json_str(sb, f->path);
	sb_printf(sb,
		  ", \"stream\": %u, \"pattern\": \"%s\", "
		  "\"next_offset\": %" PRIu64 ", \"stride\": %" PRIu64
		  ", \"record\": %" PRIu64 ", \"batch\": %" PRIu64
		  ", \"window\": %" PRIu64 ", \"windows_ahead\": %.2f"
		  ", \"reads\": %" PRIu64 ", \"hits\": %" PRIu64
		  ", \"misses\": %" PRIu64 ", \"waits\": %" PRIu64
		  ", \"wait_ms\": %.3f, \"bytes_fetched\": %" PRIu64
		  ", \"bytes_served\": %" PRIu64
		  ", \"bytes_unused\": %" PRIu64 ", \"inflight\": %u}",
		  st->id, pf_pattern_name(st->pattern), st->next_off,
		  st->stride, st->record, st->batch, win,
		  win ? (double)ready / (double)win : 0.0, st->reads,
		  s ? s->hits : 0, s ? s->misses : 0, s ? s->waits : 0,
		  s ? (double)s->wait_ns / 1e6 : 0.0,
		  s ? s->bytes_fetched : 0, s ? s->bytes_served : 0,
		  s ? s->bytes_unused : 0, s ? s->inflight : 0);
}

char *pf_engine_stats_json(struct pf_engine *e, const char *backend_desc)
{
	struct sbuf sb = { 0 };
	struct pf_engine_totals t;
	bool first = true;
	uint64_t now;

	sb.cap = 4096;
	sb.s = malloc(sb.cap);
	if (!sb.s)
		return NULL;
	pf_engine_totals(e, &t);
	sb_printf(&sb, "{\n  \"backend\": ");
	sb_json_str(&sb, backend_desc);
	if (e->be->ops->stats_json) {
		char bs[1024];

		e->be->ops->stats_json(e->be, bs, sizeof(bs));
		sb_printf(&sb, ",\n  \"transport\": %s", bs);
	}
	sb_printf(&sb,
		  ",\n  \"prefetch\": %s,\n  \"push\": %s,\n"
		  "  \"block_size\": %u,\n"
		  "  \"fetch_size\": %" PRIu64 ",\n  \"max_inflight\": %u,\n"
		  "  \"prefetch_batches\": %u,\n"
		  "  \"totals\": {\"reads\": %" PRIu64 ", \"hits\": %" PRIu64
		  ", \"misses\": %" PRIu64 ", \"waits\": %" PRIu64
		  ", \"wait_ms\": %.3f, \"bytes_served\": %" PRIu64
		  ", \"bytes_fetched\": %" PRIu64
		  ", \"bytes_prefetched\": %" PRIu64
		  ", \"bytes_unused\": %" PRIu64 ", \"bytes_pushed\": %" PRIu64
		  ", \"next_files\": %" PRIu64 ", \"fetches\": %" PRIu64
		  ", \"fetch_errors\": %" PRIu64 ", \"inflight\": %u"
		  ", \"memory_used\": %" PRIu64 ", \"memory_max\": %" PRIu64
		  "},\n  \"streams\": [",
		  e->cfg.prefetch ? "true" : "false",
		  e->push_fn ? "true" : "false", e->bs,
		  e->cfg.fetch_size, e->cfg.max_inflight,
		  e->cfg.prefetch_batches, t.reads, t.hits, t.misses, t.waits,
		  (double)t.wait_ns / 1e6, t.bytes_served, t.bytes_fetched,
		  t.bytes_prefetched, t.bytes_unused, t.bytes_pushed,
		  t.next_files, t.fetches,
		  t.fetch_errors, t.inflight, t.memory_used, t.memory_max);
	now = pf_now_ns();
	pthread_mutex_lock(&e->lock);
	for (struct list *l = e->files.next; l != &e->files; l = l->next) {
		struct pf_efile *f = container_of(l, struct pf_efile, node);
		unsigned n;

		/* open files, and closed ones read in the last minute */
		if (!f->tracker || (!f->opens && !recently_read(f, now)))
			continue;
		n = pf_tracker_count(f->tracker);
		for (unsigned i = 0; i < n; i++)
			stats_stream(&sb, e, f,
				     pf_tracker_stream(f->tracker, i),
				     &first);
	}
	pthread_mutex_unlock(&e->lock);
	sb_printf(&sb, "\n  ]\n}\n");
	if (sb.oom) {
		free(sb.s);
		return NULL;
	}
	return sb.s;
}

/* ---- tracing (-o trace, see pf_trace.h); all under the lock -------------- */

static void trace_counters(struct pf_engine *e, uint64_t now)
{
	pf_trace_counters(now, e->inflight, e->queued,
			  (uint64_t)pf_pool_in_use(e->pool) * e->bs);
}

static void trace_read(struct pf_efile *f, const struct pread *p,
		       uint64_t now)
{
	const struct pf_stream *st = f->tracker && p->stream ?
		pf_tracker_find(f->tracker, p->stream) : NULL;
	struct pf_trace_read r = {
		.tag = f->tag,
		.stream = p->stream,
		.pattern = st ? (int)st->pattern : PF_PAT_UNKNOWN,
		.off = p->off,
		.size = p->size,
		.t0 = p->t0,
		.t1 = now,
		.waited = p->waited,
		.missed = p->missed,
		.wait_off = p->wait_off,
		.err = p->err,
	};

	pf_trace_read(&r);
}

static void trace_fetch(struct pf_engine *e, const struct fetch *ft,
			int64_t res)
{
	uint64_t now = pf_now_ns();
	struct pf_trace_fetch t = {
		.tag = ft->file->tag,
		.stream = ft->stream,
		.prefetch = ft->prefetch,
		.off = ft->off,
		.len = ft->len,
		.res = res,
		.t0 = ft->t0 ? ft->t0 : now,
		.t1 = now,
	};

	pf_trace_fetch(&t);
	trace_counters(e, now);
}

static void trace_plan(struct pf_engine *e, struct pf_efile *f,
		       const struct pf_stream *st, const struct sslot *s,
		       uint64_t issued)
{
	struct pf_plan_cfg pc = stream_plan(e, s);
	struct pf_trace_plan t = {
		.tag = f->tag,
		.stream = st->id,
		.pattern = (int)st->pattern,
		.t = pf_now_ns(),
		.next_off = st->next_off,
		.batch = st->batch,
		.window = pf_plan_window(st, &pc),
		.depth = pc.windows,
		.ahead = s->planned_upto > st->next_off ?
				 s->planned_upto - st->next_off : 0,
		.issued = issued,
	};

	pf_trace_plan(&t);
}
