/*
 * diskcache_store.h - the disk cache store's structures, shared by its
 * files: diskcache.c (the index, the policy, open and close) and
 * diskcache_journal.c (the journal: appends, compaction, replay).  Not
 * installed; the store's contract is pf_diskcache.h, the decorator's
 * private header diskcache_int.h.
 */
#ifndef PF_DISKCACHE_STORE_H
#define PF_DISKCACHE_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pf_diskcache.h"

#define NIL UINT32_MAX
#define MAX_BLOCK (16u << 20)

enum { S_FREE, S_WRITING, S_VALID };
/* dc_slot.kept: a reader's block, a fill's of an earlier run (from the
 * journal), a fill's of this run */
enum { K_NO, K_BEFORE, K_NOW };

struct dc_slot {
	uint64_t ka;
	uint64_t kb;
	uint64_t blk;
	uint64_t touch;		/* clock tick of the last hit or write */
	struct pf_dc_sum sum;
	uint32_t len;
	uint32_t hnext;		/* hash chain */
	uint16_t pins;
	uint8_t state;
	uint8_t kept;		/* K_*: whose block (see the policy) */
};

struct pf_dc {
	int dirfd;
	int lockfd;
	int datafd;
	int jfd;
	uint64_t jlen;		/* valid journal bytes (writer thread) */
	uint64_t jrecs;
	uint32_t bs;
	uint32_t nslots;
	unsigned char mkey[PF_DC_KEY_LEN];	/* DIR/key: seals the blocks */
	atomic_uint_least64_t nonce;	/* the next seal's (random start) */

	pthread_mutex_t lock;	/* guards all below */
	struct dc_slot *slots;
	uint32_t *buckets;
	uint32_t nbuckets;	/* a power of two */
	uint32_t *freel;	/* stack of free slots */
	uint32_t nfree;
	bool no_new;		/* disk full: do not use free slots */
	uint32_t hand;
	uint64_t now;
	uint64_t nvalid;
	uint64_t bytes;		/* of valid blocks */
	uint64_t kept_bytes;	/* of valid blocks a fill keeps */
	uint64_t nplain;	/* valid blocks of readers' (K_NO) */
	struct pf_dc_stats st;
};

/* diskcache.c, replay only (one thread, before the store is shared): slot
 * @slot holds block @blk of (@ka, @kb), @len bytes sealed with @sum, the
 * fill's of an earlier run when @kept; or (del) is empty */
void pf_dc_index_put(struct pf_dc *dc, uint32_t slot, uint64_t ka,
		     uint64_t kb, uint64_t blk, uint32_t len,
		     const struct pf_dc_sum *sum, bool kept);
void pf_dc_index_del(struct pf_dc *dc, uint32_t slot);

/*
 * diskcache_journal.c.  The writer thread only (and open, before it
 * starts); dc->lock not held.  A PUT of slot @slot (block @s, sealed with
 * @sum: a writing slot's fields change on the writer thread only), a DEL;
 * compaction (rewrites the journal: one PUT per valid slot); the replay at
 * open (*rewrite: compact it); the block size in an existing journal's
 * header, 0 if none.  -errno on failure.
 */
int pf_dc_journal_put(struct pf_dc *dc, uint32_t slot,
		      const struct dc_slot *s, const struct pf_dc_sum *sum);
int pf_dc_journal_del(struct pf_dc *dc, uint32_t slot);
int pf_dc_journal_compact(struct pf_dc *dc);
int pf_dc_journal_replay(struct pf_dc *dc, bool *rewrite);
uint32_t pf_dc_journal_block(struct pf_dc *dc);

#endif
