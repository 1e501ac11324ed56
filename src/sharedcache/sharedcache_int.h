/*
 * sharedcache_int.h - private to the shared tier, shared by its files (not
 * installed; the public contract is pf_sharedcache.h).
 *
 * The decorator is one data path cut into files along it:
 *   sharedcache_backend.c  the ops table: pass-through ops, open/close,
 *                          stats, create, cancel and destroy
 *   sharedcache_read.c     submit(): a read's op, looked up by a lookup
 *                          thread (one multi-get), its leases and waits,
 *                          the store's read of what is missing, the reply
 *   sharedcache_store.c    the writer thread: pieces read from the store
 *                          sealed and stored, the
 *                          servers probed
 *   sharedcache_mc.c       libmemcached: the client's behaviours, which
 *                          server holds a key
 *   sharedcache_servers.c  the server list's syntax, this node's server
 *   sharedcache_crypto.c   the secret, keys and sealed values
 *
 * DESIGN
 * Threads.  Submits come from the engine's threads (and the disk cache's,
 * above); they only queue an op for the lookup threads (t->lock, t->cond).
 * LOOK_THREADS lookup threads each own a memcached client (libmemcached's
 * are not thread safe): a thread takes every queued op, looks their pieces
 * up with one multi-get, opens the values and decides each op: all there
 * (reply), pieces to read from the store (one read of the inner backend
 * for the span of them), pieces another node is reading (parked on the
 * thread's own wait list, looked up again every POLL_MS or so until they
 * come or their time is up).  The inner backend's completion replies, or
 * hands the op back to the lookup threads when it still waits for
 * pieces, and then queues the pieces it read for the writer thread
 * (t->slock, t->scond), which owns the third client: it seals and stores
 * them, and once a second probes every server.
 * An op has one owner at a time (the queue, a lookup thread, the inner
 * backend, the store queue), so its fields need no lock.  No lock is held
 * across a memcached call, a submit or a done().
 */
#ifndef PF_SHAREDCACHE_INT_H
#define PF_SHAREDCACHE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <libmemcached/memcached.h>

#include "pf_backend.h"
#include "pf_sharedcache.h"

#define LOOK_THREADS 4
#define POLL_MS 5		/* a waiting op's first poll; doubling */
#define POLL_MAX_MS 40		/* up to this */
#define MGET_MAX 256		/* keys in one multi-get */
/*
 * The fill waits this long at most for a piece the node owning it reads
 * (then it reads the piece itself, under a lease): a reader may be waiting
 * for that piece behind the fill, and a node ahead of its owner does better
 * to read it than to wait.
 */
#define FILL_WAIT_MS 500
/* a server whose node's fill seems idle is not waited for this long */
#define QUIET_MS 10000
#define DRAIN_MS 2000		/* destroy() finishes stores this long */
/* a node waits for a piece under another's lease this many shared_lease
 * at most, while the lease is there */
#define LEASE_HOLD 3
/* a fill's range may be a peer's to fill (sc_peer_fills()): pieces */
#define PEER_PIECES 4
/*
 * A server that answers none of this many calls in a row within
 * shared_timeout (a memcached slow or stopped, its kernel still accepting
 * connections: libmemcached counts no such timeout) is set aside for
 * ASIDE_S: its pieces are neither looked up nor stored, they come from the
 * store at once; then it is tried again, and set aside again at its next
 * timeout if it still does not answer (sharedcache_mc.c).
 */
#define SLOW_LIMIT 3
#define ASIDE_S 5

enum pc_state {
	PC_WANT,	/* not looked up yet, or missing */
	PC_HAVE,	/* in op->buf */
	PC_FETCH,	/* to be read from the store */
	PC_WAIT,	/* another node holds its lease */
	PC_FILLWAIT,	/* the node owning it will read it (the fill) */
};

/*
 * An open file of the tier: what the engine holds as the opaque struct
 * pf_bfile (pf_backend.h) is one of these; to_scfile() converts.  @inner
 * is the inner backend's handle of the same file.
 */
struct sc_file {
	struct pf_bfile *inner;
	struct pf_sc_fid fid;
};

static inline struct sc_file *to_scfile(struct pf_bfile *bf)
{
	return (struct sc_file *)bf;
}

/* One piece of an op. */
struct sc_pc {
	uint8_t key[PF_SC_KEY_BYTES];
	char text[PF_SC_KEY_TEXT + 1];
	uint32_t len;
	uint32_t off;		/* of its bytes in op->buf */
	uint8_t state;		/* enum pc_state */
	uint64_t since;		/* ns: began waiting */
	uint64_t until;		/* ns: stops waiting */
	bool leased;		/* this node took its lease */
	bool bad;		/* its value did not open: read it from the
				 * store, wait for no lease */
	bool fetched;		/* read from the store: to be stored */
	int16_t owner;		/* its server by placement; -1 unknown */
};

enum op_type { OP_READ, OP_PASS };

struct sc_op;

/* One read of the store: a run of consecutive pieces an op lacks. */
struct sc_run {
	struct pf_bio bio;
	struct iovec iov;
	struct sc_op *op;
	unsigned f0, f1;	/* its pieces [f0, f1) */
};

struct sc_op {
	enum op_type type;
	struct sc *t;
	struct sc_op *next;	/* the queue or wait list it is on */
	struct pf_bio *ubio;	/* the reader's; NULL once answered */
	struct pf_bio ibio;	/* OP_PASS: the read to the inner backend */
	struct sc_file *f;	/* until the reader is answered */
	/* the file's version: the store's copy (the file may be closed by
	 * then) */
	struct pf_sc_fid fid;
	uint64_t p0;		/* first piece */
	uint64_t skip;		/* the reader's offset in buf */
	uint64_t want;		/* bytes the reader gets (to EOF) */
	char *buf;		/* the pieces, one after the other; NULL
				 * while it waits for staging */
	uint64_t bytes;		/* of buf (staging taken with it) */
	uint64_t t0;		/* ns: submitted */
	uint64_t next_poll;	/* ns */
	unsigned poll_ms;
	/* the store's reads in flight: their completions (on the inner
	 * backend's threads) each set their own pieces; the last one, and
	 * the submitter's reference, hand the op on */
	struct sc_run *runs;
	atomic_uint pending;
	atomic_int err;		/* the first read's error */
	atomic_bool short_read;	/* the store gave fewer bytes: EOF */
	atomic_bool missed;	/* pieces came from the store */
	atomic_bool started;	/* ubio->started() called */
	bool fill;		/* the engine's background fill */
	unsigned npc;
	struct sc_pc pc[];
};

/* Per server of the list. */
struct sc_srv {
	char name[272];		/* host:port */
	atomic_bool up;		/* answered the last probe */
	/* ns: a piece it holds last came to a fill that waited for it */
	atomic_uint_least64_t seen_ns;
	/* ns: until then the fill does not wait for its pieces (its node
	 * did not fill them) */
	atomic_uint_least64_t quiet_until;
	memcached_st *probe;	/* the writer thread's, this server alone */
	/* a key the whole ring places here: a client whose ring places it
	 * elsewhere has ejected this server */
	char sentinel[16];
	atomic_uint ejected_by;	/* clients that have it ejected now */
	atomic_uint timeouts;	/* calls to it in a row that timed out */
	/* ns: until then it is set aside (SLOW_LIMIT) */
	atomic_uint_least64_t aside_until;
};

struct sc_look {
	struct sc *t;
	pthread_t thread;
	bool started;
	memcached_st *mc;
	/* the multi-gets' values, kept from one to the next (its buffer
	 * grows to a piece once, not at every multi-get); in here, not
	 * allocated: libmemcached frees an allocated one at a fetch's end */
	memcached_result_st res;
	bool res_made;
	struct sc_op *waiting;	/* parked ops, this thread's */
	bool *ejected;		/* per server: by this client */
	uint64_t ej_ns;		/* last looked at */
	/* per server: a client of it alone, to tell which server of a
	 * multi-get that timed out did not answer */
	memcached_st **one;
	bool *asked;		/* per server: had keys in this multi-get */
};

typedef atomic_uint_least64_t sc_counter;

struct sc_stats {
	sc_counter hits;	/* reads served whole from the tier */
	sc_counter misses;	/* reads that went to the store, in part */
	sc_counter pieces_hit;
	sc_counter pieces_missed;
	sc_counter bytes_hit;	/* from the tier: from peers */
	sc_counter bytes_fetched; /* from the store, through the tier */
	sc_counter stored;	/* pieces stored */
	sc_counter bytes_stored;
	sc_counter store_dropped; /* queue full, not stored */
	sc_counter dropped;	/* values that failed to open (bad MAC) */
	sc_counter errors;	/* memcached calls that failed */
	sc_counter ejections;	/* servers a client's ring ejected */
	sc_counter server_failures; /* servers that stopped answering */
	sc_counter leases_won;
	sc_counter leases_waited;
	sc_counter leases_timed_out;
	sc_counter leases_released; /* deleted once their piece was stored */
	sc_counter fill_waited;	/* pieces the fill took from their owner */
	sc_counter fill_timed_out;
	sc_counter bypassed;	/* reads past the tier: no memory */
	sc_counter staging_waits; /* reads that waited for staging */
	sc_counter timeouts;	/* calls a server did not answer in time */
	sc_counter slow_ejections; /* servers set aside (SLOW_LIMIT) */
	sc_counter aside_pieces; /* pieces not looked up or stored: their
				  * server was set aside */
	sc_counter hit_ns;	/* the hits' submit-to-answer times, summed */
	sc_counter miss_ns;	/* the misses' */
	sc_counter mgets;	/* multi-gets */
	sc_counter mget_keys;	/* keys they asked for */
};

struct sc {
	struct pf_backend be;	/* first */
	struct pf_backend *inner;
	struct pf_sc_keys keys;
	char *source;
	unsigned timeout_ms;
	unsigned lease_ms;
	int self;		/* this node's server; -1 not known */
	unsigned nsrv;
	struct sc_srv *srv;
	/* configured once, never connected, never ejecting (its ring does
	 * not change): placement (pf_sc_owner()) asks it from any thread */
	memcached_st *proto;

	uint64_t staging_max;
	atomic_uint_least64_t staging;

	pthread_mutex_t lock;	/* the lookup queue and the flags below */
	pthread_cond_t cond;
	struct sc_op *qhead;
	struct sc_op *qtail;
	struct sc_op *swhead;	/* waiting for staging (no buffer yet) */
	struct sc_op *swtail;
	bool cancelled;		/* cancel(): ops fail, no new ones */
	bool stopping;		/* the lookup threads are to exit */
	struct sc_look look[LOOK_THREADS];

	pthread_mutex_t slock;	/* the store queue and sstop */
	pthread_cond_t scond;
	struct sc_op *shead;
	struct sc_op *stail;
	uint64_t sq_bytes;
	uint64_t queue_max;
	bool sstop;
	pthread_t writer;
	bool writer_started;
	memcached_st *wmc;
	bool *wejected;		/* per server: by the writer's client */
	uint8_t *seal_buf;	/* the writer's: one sealed piece */

	struct sc_stats st;
	atomic_bool warned;	/* the first error logged */
};

static inline struct sc *to_sc(struct pf_backend *be)
{
	return (struct sc *)be;
}

/* Appends @op to the queue @head..@tail; the caller holds its lock. */
static inline void sc_append(struct sc_op **head, struct sc_op **tail,
			     struct sc_op *op)
{
	op->next = NULL;
	if (*tail)
		(*tail)->next = op;
	else
		*head = op;
	*tail = op;
}

/* Piece @piece of @fid: its key, and its value's key text ("D", hex). */
static inline void sc_piece_text(const struct sc *t,
				 const struct pf_sc_fid *fid, uint64_t piece,
				 uint8_t key[PF_SC_KEY_BYTES],
				 char text[PF_SC_KEY_TEXT + 1])
{
	pf_sc_piece_key(&t->keys, fid, piece, key);
	pf_sc_key_text(key, 'D', text);
}

/* @op's piece @i named (its key and text), once. */
static inline void sc_pc_name(const struct sc *t, struct sc_op *op,
			      unsigned i)
{
	struct sc_pc *pc = &op->pc[i];

	if (!pc->text[0])
		sc_piece_text(t, &op->fid, op->p0 + i, pc->key, pc->text);
}

/* The key text of the lease of the piece whose value is @text: "L" and
 * the same hex. */
static inline void sc_lease_text(const char *text,
				 char lease[PF_SC_KEY_TEXT + 1])
{
	memcpy(lease, text, PF_SC_KEY_TEXT + 1);
	lease[0] = 'L';
}

/* ---- sharedcache_servers.c ---- */

/*
 * Which of @sv is this node's server: @self (HOST:PORT) if given (-EINVAL
 * with err when it is not in the list), else the one with a local
 * address; *idx -1 when not known.
 */
int pf_sc_self_index(const struct pf_sc_server *sv, unsigned n,
		     const char *self, int *idx, char *err, size_t errlen);

/* ---- sharedcache_mc.c ---- */

/* A client of @sv with the tier's behaviours; NULL: no memory. */
memcached_st *pf_sc_mc_new(const struct pf_sc_server *sv, unsigned n,
			   unsigned timeout_ms, bool eject);
/* The server (index in the list) the placement gives @text. */
int pf_sc_owner(struct sc *t, const char *text);
/*
 * Whether server @owner (pf_sc_owner()) is a peer's that its node fills:
 * not this node's, up, not quiet (its node's fill was not seen), not set
 * aside.  Any thread.
 */
bool pf_sc_peer_fills(struct sc *t, int owner, uint64_t now);
/* Finds each server's sentinel key (pf_sc_mc_ejections()). */
void pf_sc_mc_sentinels(struct sc *t);
/* Notes the servers @mc's ring has ejected or taken back since @ejected
 * (one flag per server) said; counts each ejection. */
void pf_sc_mc_ejections(struct sc *t, memcached_st *mc, bool *ejected);
/* The server (index in the list) @mc's ring gives @text now; -1 none. */
int pf_sc_mc_server(struct sc *t, memcached_st *mc, const char *text);
/* Whether server @i is set aside now (@now: pf_now_ns()). */
bool pf_sc_aside(struct sc *t, int i, uint64_t now);
/* A call to server @i ended with @rc: counts a timeout (SLOW_LIMIT in a
 * row set it aside) or, when it answered, ends the row. */
void pf_sc_mc_answer(struct sc *t, int i, memcached_return_t rc);
/* The servers @lk asked in a multi-get (lk->asked) answered it, or one
 * did not (@rc a timeout: the one that does not answer a get alone). */
void pf_sc_mc_answered(struct sc_look *lk, memcached_return_t rc);
/* Whether @rc says a server did not answer in time. */
bool pf_sc_mc_timeout(memcached_return_t rc);
/* Counts a failed call (rc is no hit, miss, END or NOTSTORED). */
void pf_sc_mc_error(struct sc *t, memcached_st *mc, memcached_return_t rc,
		    const char *what);

/* ---- sharedcache_read.c ---- */

int pf_sc_submit(struct pf_backend *be, struct pf_bio *bio);
void *pf_sc_look_main(void *arg);
void pf_sc_op_free(struct sc_op *op);
/* Ends @op with @err for its reader (if it still has one). */
void pf_sc_op_fail(struct sc_op *op, int err);
/* Fails the ops waiting for staging (cancel()). */
void pf_sc_cancel_waits(struct sc *t);

/* ---- sharedcache_store.c ---- */

/*
 * Queues a copy of the pieces @op read from the store to be stored, and
 * leaves them to @op as pieces it has (not to store again).  Without
 * staging left for the copy, they are stored with @op, when it is done.
 */
void pf_sc_store_early(struct sc *t, struct sc_op *op);
/*
 * Deletes this node's lease of @pc with @mc (once the piece is stored, or
 * found stored after the lease was won): a lease that outlived its value
 * (evicted, never stored) would keep every node missing the piece waiting
 * LEASE_HOLD x shared_lease for it.
 */
void pf_sc_lease_release(struct sc *t, memcached_st *mc,
			 const struct sc_pc *pc);

/* Queues @op's fetched pieces to be stored, or frees it (queue full). */
void pf_sc_store(struct sc *t, struct sc_op *op);
void *pf_sc_writer_main(void *arg);
/* Probes every server now (start-up, before the writer runs). */
void pf_sc_probe_all(struct sc *t);

#endif
