/*
 * diskcache_int.h - private to the disk cache decorator, shared by its
 * files (not installed; the public contract is pf_diskcache.h).
 *
 * The decorator is one data path cut into files along it:
 *   diskcache_read.c     submit(): a read's hit or miss, the copy to the
 *                        reader, a miss handed over to be written back
 *   diskcache_stage.c    ops and the staging pool: their buffers, the reads
 *                        waiting for staging
 *   diskcache_ring.c     the ring thread: the reads of hits' blocks and the
 *                        write-back of misses' blocks to the store
 *   diskcache_join.c     the misses in flight, until their blocks are on
 *                        disk, and the reads that join them
 *   diskcache_backend.c  the ops table: pass-through ops, open/close,
 *                        capacity and holds, stats, create and destroy
 * The store itself (slots, index, journal) is diskcache.c; the directory,
 * its files and the key diskcache_dir.c; the blocks' MAC diskcache_mac.c.
 *
 * DESIGN
 * See diskcache_backend.c.  d->lock guards the ring's queue and the
 * stopping/cancelled/stopped flags, d->plock the staging pool, d->wlock the
 * list of ops waiting for staging, d->ilock the misses in flight; none is
 * held across I/O or a done() call, and no two are held at once but in the
 * order ilock, wlock, plock (pf_dcb_stage_kick() takes staging for the op
 * it holds; a reader that joins a fill's miss waiting for staging moves it
 * to the readers' list, pf_dcb_stage_promote()), and ilock then the
 * store's lock (pf_dc_has()).  Fields marked "(ring thread)" are
 * touched by the ring thread only; those set in pf_diskcache_backend_new()
 * before the ring thread starts are read without a lock.
 */
#ifndef PF_DISKCACHE_INT_H
#define PF_DISKCACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <liburing.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "pf_list.h"

/* SQEs in flight; an op (one read: its blocks) takes at most this many */
#define RING_DEPTH 1024

enum op_type { OP_HIT, OP_MISS, OP_PASS, OP_WRITE };

/*
 * An open file of the decorator: what the engine holds as the opaque
 * struct pf_bfile (pf_backend.h) is one of these; to_dcfile() converts.
 * @inner is the inner backend's handle of the same file.
 */
struct dc_file {
	struct pf_bfile *inner;
	struct pf_dc_key key;
	uint64_t size;		/* pinned at open */
};

static inline struct dc_file *to_dcfile(struct pf_bfile *bf)
{
	return (struct dc_file *)bf;
}

struct dcb;

/* One cache block of an op. */
struct op_blk {
	struct op *op;
	char *buf;		/* staging: one pool buffer */
	int32_t slot;		/* -1: none */
	uint32_t len;
	struct pf_dc_sum sum;
	int32_t res;		/* of its read or write */
	/*
	 * Blocks, from this one on, that one SQE reads or writes: slots
	 * next to each other in the data file, blocks next to each other in
	 * the staging buffer.  0 in the others of the run.
	 */
	uint32_t run;
};

/*
 * A read that joined a miss in flight (diskcache_join.c): it is answered
 * from that miss's staging rather than read from the inner backend again.
 */
struct joiner {
	struct joiner *next;
	struct pf_bio *ubio;
	uint64_t total;		/* its bytes, as submitted */
	int64_t res;		/* once answered: what its done() gets */
};

struct op {
	enum op_type type;
	struct op *next;	/* queue */
	struct dcb *d;
	struct pf_bio *ubio;	/* the reader's; NULL for a write */
	struct pf_bio ibio;	/* to the inner backend */
	struct iovec *iov;	/* nblk: the blocks' buffers, their lengths */
	struct pf_dc_key key;
	uint64_t fsize;
	uint64_t b0;		/* first cache block */
	uint64_t want;		/* bytes the reader gets (to EOF) */
	bool staged;		/* every blk[].buf is a staging buffer */
	bool bg;		/* the fill's (PF_BIO_FILL, PF_BIO_CACHE):
				 * staging after readers' ops */
	/* an OP_WRITE of a PF_BIO_CACHE read: ubio is done with cres once
	 * its blocks are written (write_finish()) */
	int64_t cres;
	unsigned nblk;
	unsigned pending;	/* SQEs in flight (ring thread) */
	/*
	 * A miss in flight (d->ilock guards these four): listed on
	 * d->inflight from its submit until its blocks are on disk (or it
	 * ends without them); reads of its blocks join it (joined) until
	 * its inner read ends (got), then are answered from its staging,
	 * blk[0, jblk), until it is written.  Joiners that are the fill's
	 * PF_BIO_CACHE reads wait on joined for the write, as ubio does.
	 */
	struct list inode;
	bool listed;
	bool got;
	unsigned jblk;
	struct joiner *joined;
	struct op_blk blk[];
};

struct dcb {
	struct pf_backend be;	/* first */
	struct pf_backend *inner;
	struct pf_dc *dc;
	char *source;
	uint32_t bs;
	uint64_t staging_max;
	/*
	 * Staging: buffers of one cache block, from a pool bounded by
	 * staging_max (so the tier's memory is what it is counted as: no
	 * allocator keeps freed buffers around).  plock guards the pool;
	 * staging counts the buffers taken or promised to an op.
	 */
	pthread_mutex_t plock;
	struct pf_pool *pool;
	atomic_uint_least64_t staging;
	/* bytes read past the cache: no staging was left (writes lagged) */
	atomic_uint_least64_t uncached;
	/*
	 * Misses waiting for staging (at most WAIT_MAX): the writes lag
	 * behind the reads, and a read past the cache would be read again
	 * from the store next time.  wlock guards the lists;
	 * pf_dcb_stage_kick() submits them as staging comes back, readers'
	 * ops first (whead), then the fill's (bhead).
	 */
	pthread_mutex_t wlock;
	struct op *whead;
	struct op *wtail;
	struct op *bhead;
	struct op *btail;
	unsigned nwait;
	/* staging the fill's ops leave to readers' ops (staging_max / 4) */
	uint64_t staging_rsv;
	bool wclosed;		/* cancel() or destroy(): no more waiting */
	atomic_uint_least64_t waited;	/* readers' ops */
	atomic_uint_least64_t waited_fill; /* the fill's (op->bg) */

	/*
	 * The misses in flight (struct op's inode), so that a second read
	 * of a block being read from the inner backend, or read and not yet
	 * on disk, joins the first: one fetch per block.  At most the
	 * engine's requests in flight plus WAIT_MAX: a list.
	 */
	pthread_mutex_t ilock;
	struct list inflight;
	atomic_uint_least64_t joined;	/* reads that joined one */

	struct io_uring ring;
	bool ring_ready;
	int efd;
	pthread_t thread;
	bool thread_started;
	unsigned sq_used;	/* SQEs in flight (ring thread) */

	pthread_mutex_t lock;	/* guards the queue and the flags below */
	struct op *qhead;
	struct op *qtail;
	bool stopping;		/* the ring thread is to exit */
	bool cancelled;		/* cancel(): reads fail, writes go */
	bool stopped;		/* the ring thread has exited */

	atomic_bool warned_io;
	atomic_bool warned_full;
	atomic_bool warned_journal;
};

static inline struct dcb *to_d(struct pf_backend *be)
{
	return (struct dcb *)be;
}

/* Staging an op of @nblk blocks may ever get (the fill's @bg: less the
 * readers' reserve): larger ones bypass the cache. */
static inline bool stage_fits(const struct dcb *d, unsigned nblk, bool bg)
{
	return nblk <= RING_DEPTH &&
	       (uint64_t)nblk * d->bs <=
		       d->staging_max - (bg ? d->staging_rsv : 0);
}

/* Appends @op to the queue @head..@tail; the caller holds its lock. */
static inline void op_append(struct op **head, struct op **tail,
			     struct op *op)
{
	op->next = NULL;
	if (*tail)
		(*tail)->next = op;
	else
		*head = op;
	*tail = op;
}

/* A 64-bit mixer (splitmix64's finaliser): keys and hash buckets. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* ---- diskcache_dir.c, diskcache_mac.c: for the store ---- */

/*
 * Reads DIR/key into @key (PF_DC_KEY_LEN bytes), or writes a new one if
 * there is none or it is damaged (*fresh).  -errno and err on failure.
 */
int pf_dc_dir_key(int dirfd, unsigned char *key, bool *fresh, char *err,
		  size_t errlen);
/*
 * Opens and flocks DIR/lock, waiting for a daemon that is exiting (see
 * diskcache_dir.c); the lock's descriptor, or -errno (-EBUSY: in use) and
 * one line in err.
 */
int pf_dc_dir_lock(int dirfd, const char *dir, char *err, size_t errlen);
/* Writes "PID @state" into the lock file (serving, exiting). */
void pf_dc_dir_lock_mark(int lockfd, const char *state);
/* The 64-bit MAC of block @blk of @key in @slot under @mkey and @nonce. */
int pf_dc_mac(const unsigned char *mkey, uint64_t nonce, uint32_t slot,
	      const struct pf_dc_key *key, uint64_t blk, const void *buf,
	      uint32_t len, uint64_t *tag);

/* ---- diskcache_backend.c ---- */

void pf_dcb_warn_once(atomic_bool *flag, const char *what, int err,
	       const char *then);

/* ---- diskcache_read.c: submit(), hits and misses ---- */

int pf_dcb_submit(struct pf_backend *be, struct pf_bio *bio);
int pf_dcb_submit_miss(struct dcb *d, struct pf_bio *ubio, uint64_t total);
void pf_dcb_copy_to_iov(const struct iovec *iov, int cnt, const struct op *op,
			uint64_t skip, uint64_t n);
void pf_dcb_hit_finish(struct dcb *d, struct op *op);

/* ---- diskcache_stage.c: ops and the staging pool ---- */

struct op *pf_dcb_op_new(struct dcb *d, enum op_type type, unsigned nblk);
void pf_dcb_op_free(struct op *op);
void pf_dcb_op_fail(struct op *op, int err);
void pf_dcb_op_trim(struct op *op, unsigned keep);
bool pf_dcb_stage_get(struct dcb *d, struct op *op);
bool pf_dcb_stage_wait(struct dcb *d, struct op *op);
void pf_dcb_stage_kick(struct dcb *d);
bool pf_dcb_stage_promote(struct dcb *d, struct op *op);
void pf_dcb_stage_close(struct dcb *d);

/* ---- diskcache_join.c: the misses in flight and their joiners ---- */

enum join_res { JOIN_LISTED, JOIN_JOINED, JOIN_CACHED };
enum join_res pf_dcb_join(struct dcb *d, struct op *op, struct pf_bio *ubio,
			  uint64_t total, bool recheck);
struct joiner *pf_dcb_join_got(struct op *op, unsigned keep);
void pf_dcb_join_serve(struct op *op, struct joiner *j, int64_t res);
void pf_dcb_join_wait_write(struct op *op, struct joiner *j);
struct joiner *pf_dcb_join_unlist(struct op *op);
void pf_dcb_join_end(struct op *op, int err);
void pf_dcb_join_resubmit(struct dcb *d, struct joiner *j);

/* ---- diskcache_ring.c: the ring thread ---- */

bool pf_dcb_ring_enqueue(struct dcb *d, struct op *op);
void *pf_dcb_ring_main(void *arg);

#endif
