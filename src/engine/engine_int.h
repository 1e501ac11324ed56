/*
 * engine_int.h - the engine's private structures, shared by its files (not
 * installed; the public contract is pf_engine.h).
 *
 * The engine is one data path cut into files along it:
 *   read.c       a READ: look up its blocks, park it, answer it
 *   read_deadline.c  a READ parked past read_timeout_ns gets EIO
 *   cache.c      blocks: the hash, the LRUs, buffers and eviction
 *   cover.c      pf_cover_range(), the one walk over a range's blocks that
 *                the READ path and every planner use
 *   fetch.c      backend reads: fetch builders, the in-flight queue and
 *                completions
 *   readahead.c  the windows planned ahead of each stream (the policy is
 *                pf_plan_ahead(), plan.c)
 *   push.c       the pusher thread and the tripwires
 *   efile.c      files: open generations, versions, references
 *   stats.c, trace.c  the stats file and the trace
 *   engine.c     create, quiesce, free
 * The features across files live in ahead/ (ahead_int.h lists them: the
 * opener pool, the next file and the files opened ahead, the learner and
 * the fill, declared plans); the core calls them only through the hooks
 * of hooks.h (e->hooks), ahead/ calls the core by name.
 *
 * DESIGN
 * One mutex, e->lock, guards every block, file, tracker and queue below;
 * fields marked "set before threads start" are written by pf_engine_new()
 * (or pf_engine_start_push()) only and read without the lock.  Threads that
 * enter the engine: FUSE workers (pf_engine_read, pf_efile_*), the backend's
 * completion thread (pf_fetch_done), the pusher (push.c), the opener threads
 * (ahead/opener.c) and the hint thread (ahead/plans.c).  Each takes e->lock for
 * its bookkeeping and releases it before it calls out: the backend's
 * submit and open, the reply function, the push function.  Work found
 * under the lock is collected in a struct deferred and done after
 * unlocking (pf_fetch_deferred_run()).
 */
#ifndef PF_ENGINE_INT_H
#define PF_ENGINE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include "pf_backend.h"
#include "pf_clock.h"
#include "pf_engine.h"
#include "pf_list.h"
#include "pf_pattern.h"
#include "hooks.h"

struct pf_strbuf;

#define PAGE_BYTES 4096u
#define MAX_EXTENTS 512
#define MAX_READ_BLOCKS 1024
/* files opened ahead of their readers, at most (cfg.dirahead_files: 0 means
 * this) */
#define DEF_GHOSTS 256
enum { GHOST_NONE, GHOST_OPENING, GHOST_OPEN };
/* closed files that keep their pattern tracker, at most (efile.c) */
#define CLOSED_TRACKERS 256
/* windows kept ahead of a sequential stream at most (see grow_depth()) */
#define MAX_DEPTH 16

/* ---- structures ------------------------------------------------------ */

struct parked_read;

/* which LRU an idle block is on (cache.c) */
enum lru_kind { LRU_READ, LRU_PUSHED, LRU_UNREAD, LRU_KINDS };

/*
 * A block_size piece of a file (cache.c).  Every field is protected by
 * e->lock.  The bytes of buf are written by the backend only while the
 * block is busy (then nobody holds a reference), and read by repliers and
 * the pusher only while they hold a reference (then nobody writes them).
 */
struct block {
	struct pf_efile *file;	/* NULL once detached from its file */
	uint64_t idx;
	struct block *hnext;
	struct list lru;	/* on e->lru_read / _pushed / _unread when
				 * idle */
	struct list fnode;	/* on file->blocks while attached */
	char *buf;		/* set at creation */
	uint32_t vlo;		/* valid bytes: [vlo, vhi) */
	uint32_t vhi;
	uint32_t rlo; /* bytes READs were answered from: [rlo, rhi)
		       * (pf_cache_block_read()); a READ apart from them
		       * replaces them, so it may be less */
	uint32_t rhi;
	uint32_t refs;
	bool busy;		/* a fetch is filling it */
	bool rx;		/* while busy: its fetch's first bytes
				 * arrived (pf_bio.started) */
	uint32_t flo;		/* while busy: the bytes it fills, [flo, fhi) */
	uint32_t fhi;
	bool read_seen;		/* a READ was answered from it since its
				 * last fetch */
	bool prefetched;
	bool in_lru;
	bool pushed;		/* its bytes went to the page cache */
	bool trip;		/* pushed but for its last valid page, a
				 * tripwire no READ has read yet */
	size_t *lru_n;		/* while in_lru: e->lru_count[] of its LRU */
	unsigned stream;	/* stream that prefetched it */
	uint64_t fetch_t0;	/* while busy: when its fetch was issued */
	struct parked_read *waiters;
};

/*
 * A READ being answered (read.c).  Lives on pf_engine_read()'s stack until
 * it first parks, then on the heap (read_move_to_heap()).  Owned by the
 * thread that tries it; while parked, by the list it waits on (protected
 * by e->lock).
 */
struct parked_read {
	struct pf_efile *file;
	uint64_t off;
	size_t size;
	pf_reply_fn reply;
	void *req;
	unsigned stream;
	uint64_t t0;
	struct parked_read *wnext;
	struct block *parked;	/* whose waiter list holds it; NULL: memwait */
	uint64_t wait_off;	/* offset of the block it last parked on */
	unsigned cap;		/* room in blk[] */
	int err;
	bool waited;
	bool missed;
	bool aged;		/* it parked on a block being fetched, */
	uint64_t wait_age;	/* whose fetch had been in flight this long
				 * when the READ came (the first such) */
	bool heap;
	bool listed;		/* on e->parked (read_deadline.c) */
	struct list dnode;
	unsigned nblk;
	struct block *blk[];
};

/* The backend file handle of one open generation; fetches pin it.
 * refs is protected by e->lock. */
struct bfile_ref {
	struct pf_backend *be;
	struct pf_bfile *bf;
	unsigned refs;
};

/*
 * One backend read over contiguous parts of blocks (fetch.c).  Built under
 * e->lock by a struct fetch_builder; read-only from pf_fetch_builder_flush()
 * on, while the backend owns
 * it; then pf_fetch_done() (backend thread) and, for pushed fetches, the
 * pusher finish it.
 */
struct fetch {
	struct pf_bio bio;
	struct pf_engine *e;
	struct pf_efile *file;
	struct bfile_ref *bfref;
	uint64_t off;
	uint64_t len;
	bool prefetch;
	bool pushable;		/* read-ahead of a SEQUENTIAL stream */
	bool trip;		/* its last page is a tripwire, not pushed */
	bool fill;		/* the background fill's (PF_BIO_FILL) */
	bool cache;		/* for the backend's cache tier (PF_BIO_CACHE):
				 * done once there, its blocks dropped then */
	bool unstarted;		/* counted in its stream's unstarted */
	unsigned stream;
	unsigned nblk;
	uint64_t t0;		/* issued (only while tracing) */
	struct fetch *qnext;	/* protected by e->lock */
	struct block **blk;
	uint32_t *flo;
	struct iovec *iov;
};

/* A fetch being assembled from contiguous block parts (on the stack of
 * whoever plans, under e->lock). */
struct fetch_builder {
	struct fetch *f;
	unsigned cap;
	bool pushable;		/* for the fetches it makes */
	bool fill;		/* they are the background fill's */
	bool cache;		/* ... through the backend's cache tier */
};

/*
 * One stream of a file as the engine keeps it (f->estreams, by the
 * tracker's stream id): its accounting and its read-ahead state, beside
 * what the tracker learned of it (struct pf_stream).  Protected by
 * e->lock.
 */
struct efile_stream {
	unsigned id;		/* 0 = free */
	uint64_t hits;
	uint64_t misses;
	uint64_t waits;
	uint64_t inflight_waits;
	uint64_t wait_ns;
	uint64_t bytes_served;	/* READs' and pushed */
	uint64_t bytes_fetched;
	uint64_t bytes_unused;
	uint64_t reads_ra;	/* READs of the read-ahead's size
				 * (engine_ra_read()) */
	unsigned inflight;
	struct pf_plan_state plan; /* the planner's, between calls */
	unsigned depth;		/* windows kept ahead: cfg's, more after
				 * READs that waited for read-ahead */
	/* what grow_depth() weighs (pf_ra_depth_read_done(), pf_fetch_done())
	 */
	uint64_t fetch_min_ns;	/* fastest full read-ahead fetch of
				 * the stream, issue to completion: the
				 * store's latency unloaded; 0: none yet */
	uint64_t rate_t0;	/* when the stream passed min_window */
	uint64_t rate_off0;	/* its next_off then */
	uint64_t stall_ns;	/* since rate_t0, time with a READ waiting
				 * (overlapping waits counted once) */
	uint64_t stall_end;	/* end of the last wait counted */
	uint64_t unstarted;	/* bytes of its read-ahead fetches whose
				 * first bytes have not come yet */
	bool held; /* its plan stopped for first bytes to come:
		    * after its first window's pieces
		    * (cover_pieces()) or at its ramp cap
		    * (pf_ra_plan_stream()); pf_fetch_started() plans
		    * it again */
};

/*
 * A job of the opener pool (opener.c), embedded in the submitter's
 * request; the pool's from pf_opener_submit() until it calls fn, once, lock
 * not held: to do the job (cancel false) or, for a job never started, to
 * let go of what it holds (cancel true, from pf_opener_stop()).  Priorities in
 * the order the jobs are taken.
 */
enum { OPEN_DECLARED, OPEN_PREDICTED, OPEN_SPECULATIVE, OPEN_PRIOS };
struct opener_job;
typedef void (*opener_fn)(struct pf_engine *e, struct opener_job *j,
			  bool cancel);
struct opener_job {
	struct opener_job *next;	/* the pool's */
	opener_fn fn;
	int prio;			/* OPEN_* */
};

/* A file of the dataset (efile.c). */
struct pf_efile {
	struct pf_engine *e;	/* set at creation */
	char *path;		/* set at creation */
	uint64_t tag;		/* protected by e->lock */
	unsigned refs;		/* owners (pf_efile_new / put); protected by
				 * e->lock, as is everything below */
	unsigned opens;
	unsigned fetches;	/* fetches not yet completed */
	struct bfile_ref *cur; /* while opens > 0 */
	uint64_t size;
	struct timespec mtime;
	struct timespec ctime;	/* a POSIX rewrite that restores the mtime
				 * still has a new one */
	/* ranges whose fetch timed out, failed at once until then
	 * (cfg.read_timeout_ns; fetch.c, read.c) */
	struct {
		uint64_t off;
		uint64_t end;
		uint64_t until;
	} timed_out[2];
	bool have_version;
	struct pf_tracker *tracker;
	struct efile_stream *estreams; /* one per tracker stream, grown
					 * on demand (pf_efile_stream_get()) */
	unsigned nestreams;
	struct list blocks;
	struct list node;	/* on e->files */
	struct pf_efile *hnext;	/* on e->fhash's chain of its path */
	struct list wnode;	/* on e->wanting while the gate refused its
				 * read-ahead (fetch.c); else empty */
	struct list cnode;	/* on e->closed while on_closed */
	bool on_closed;		/* closed, its tracker kept for a while */
	/* the next file: see nextfile.c */
	bool next_asked; /* this open generation asked for its successor */
	int ghost;		/* GHOST_*: opened by the engine itself (then
				 * it holds a reference and an open), not
				 * yet by a reader */
	uint64_t ghost_upto;	/* read-ahead of a ghost: planned up to ... */
	uint64_t ghost_want;	/* ... this offset */
	/* declared plans: see hintfetch.c */
	uint64_t hint_id;	/* its path's id, 0 = not named (yet) */
	size_t hint_seen;	/* names interned when last looked up */
	unsigned hint_pending;	/* ranges of it being fetched */
	bool hint_held;		/* the plans hold a reference */
	bool hint_open;		/* the plans hold an open */
	bool hint_opening;	/* an opener job is opening it */
	struct opener_job hint_job; /* that job, while hint_opening */
	int hint_err;		/* that open failed (-errno), once */
	uint64_t ghost_ns;	/* when the engine's open of it returned */
	bool held;		/* the background fill holds an open and a
				 * reference (dirahead.c) */
	bool fill_pending;	/* on the fill's list to plan */
	bool stale;		/* a newer version of its path replaced it
				 * (pf_efile_retire()): READs fail, no open */
	/* the page cache's share (pf_engine_totals): readers' handles open
	 * (pf_efile_open/close), the READs and pushes since the first */
	unsigned readers;
	uint64_t reader_reads;
	bool reader_pushed;
	bool preload_kept;	/* a warm-up keeps a reference (preload.c) */
};

struct pf_engine {
	struct pf_engine_cfg cfg;	/* set before threads start */
	struct pf_plan_cfg plan;	/* set before threads start */
	struct pf_backend *be;		/* set before threads start */
	uint32_t bs;			/* set before threads start */
	unsigned bshift;		/* set before threads start */
	struct pf_pool *pool;		/* set before threads start; used
					 * under e->lock */
	size_t hmask;			/* set before threads start */
	pthread_mutex_t lock;
	struct block **hash;		/* protected by e->lock */
	struct list lru_read;	/* protected by e->lock: idle blocks that
				 * were read, evicted first */
	struct list lru_unread;	/* protected by e->lock: idle prefetched
				 * blocks not read yet */
	struct list lru_pushed;	/* protected by e->lock: idle blocks pushed
				 * to the page cache, not yet passed by their
				 * stream */
	size_t lru_count[LRU_KINDS]; /* protected by e->lock */
	struct list files;	/* protected by e->lock */
	struct pf_efile **fhash; /* protected by e->lock: e->files by path,
				 * chained through hnext, oldest first */
	size_t fhmask;		/* protected by e->lock */
	size_t nfiles;		/* protected by e->lock: on e->files */
	struct list closed;	/* protected by e->lock: files closed with a
				 * tracker, oldest first (efile.c) */
	unsigned nclosed;	/* protected by e->lock */
	struct parked_read *memwait; /* protected by e->lock: READs waiting for
				 * a free buffer */
	/* READs parked on the heap, for their deadline (read_deadline.c);
	 * protected by e->lock, as dl_stop */
	struct list parked;
	pthread_t dl_thread;	/* set before threads start */
	pthread_cond_t dl_cond;	/* with e->lock: parked grew, or stop */
	bool dl_running;	/* set before threads start */
	bool dl_stop;
	struct list wanting;	/* protected by e->lock: files whose
				 * streams' read-ahead pf_fetch_room() refused,
				 * served first when room frees (fetch.c) */
	struct fetch *queue;	/* protected by e->lock: demand fetches
				 * waiting for a slot */
	struct fetch *queue_tail; /* protected by e->lock */
	unsigned inflight;	/* protected by e->lock: fetches submitted
				 * to the backend */
	uint64_t inflight_bytes; /* protected by e->lock: bytes of those
				 * and of the queued ones */
	uint64_t fill_inflight;	/* protected by e->lock: bytes of the
				 * fill's fetches among them */
	uint64_t read_ahead;	/* protected by e->lock: the mount's kernel
				 * read-ahead (pf_engine_set_read_ahead()) */
	unsigned queued;	/* protected by e->lock */
	unsigned completing; /* protected by e->lock: pf_fetch_done() calls
			      * still answering READs or submitting after
			      * they unlocked (quiesce waits for them) */
	struct pf_engine_totals tot; /* protected by e->lock */
	pthread_cond_t idle_cond; /* with e->lock: nothing is in flight */
	bool stopping;		/* protected by e->lock: no more read-ahead,
				 * shutting down */
	/* the pusher (push.c) */
	pf_push_fn push_fn;	/* set before threads start (start_push) */
	void *push_arg;		/* set before threads start */
	pthread_t push_thread;	/* set before threads start */
	pthread_cond_t push_cond; /* with e->lock: pushq grew, a push
				   * ended, or stop */
	struct fetch *pushq;	/* protected by e->lock */
	struct fetch *pushq_tail; /* protected by e->lock */
	uint64_t pushq_bytes;	/* protected by e->lock */
	struct pf_efile *pushing; /* protected by e->lock: file the pusher
				   * is pushing for now */
	bool push_stop;		/* protected by e->lock */
	/* the opener pool (opener.c); set before threads start */
	struct opener *op;
	/* the next-file requests (nextfile.c) */
	bool next_running;	/* set before threads start, cleared by
				 * pf_next_stop() under e->lock: next-file and
				 * learner requests are made */
	struct next_cache *ncache; /* protected by e->lock */
	struct pf_efile **ghosts; /* protected by e->lock; max_ghosts */
	unsigned nghosts;	/* protected by e->lock */
	/* declared plans (ahead/plans.c); set before threads start */
	struct hintfetch *hf;
	unsigned max_ghosts;	/* set before threads start */
	uint64_t ghost_bytes;	/* protected by e->lock: sizes of ghosts */
	struct dirahead *da;	/* dirahead.c's state; protected by e->lock */
	struct fill *fill;	/* fill.c's state; protected by e->lock */
	uint64_t t_start;	/* set before threads start: engine_now() at
				 * pf_engine_new() (the stats' uptime) */
	struct preload_set *pl;	/* warm-ups (preload.c); protected by
				 * e->lock, made at the first */
	/* the features across files (ahead/), as the core calls them;
	 * set before threads start */
	const struct pf_engine_hooks *hooks;
};

/* What pf_cover_range() is asked to do and what it found (on the caller's
 * stack, under e->lock). */
struct cover {
	bool demand;		/* a READ's own blocks, else read-ahead */
	unsigned stream;	/* for the fetches made */
	struct parked_read *read; /* demand: pin blocks ready into its blk[] */
	struct block *wait_on;	/* demand: first block to wait for */
	bool nomem;		/* a buffer or fetch was lacking (read-ahead:
				 * it stopped there) */
	bool missed;		/* demand: a fetch was made */
	bool gated;		/* read-ahead: stopped at pf_fetch_room() */
	bool held;		/* read-ahead: stopped for first bytes to
				 * come (the first window's pieces, or
				 * ramp_cap) */
	struct efile_stream *es; /* read-ahead with a ramp cap: its stream */
	uint64_t ramp_cap;	/* read-ahead: stop when es->unstarted
				 * reaches it (0: no cap) */
	bool whole_tail;	/* demand: fetch the last block to its end */
};

/* Work collected under the lock and done after it is released. */
struct deferred {
	struct fetch *submit;	/* in the order they were built (fetch.c) */
	struct fetch *submit_tail;
	struct parked_read *reply;
};

/* ---- functions, by file; all but pf_fetch_deferred_run() under e->lock
 * ------- */

/* engine.c: pf_engine_new() is pf_engine_create() with the features'
 * hooks (ahead/ahead.c) */
int pf_engine_create(const struct pf_engine_cfg *cfg, struct pf_backend *be,
		     const struct pf_engine_hooks *hooks,
		     struct pf_engine **out);

/* cache.c */
void pf_cache_lru_remove(struct block *b);
void pf_cache_block_idle(struct pf_engine *e, struct block *b);
void pf_cache_block_read(struct pf_engine *e, struct block *b, uint64_t off,
		uint64_t end);
struct block *pf_cache_block_new(struct pf_engine *e, struct pf_efile *f,
			uint64_t idx, bool demand);
void pf_cache_file_drop_blocks(struct pf_engine *e, struct pf_efile *f);
uint64_t pf_cache_resident_run(struct pf_engine *e, struct pf_efile *f,
		      uint64_t from, uint64_t to, bool pushed);
void pf_cache_release_consumed(struct pf_engine *e, struct pf_efile *f,
	unsigned sid, uint64_t from, uint64_t to);
void pf_cache_memory(struct pf_engine *e, uint64_t *inflight, uint64_t *ahead,
		  uint64_t *reread);
void pf_cache_block_drop_cached(struct pf_engine *e, struct block *b);

/* fetch.c */
void pf_fetch_bfile_ref_put(struct bfile_ref *r);
void pf_fetch_builder_flush(struct pf_engine *e, struct fetch_builder *fb,
			 struct deferred *later);
bool pf_fetch_builder_add(struct pf_engine *e, struct fetch_builder *fb,
		       struct pf_efile *f, struct block *b, uint32_t flo,
		       uint32_t fhi, bool prefetch, unsigned stream,
		       struct deferred *later);
bool pf_fetch_builder_continues(const struct pf_engine *e,
			     const struct fetch_builder *fb, uint64_t foff,
			     uint64_t len, bool prefetch);
bool pf_fetch_room(const struct pf_engine *e, uint64_t len);
void pf_fetch_want(struct pf_engine *e, struct pf_efile *f);
void pf_fetch_range(struct block *b, uint32_t lo, uint32_t hi, uint32_t *flo,
		 uint32_t *fhi);
void pf_fetch_free(struct pf_engine *e, struct fetch *ft);
void pf_fetch_done(struct pf_bio *bio, int64_t res);
/* lock not held */
void pf_fetch_deferred_run(struct pf_engine *e, struct deferred *later);
void pf_fetch_started(struct pf_bio *bio);

/* read.c */
void pf_read_answer(struct pf_engine *e, struct parked_read *p,
		 struct deferred *later);
void pf_read_retry(struct pf_engine *e, struct parked_read *list,
		 struct deferred *later);
void pf_read_block_unpin(struct pf_engine *e, struct block *b,
		 struct deferred *later);

/* read_deadline.c: READs parked past cfg.read_timeout_ns get EIO */
int pf_read_deadline_start(struct pf_engine *e);
/* under the lock: heap READ @p parked */
void pf_read_deadline_park(struct pf_engine *e, struct parked_read *p);
/* lock not held; idempotent */
void pf_read_deadline_stop(struct pf_engine *e);

/* cover.c */
uint64_t pf_cover_range(struct pf_engine *e, struct pf_efile *f, uint64_t off,
		     uint64_t end, struct cover *c, struct fetch_builder *fb,
		     struct deferred *later);

/* readahead.c */
struct pf_plan_cfg pf_ra_stream_plan_cfg(const struct pf_engine *e,
				   const struct efile_stream *s);
void pf_ra_depth_read_done(struct pf_engine *e, const struct pf_efile *f,
		     struct efile_stream *s,
		     const struct parked_read *p, uint64_t now);
void pf_ra_depth_fetch_done(struct pf_engine *e, struct efile_stream *s,
		      const struct fetch *ft, uint64_t now);
void pf_ra_plan_stream_again(struct pf_engine *e, struct pf_efile *f,
	unsigned id, struct deferred *later);
void pf_ra_plan_stream(struct pf_engine *e, struct pf_efile *f,
		 const struct pf_stream *st, struct deferred *later);
void pf_ra_plan_file(
	struct pf_engine *e, struct pf_efile *f, struct deferred *later);

/* push.c */
bool pf_push_wanted(struct pf_engine *e, const struct fetch *ft, int err);
void pf_push_enqueue(struct pf_engine *e, struct fetch *ft);
uint64_t pf_push_tripwire(
	struct pf_engine *e, struct pf_efile *f, uint64_t off);

/* efile.c */
struct efile_stream *pf_efile_stream_find(struct pf_efile *f, unsigned id);
/* may move f->estreams: hold no other efile_stream of @f across it */
struct efile_stream *pf_efile_stream_get(struct pf_efile *f, unsigned id);
size_t pf_efile_state_bytes(const struct pf_efile *f);
struct pf_efile *pf_efile_alloc(struct pf_engine *e, char *path, uint64_t tag);
void pf_efile_link(struct pf_engine *e, struct pf_efile *f);
struct pf_efile *pf_efile_by_path(struct pf_engine *e, const char *path,
			       struct pf_efile *after);
struct pf_efile *pf_efile_lookup(struct pf_engine *e, const char *path);
void pf_efile_maybe_free(struct pf_engine *e, struct pf_efile *f);
/* lock not held */
int pf_efile_open_at_backend(struct pf_efile *f, struct stat *st, bool ghost);

/* trace.c (-o trace, see pf_trace.h) */
void pf_etrace_counters(struct pf_engine *e, uint64_t now);
void pf_etrace_read(
	struct pf_efile *f, const struct parked_read *p, uint64_t now);
void pf_etrace_fetch(struct pf_engine *e, const struct fetch *ft, int64_t res);
void pf_etrace_plan(struct pf_engine *e, struct pf_efile *f,
		const struct pf_stream *st, const struct efile_stream *s,
		uint64_t issued);

/* ---- small helpers, inline ---------------------------------------- */

/* The engine's clock (cfg.now_ns, else pf_now_ns()). */
static inline uint64_t engine_now(const struct pf_engine *e)
{
	return e->cfg.now_ns ? e->cfg.now_ns(e->cfg.now_arg) : pf_now_ns();
}

/* Backend reads at once at most, demand fetches included (fetch.c). */
static inline unsigned engine_max_requests(const struct pf_engine *e)
{
	return PF_ENGINE_MAX_REQUESTS(e->cfg.max_inflight);
}

/* The size of a READ of the mount's read-ahead, 0 if unknown; e->lock
 * held. */
static inline uint64_t engine_ra_read(const struct pf_engine *e)
{
	return e->read_ahead < PF_ENGINE_READ_MAX ? e->read_ahead
						   : PF_ENGINE_READ_MAX;
}

/* Nothing in flight, queued or being completed; e->lock held. */
static inline bool engine_idle(const struct pf_engine *e)
{
	return e->inflight + e->queued + e->completing == 0;
}

static inline size_t hash_of(const struct pf_engine *e,
			     const struct pf_efile *f, uint64_t idx)
{
	uint64_t h = (uint64_t)(uintptr_t)f * 0x9E3779B97F4A7C15ull;

	h ^= idx + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 31;
	return (size_t)h & e->hmask;
}

static inline struct block *block_find(struct pf_engine *e, struct pf_efile *f,
				       uint64_t idx)
{
	struct block *b = e->hash[hash_of(e, f, idx)];

	while (b && !(b->file == f && b->idx == idx))
		b = b->hnext;
	return b;
}

/* Bytes of the file that fall in block @idx. */
static inline uint32_t block_len(const struct pf_engine *e,
				 const struct pf_efile *f, uint64_t idx)
{
	uint64_t start = idx << e->bshift;

	if (start >= f->size)
		return 0;
	return f->size - start < e->bs ? (uint32_t)(f->size - start) : e->bs;
}

/*
 * The part of block @idx that the file's bytes [off, end) cover, as
 * offsets in the block [*lo, *hi); the range must meet the block.
 */
static inline void block_part(const struct pf_engine *e, uint64_t idx,
			      uint64_t off, uint64_t end, uint32_t *lo,
			      uint32_t *hi)
{
	uint64_t bstart = idx << e->bshift;

	*lo = off > bstart ? (uint32_t)(off - bstart) : 0;
	*hi = end - bstart < e->bs ? (uint32_t)(end - bstart) : e->bs;
}

static inline bool block_covers(const struct block *b, uint32_t lo,
				uint32_t hi)
{
	return !b->busy && b->vlo <= lo && hi <= b->vhi;
}

#endif
