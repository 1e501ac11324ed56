/*
 * pf_diskcache.h - a persistent local disk cache of dataset blocks.
 *
 * Two layers:
 *  - struct pf_dc, the store: fixed-size block slots in one data file, an
 *    in-memory index rebuilt at start-up from an append-only journal, the
 *    admission/eviction policy.  Synchronous, no threads of its own.
 *  - pf_diskcache_backend_new(), a backend decorator: it wraps any backend
 *    (posix, http, s3) and serves reads from the store when every block of
 *    a read is cached and checks out, else from the wrapped backend, and
 *    then writes the fetched blocks to the store in the background.
 *
 * Cache blocks are keyed by (source, path, size, mtime and ctime with
 * nanoseconds, inode number, block index).  Object stores put a hash of the
 * ETag in st_mtim.tv_nsec, so a changed object has a new key and is never
 * served from the cache; a POSIX file rewritten has a new ctime, which no
 * one can set back.
 *
 * The directory is the daemon's own (0700, files 0600, nothing in it
 * followed through a symlink) and every block is sealed with a MAC under
 * a key kept in it: see diskcache_dir.c and diskcache_mac.c.
 *
 * Errors: >= 0 on success, -errno on failure.
 */
#ifndef PF_DISKCACHE_H
#define PF_DISKCACHE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pf_backend.h"

struct pf_dc;

/* The version of one file: two 64-bit hashes of what names it. */
struct pf_dc_key {
	uint64_t a;
	uint64_t b;
};

/* The seal of one cached block: its nonce and MAC (diskcache_mac.c). */
struct pf_dc_sum {
	uint64_t nonce;
	uint64_t tag;
};

#define PF_DC_KEY_LEN 32	/* bytes of DIR/key */

struct pf_dc_cfg {
	uint64_t size;		/* bytes; 0: leave 10% of the fs free */
	/*
	 * A power of two >= 4K; 0: PF_DC_BLOCK, doubled (up to 16M) while
	 * the cache would have more than 2^20 slots, except that a cache
	 * keeps the block size it has while that is at most twice or half
	 * the one chosen (the default size follows the free disk space).
	 * A journal of another block size is discarded.  A file's last block takes a whole slot,
	 * so small blocks keep small files from wasting the cache: with 16K
	 * a file of 110 KiB takes 112 KiB (98%), with 256K it took 256 KiB.
	 */
	uint32_t block_size;
	/*
	 * With block_size 0: the block is doubled (up to 16M) while the
	 * index would take more than this many bytes (0: no bound but the
	 * 2^20 slots).  The index costs about 64 bytes per slot.
	 */
	uint64_t index_max;
	/*
	 * With block_size 0: the block is at least this (rounded up to a
	 * power of two).  The decorator caches a read of at most 1024
	 * blocks, so this is the largest read / 1024.
	 */
	uint32_t min_block;
	/*
	 * > 0: the directory, already checked (pf_dc_dir_open(); the store
	 * takes a copy and the name is for messages); else it is opened.
	 */
	int dirfd;
};

#define PF_DC_BLOCK (16u << 10)

/* Counters, all since the store was opened (capacity and cached: now). */
struct pf_dc_stats {
	uint64_t capacity;	/* bytes of slots in use or usable */
	uint64_t bytes_cached;	/* bytes of valid blocks */
	uint64_t bytes_kept;	/* of those, the fill's (PF_DC_FILL) */
	uint64_t blocks;	/* valid blocks */
	uint64_t hits;		/* reads served from the cache */
	uint64_t misses;	/* reads sent to the store */
	uint64_t bytes_hit;
	uint64_t bytes_written;	/* blocks written to the cache */
	uint64_t evictions;	/* valid blocks replaced */
	uint64_t rejected;	/* blocks not admitted: nothing cold */
	uint64_t dropped;	/* blocks whose checksum failed on read */
	uint64_t errors;	/* I/O errors and disk full on the cache */
	uint64_t replayed;	/* journal records replayed at open */
	uint64_t index_bytes;	/* memory of the index (fixed at open) */
};

/*
 * The cache directory @dir, created 0700 if missing: a descriptor of it,
 * or -errno and one line in err when it cannot be used or is refused (a
 * symlink, owned by another uid, writable by group or others).
 */
int pf_dc_dir_open(const char *dir, char *err, size_t errlen);
/*
 * Opens file @name of the directory @dirfd (from pf_dc_dir_open()) with
 * @flags (O_RDONLY, O_WRONLY or O_RDWR, O_CREAT; O_EXCL: a temporary file,
 * removed first if it exists), never following a symlink: a new file is
 * 0600.  -errno and err ("'NAME' ...") if it cannot be opened or is not a
 * regular file of this uid with one link.
 */
int pf_dc_file_open(int dirfd, const char *name, int flags, char *err,
		    size_t errlen);

/*
 * Opens (creating if needed) the store in directory @dir: checks @dir
 * (pf_dc_dir_open()), takes an exclusive lock on DIR/lock (-EBUSY if
 * another daemon holds it), reads DIR/key (a new one empties the cache),
 * replays DIR/journal, compacts it when it holds many dead records.  On
 * error writes one line to err.
 */
int pf_dc_open(const char *dir, const struct pf_dc_cfg *cfg,
	       struct pf_dc **out, char *err, size_t errlen);
/* Flushes data and journal to disk, releases the lock, frees. */
void pf_dc_close(struct pf_dc *dc);
/*
 * The daemon's mount is gone: a new daemon may wait for the lock (see
 * diskcache_dir.c) rather than be refused.  Any thread.
 */
void pf_dc_exiting(struct pf_dc *dc);

void pf_dc_key_of(const char *source, const char *path,
		  const struct stat *st, struct pf_dc_key *key);

/* CRC32C (Castagnoli) of @len bytes, continuing from @crc (0 to start). */
uint32_t pf_dc_crc32c(uint32_t crc, const void *buf, size_t len);

uint32_t pf_dc_block_size(const struct pf_dc *dc);
int pf_dc_data_fd(const struct pf_dc *dc);
/* File offset of @slot in the data file. */
uint64_t pf_dc_slot_off(const struct pf_dc *dc, uint32_t slot);

/*
 * The index.  Every function below locks dc's index mutex internally; none
 * does I/O but pf_dc_commit(), pf_dc_drop() and pf_dc_maintain(), which
 * write the journal and belong to one thread (the cache's writer).
 */

/*
 * Looks up block @blk of @key, which must hold @len bytes.  On a hit
 * counts an access to it (the policy's clock), pins the slot (it is not
 * reused until pf_dc_unpin()) and returns the slot, *sum its seal.
 * -ENOENT on a miss.
 */
int pf_dc_lookup(struct pf_dc *dc, const struct pf_dc_key *key,
		 uint64_t blk, uint32_t len, struct pf_dc_sum *sum);
void pf_dc_unpin(struct pf_dc *dc, uint32_t slot);
/* Whether block @blk of @key is cached with @len bytes; touches nothing. */
bool pf_dc_has(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	       uint32_t len);

/*
 * A slot to write block @blk of @key into: a free one, else one the policy
 * lets go (see diskcache.c: a cold one, or for @flags PF_DC_FILL a
 * reader's).  -ENOSPC when nothing may be evicted (the block is not
 * admitted), -EEXIST when it is cached (with PF_DC_FILL it becomes the
 * fill's, as with pf_dc_keep()) or being written.  The slot is pinned in
 * state "writing" until pf_dc_commit() or pf_dc_abort().
 */
int pf_dc_reserve(struct pf_dc *dc, const struct pf_dc_key *key,
		  uint64_t blk, uint32_t len, unsigned flags);
/* The block is the engine's background fill's: kept over readers' misses
 * (journalled with the block). */
#define PF_DC_FILL 0x1u
/*
 * Block @blk of @key, if cached with @len bytes or being written, is the
 * fill's from now on (kept as if the fill had written it; journalled so at
 * the next compaction, or with its write) and counts as touched now.
 * Returns whether it is cached or being written.  No I/O.
 */
bool pf_dc_keep(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
		uint32_t len);
/* The slot's data is written, sealed with @sum: journal it, make it
 * visible. */
int pf_dc_commit(struct pf_dc *dc, uint32_t slot, const struct pf_dc_sum *sum);
/*
 * Seals the @len bytes at @buf, block @blk of @key going to @slot: a fresh
 * nonce and the MAC under the cache's key.  Any thread; no lock, no I/O.
 */
int pf_dc_seal(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	       uint32_t slot, const void *buf, uint32_t len,
	       struct pf_dc_sum *sum);
/* Whether bytes read from @slot are the block @sum sealed.  Any thread. */
bool pf_dc_verify(struct pf_dc *dc, const struct pf_dc_key *key,
		  uint64_t blk, uint32_t slot, const void *buf, uint32_t len,
		  const struct pf_dc_sum *sum);
void pf_dc_abort(struct pf_dc *dc, uint32_t slot);
/*
 * The block in @slot failed its checksum or could not be read: forget it
 * (journalled).  The caller holds a pin from pf_dc_lookup(), which this
 * releases.
 */
void pf_dc_drop(struct pf_dc *dc, uint32_t slot);
/*
 * After a write failed with disk full: slots never written so far are not
 * used any more (capacity shrinks to what the disk held).
 */
void pf_dc_shrink(struct pf_dc *dc);
/* Compacts the journal if it grew past its bound. */
void pf_dc_maintain(struct pf_dc *dc);

/* Synchronous put and get of a whole block, for tests and tools. */
int pf_dc_put(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	      const void *buf, uint32_t len);
/* -ENOENT: not cached; -EBADMSG: the check failed (the block is dropped) */
int pf_dc_get(struct pf_dc *dc, const struct pf_dc_key *key, uint64_t blk,
	      void *buf, uint32_t len);

/* hits/misses/bytes_hit are the decorator's to count through this */
void pf_dc_count(struct pf_dc *dc, int hit, uint64_t bytes);
void pf_dc_count_error(struct pf_dc *dc);
void pf_dc_get_stats(struct pf_dc *dc, struct pf_dc_stats *st);

/* ---- the backend decorator ---- */

struct pf_diskcache_cfg {
	const char *dir;	/* the cache directory */
	int dirfd;		/* as in struct pf_dc_cfg */
	const char *source;	/* names the source in the keys */
	uint64_t size;		/* 0: keep 10% of the filesystem free */
	uint32_t block_size;	/* 0: as in struct pf_dc_cfg */
	uint64_t index_max;	/* as in struct pf_dc_cfg */
	uint64_t max_read;	/* the largest read it gets; 0: 16M */
	/*
	 * Bytes of staging buffers; 0: 64 MiB.  A read finding no staging
	 * left goes to the inner backend uncached.
	 */
	uint64_t staging;
};

/*
 * Wraps @inner.  On success the decorator owns @inner (its destroy()
 * destroys inner); on failure @inner is untouched and err holds one line.
 */
int pf_diskcache_backend_new(struct pf_backend *inner,
			     const struct pf_diskcache_cfg *cfg,
			     struct pf_backend **out, char *err,
			     size_t errlen);

/*
 * Memory the decorator @be holds at most: its staging buffers (taken from
 * the system once, then reused) and the store's index.  The daemon takes
 * it out of -o max_memory.
 */
uint64_t pf_diskcache_backend_memory(const struct pf_backend *be);

/*
 * The mount the decorator @be serves is gone (the FUSE session ended):
 * says so in the lock file, so that a mount on the same directory waits
 * for this daemon's exit instead of being refused.  Any thread.
 */
void pf_diskcache_backend_exiting(struct pf_backend *be);

#endif
