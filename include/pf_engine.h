/*
 * pf_engine.h - the read path: block cache, demand fetches, read-ahead.
 *
 * The engine sits between the FUSE front end and a backend.  It keeps file
 * data in fixed-size blocks drawn from a pool bounded by max_memory, shared
 * by every reader of a file.  A READ that finds its bytes in memory is
 * answered at once; one that misses parks itself on the block it waits for
 * and is answered from the backend's completion thread when the data
 * arrives.  Each READ is also fed to the file's pattern tracker, and the
 * planner's ranges ahead of the reader's stream are fetched in fetch_size
 * pieces, at most max_inflight such backend reads at a time over the
 * engine (more when they are shorter: PF_ENGINE_MAX_REQUESTS).
 *
 * Threads: every function may be called from any thread.  One engine lock
 * guards all blocks, files and trackers; replies are always made with it
 * released.
 *
 * Ownership: the caller of pf_efile_new() owns one reference to the file
 * and drops it with pf_efile_put(); the engine frees the file and its cached
 * blocks when the last reference and the last fetch on it are gone.
 */
#ifndef PF_ENGINE_H
#define PF_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "pf_backend.h"
#include "pf_pattern.h"

struct pf_engine_cfg {
	size_t block_size;	/* cache block (power of two, >= 4 KiB) */
	uint64_t max_memory;	/* bytes of block buffers at most */
	uint64_t fetch_size;	/* bytes per backend read at most */
	unsigned max_inflight;	/* fetch_size reads in flight at most;
				 * shorter ones go up to max_inflight x
				 * fetch_size bytes (PF_ENGINE_MAX_REQUESTS) */
	unsigned prefetch_batches; /* windows kept ahead of each stream */
	int prefetch;		/* 0: demand reads only, nothing learned */
	struct pf_pattern_cfg pattern;
	uint64_t min_window;	/* window while no batch is known */
	uint64_t max_window;	/* largest window */
	int push;		/* hand read-ahead to the push callback */
	int next_file;		/* a sequential reader nearing the end of a
				 * file reads ahead into the next file of its
				 * directory (in name order), and readers that
				 * open the files of a directory in name order
				 * get the next files read ahead whole */
	int fill;		/* shuffled readers of a tree (or of one big
				 * file) that fits the cache: the rest is read
				 * in the background */
	unsigned dirahead_files;	/* files opened ahead at most (0: 256) */
	uint64_t memory_aside;	/* bytes of the -o max_memory the daemon
				 * gave other tiers (a disk cache's staging
				 * and index), not in max_memory: the fill's
				 * advice adds them */
	/*
	 * The engine's clock, monotonic nanoseconds: READ arrivals and
	 * completions as the pattern tracker sees them, wait times, ages.
	 * NULL (the default): pf_now_ns().  Tests give their own to drive
	 * time instead of sleeping.  Called from any thread that enters the
	 * engine, with or without its lock held: must be thread safe.
	 */
	uint64_t (*now_ns)(void *arg);
	void *now_arg;
	/*
	 * How long the owners and modes a plan's paths are checked against
	 * are trusted before they are asked for again (the mount's
	 * attr_timeout: the kernel's own check trusts its attributes that
	 * long).  0: each check asks.
	 */
	uint64_t attr_ttl_ns;
	/*
	 * A READ waits this long at most for its bytes, fetches, retries and
	 * refetches included, then gets EIO; and a range whose fetch failed
	 * with -ETIMEDOUT (the source's request deadline passed) fails the
	 * READs that would fetch it again with EIO at once, for as long: the
	 * kernel's retries of a failed READ (page by page) would each wait a
	 * deadline more.  0: no bound (a directory source).
	 */
	uint64_t read_timeout_ns;
};

/*
 * Backend reads in flight at once at most for max_inflight @n: read-ahead
 * shorter than fetch_size goes past @n (see src/fetch.c), demand reads
 * past read-ahead.  A backend's queue and connections are sized for this.
 */
#define PF_ENGINE_MAX_REQUESTS(n) (4u * (n))

/*
 * Who opens a plan or reads the stats: the uid and groups the kernel gave
 * for the request (fuse_req_ctx(), fuse_req_getgroups(); groups past
 * PF_CRED_GROUPS are not counted, so such a user may be denied what one
 * of them would allow).  owner: the mount's owner or root.
 */
#define PF_CRED_GROUPS 64
struct pf_engine_cred {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngroups;
	uint32_t groups[PF_CRED_GROUPS];
	bool owner;
};

/* Defaults sized for a machine with @ram_bytes of memory. */
void pf_engine_cfg_default(struct pf_engine_cfg *cfg, uint64_t ram_bytes);

struct pf_engine;
struct pf_efile;

/*
 * Called exactly once per pf_engine_read(): with the data (iov is valid
 * only during the call; iovcnt may be 0 at end of file) or with err = a
 * positive errno and no data.  May run on the caller's thread before
 * pf_engine_read() returns, or later on the backend's thread.
 */
typedef void (*pf_reply_fn)(void *req, const struct iovec *iov, int iovcnt,
			    int err);

/* The engine does not own @be; destroy the engine first. */
int pf_engine_new(const struct pf_engine_cfg *cfg, struct pf_backend *be,
		  struct pf_engine **out);
/*
 * Stops planning read-ahead, cancels (-ECANCELED) the fetches not yet sent
 * to the backend and waits until those in flight have completed and every
 * waiting READ has been answered.  For shutdown, once no new READs can
 * arrive.
 */
void pf_engine_quiesce(struct pf_engine *e);
/* After pf_engine_quiesce(); closes the engine's backend files, so the
 * backend must still exist. */
void pf_engine_free(struct pf_engine *e);

/*
 * Pushing read-ahead to the reader's side.  With cfg.push set and a push
 * function given, every read-ahead fetch of a SEQUENTIAL stream that
 * completes whole blocks is handed to @fn on the engine's pusher thread:
 * bytes [off, off + iov total) of the file tagged @tag (iov valid during
 * the call only).  The front end gives them to the kernel's page cache, so
 * the reader's read()s and page faults never reach the daemon for them.
 *
 * The last page of every fetch that ends at a half batch is held back as a
 * tripwire: the reader's READ of it tells the engine that the stream
 * consumed the pushed bytes before it, so the stream, its batch and its
 * windows move on although those bytes produced no READs.  It comes as the
 * reader finishes a batch, so the refill overlaps the reader's compute.
 *
 * @fn may block (on page locks held by READs in flight: those are answered
 * by other threads, never by the pusher).  Call before any read;
 * pf_engine_stop_push() joins the thread.
 */
typedef void (*pf_push_fn)(void *arg, uint64_t tag, const char *path,
			   uint64_t off, const struct iovec *iov, int iovcnt);
int pf_engine_start_push(struct pf_engine *e, pf_push_fn fn, void *arg);
void pf_engine_stop_push(struct pf_engine *e);

/*
 * A file of the dataset, by backend path; @tag is the caller's name for it
 * (passed to the push function).  NULL on allocation failure.  If the
 * engine already opened @path ahead of its reader (cfg.next_file), the
 * caller gets that file, with the read-ahead done so far.
 */
struct pf_efile *pf_efile_new(struct pf_engine *e, const char *path,
			      uint64_t tag);
/* One more reference to @f, for pf_efile_put(). */
void pf_efile_get(struct pf_efile *f);
void pf_efile_put(struct pf_efile *f);

/*
 * An open() of the file: opens it at the backend on the first open (and
 * pins its version; cached blocks of an older version are dropped).
 * Fills *st with the pinned size and mtime.  Returns 1 when the file
 * changed since it was last cached (the caller's own caches of it are
 * stale), else 0; -errno on failure.  Every successful call is matched by
 * one pf_efile_close().
 */
int pf_efile_open(struct pf_efile *f, struct stat *st);
void pf_efile_close(struct pf_efile *f);

/*
 * @f's version is no longer the source's, and a newer file of the same
 * path (pf_efile_new() and pf_efile_open() of it) replaces it for new
 * opens while @f's handles are still open.  From now on @f's READs fail
 * with EIO: the kernel gives the old and the new handles one page cache,
 * so the old version's bytes must not enter it again; its blocks are
 * dropped, it is read ahead and pushed no more (a push of it in progress
 * has ended when this returns), and it cannot be opened again.  Its open
 * handles still close it (pf_efile_close()).
 */
void pf_efile_retire(struct pf_efile *f);

/* A READ of @size bytes at @off of an open file.  See pf_reply_fn. */
void pf_engine_read(struct pf_efile *f, uint64_t off, size_t size,
		    pf_reply_fn reply, void *req);

/*
 * A READ the pusher's own read-ahead caused (push by read-ahead): answered
 * from the blocks in memory, unseen by the pattern tracker, the planner
 * and the blocks' read marks; EIO at once if any byte is not in memory
 * (the kernel then leaves those pages out, and the reader's own READ
 * fetches them).
 */
void pf_engine_read_self(struct pf_efile *f, uint64_t off, size_t size,
			 pf_reply_fn reply, void *req);

/*
 * Read-ahead across files (dirahead.c): the files to keep opened and read
 * ahead of one reader that opens a directory's files at @stride, one
 * every @gap_ns (the directory's interval), when an open of the store
 * takes @open_ns: two round trips of its rate, 2 to @max.
 */
unsigned pf_dirahead_ahead(uint64_t open_ns, uint64_t gap_ns, unsigned stride,
			unsigned max);

/*
 * The background fill of one file (dirahead.c): true when stream @st of
 * tracker @t (the file's) is a reader in random order for sure, not READs
 * of a reader still being learned (a strided reader's first records wait
 * in the scatter, which is RANDOM at 4 of them): RANDOM with at least
 * PF_FILL_RANDOM_READS READs and no STRIDED or SEQUENTIAL stream of the
 * file with as many.
 */
#define PF_FILL_RANDOM_READS 16
bool pf_fill_random_sure(const struct pf_tracker *t,
			 const struct pf_stream *st);

/* Engine-wide totals, for tests and the stats file. */
struct pf_engine_totals {
	uint64_t reads;
	uint64_t hits;		/* answered at once from memory */
	uint64_t misses;	/* needed a demand fetch */
	uint64_t waits;		/* had to wait for data (miss or in flight) */
	uint64_t inflight_waits; /* waited without a demand fetch of their
				  * own: for read-ahead in flight (or for
				  * memory); waits, never hits */
	uint64_t wait_ns;
	uint64_t miss_wait_ns;	/* of the waits of READs that missed */
	uint64_t bytes_served;	/* answered to READs, and pushed to the
				 * page cache (bytes_pushed) */
	uint64_t bytes_hit;	/* answered to READs at once (hits) */
	/*
	 * The page cache, estimated: the kernel asks for nothing it holds,
	 * so an open by readers that made no READ and had nothing pushed
	 * was served by it whole.  Counted when the last reader's handle
	 * of a file closes (handles open at once are one): quiet_opens and
	 * their files' sizes, quiet_bytes; opens counts every reader's
	 * open.  Partial page-cache hits (a READ for the rest) count
	 * nothing; an open that read nothing at all counts as served.
	 */
	uint64_t opens;
	uint64_t quiet_opens;
	uint64_t quiet_bytes;
	uint64_t bytes_fetched;
	uint64_t bytes_prefetched;
	uint64_t bytes_unused;	/* prefetched, dropped without being read */
	uint64_t bytes_pushed;	/* handed to the push function */
	uint64_t self_reads;	/* READs of the pusher's read-ahead */
	uint64_t self_misses;	/* ... not in memory: EIO */
	uint64_t next_files;	/* files opened ahead of their reader */
	uint64_t next_asks;	/* next files asked of the next-file thread */
	uint64_t next_taken;	/* files opened ahead whose open went to
				 * their reader (no round trip) */
	uint64_t fetches;
	uint64_t fetches_done;	/* completed without error ... */
	uint64_t fetch_ns;	/* ... taking this long, issue to end */
	uint64_t fetch_errors;
	uint64_t fetches_started; /* whose first bytes the backend said
				   * arrived (pf_bio.started: http, s3) */
	unsigned inflight;
	uint64_t memory_used;	/* bytes of block buffers in use: */
	uint64_t memory_inflight; /* being fetched, or pinned by a reply or
				   * the pusher */
	uint64_t memory_ahead;	/* read-ahead nobody read yet, or pushed
				 * and not yet passed by its stream */
	uint64_t memory_reread;	/* read, not pushed: kept for re-reads */
	uint64_t memory_max;
	uint64_t memory_mapped;	/* bytes the pool has mapped (its peak),
				 * with those faulted in ahead */
	uint64_t memory_warmed;	/* faulted in ahead of need at the start */
	uint64_t files;		/* files the engine holds (the kernel's
				 * inodes of regular files, and more) */
	uint64_t files_state_bytes; /* heap they hold beside their blocks:
				     * the files, paths, pattern trackers */
};

/*
 * Fault in the pool's first buffers ahead of need (pf_pool_warm()) on a
 * thread of the pool's own: the read-ahead the mount can have in flight,
 * at most half of max_memory; nothing without prefetch.  Any thread.
 * pf_engine_warm_wait() waits up to @ms for it to end (true if it has).
 */
void pf_engine_warm(struct pf_engine *e);
bool pf_engine_warm_wait(struct pf_engine *e, unsigned ms);

/* The largest READ a FUSE daemon gets (libfuse's max_pages: 256 pages). */
#define PF_ENGINE_READ_MAX (1u << 20)
/*
 * The mount's kernel read-ahead is @bytes (its bdi's read_ahead_kb; 0:
 * unknown): the size of the READs the kernel sends ahead of a sequential
 * reader and around each page an mmap reader faults in, in pieces of at
 * most PF_ENGINE_READ_MAX.  The engine counts a stream's READs of that
 * size, and a random stream of mostly such READs on a mount without a
 * cache tier gets a note in the stats ("notes", stats.c).  Any thread.
 */
void pf_engine_set_read_ahead(struct pf_engine *e, uint64_t bytes);

void pf_engine_totals(struct pf_engine *e, struct pf_engine_totals *t);

/*
 * The stats file's contents: JSON with the totals and a row per live
 * stream.  Returns a malloc'd NUL-terminated string (caller frees) or NULL.
 */
char *pf_engine_stats_json(struct pf_engine *e, const char *backend_desc);
/*
 * The same as @viewer may see it: everything for the mount's owner (and
 * root, and NULL); for any other user the settings and totals, no path
 * (no streams, no directories read ahead or filled) and no plan but
 * those it opened.
 */
char *pf_engine_stats_json_for(struct pf_engine *e, const char *backend_desc,
			       const struct pf_engine_cred *viewer);

/*
 * Declared plans (pf_hint.h, hintfetch.c): one struct pf_engine_hint per
 * handle of the control file.  open: -EMFILE past PF_HINTSET_MAX plans,
 * -EOPNOTSUPP without prefetch.  write: what the write() replies (its
 * length, or -EINVAL / -ENOSPC with the reason logged and in the plan's
 * stats); one write at a time per handle (serialised inside), any
 * thread, no lock held.  close: the plan ends, @h is freed.
 */
struct pf_engine_hint;

/*
 * open: @cred is the plan's writer (NULL: the daemon's own, unchecked).
 * Each path of the plan must be readable by it, as default_permissions
 * would check a read (plans_access.c), or it counts as missing.  Plans of
 * users other than the owner are capped: at most PF_PLANS_PER_USER
 * handles each and PF_HINTSET_MAX - PF_PLANS_OWNER_RESERVE together, and
 * a quarter of the plans' entries each, three quarters together (-EMFILE
 * at open, -ENOSPC at write): the owner can always open a plan.
 */
#define PF_PLANS_PER_USER 32
#define PF_PLANS_OWNER_RESERVE 32
int pf_engine_hint_open(struct pf_engine *e, const struct pf_engine_cred *cred,
			struct pf_engine_hint **out);
int pf_engine_hint_write(struct pf_engine *e, struct pf_engine_hint *h,
			 const char *buf, size_t len, uint64_t off);
void pf_engine_hint_close(struct pf_engine *e, struct pf_engine_hint *h);

/*
 * Warm-ups (preload.c; prefetchfs-warm): one struct pf_engine_preload per
 * handle of the control file.  open: -EOPNOTSUPP without prefetch.
 * write: lines, each a file's path relative to the mount root ending in
 * '\n' (a line may straddle writes; a leading '/' is the root; '#' lines
 * are skipped), queued in order and read whole into the cache tiers
 * unless a tier holds the file already; returns @len, or -EINVAL (a NUL
 * byte, a path with a ".." component), -ENAMETOOLONG (a line over 4095
 * bytes) for the whole write.  status: one JSON line into @buf,
 *   {"files_total": N, "files": N, "cached": N, "failed": N,
 *    "bytes": N, "bytes_cached": N, "active": N, "error": "..."|null}
 * (files and bytes done, those a tier held already among them; active:
 * files queued, opening or being read; error: the first failure, ENOSPC
 * when the files exceed what the tiers hold), its length.  close: the job
 * stops (queued paths dropped), @p is freed.  Any thread, no lock held.
 */
struct pf_engine_preload;
/*
 * @cred: the writer (NULL: the daemon's own, unchecked).  A job reads only
 * the files its writer may read (another is "No such file or directory",
 * as a missing one); another user than the owner may have
 * PF_WARM_PER_USER jobs open (-EMFILE) and queue max_memory / 16 bytes of
 * paths in each (-ENOSPC).
 */
#define PF_WARM_PER_USER 8
int pf_engine_preload_open(struct pf_engine *e,
			   const struct pf_engine_cred *cred,
			   struct pf_engine_preload **out);
int pf_engine_preload_write(struct pf_engine *e, struct pf_engine_preload *p,
			    const char *buf, size_t len);
int pf_engine_preload_status(struct pf_engine *e, struct pf_engine_preload *p,
			     char *buf, size_t size);
void pf_engine_preload_close(struct pf_engine *e,
			     struct pf_engine_preload *p);

#endif
