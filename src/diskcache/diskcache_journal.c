/*
 * diskcache_journal.c - the disk cache store's journal (see diskcache.c for
 * the layout of the cache directory and why the journal is what it is):
 * fixed 64-byte records, each with its own CRC32C, a header (block size,
 * slots), then PUT (slot holds block blk of key, len bytes, sealed with
 * nonce and tag; flags J_KEPT: the background fill's, see the policy in
 * diskcache.c; 0 in an older build's records, which ignores them) and DEL
 * (slot is empty).  Appends, compaction (rewritten with one PUT per valid
 * slot when it holds more than JOURNAL_FACTOR x nslots records), and the
 * replay at open, which stops at the first record torn or failing its CRC
 * and cuts the journal there.
 *
 * Threads: appends and compaction run on the store's writer thread only
 * (the decorator's ring thread, or a test's), replay at open before any
 * other; so the journal's fd and length need no lock.  Compaction takes
 * dc->lock to copy the index, never across I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf_diskcache.h"
#include "pf_log.h"
#include "diskcache_store.h"

#define J_MAGIC 0x324a4650u	/* "PFJ2": records with a MAC (PFJ1: CRC32C) */
#define J_HDR 1u
#define J_PUT 2u
#define J_DEL 3u
#define J_REC 64
#define J_KEPT 0x1u	/* jrec.flags: the block is a fill's */
#define JOURNAL_FACTOR 2	/* records per slot before a compaction */

struct jrec {
	uint32_t magic;
	uint32_t type;
	uint64_t ka;
	uint64_t kb;
	uint64_t blk;
	uint32_t slot;
	uint32_t len;
	uint64_t nonce;		/* the block's seal */
	uint64_t tag;
	uint32_t flags;		/* J_KEPT; 0 in journals of older builds */
	uint32_t rcrc;		/* of the 60 bytes before it */
};
_Static_assert(sizeof(struct jrec) == J_REC, "journal record size");

static void jrec_fill(struct jrec *r, uint32_t type, uint64_t ka, uint64_t kb,
		      uint64_t blk, uint32_t slot, uint32_t len,
		      const struct pf_dc_sum *sum, bool kept)
{
	memset(r, 0, sizeof(*r));
	r->magic = J_MAGIC;
	r->type = type;
	r->ka = ka;
	r->kb = kb;
	r->blk = blk;
	r->slot = slot;
	r->len = len;
	if (sum) {
		r->nonce = sum->nonce;
		r->tag = sum->tag;
	}
	r->flags = kept ? J_KEPT : 0;
	r->rcrc = pf_dc_crc32c(0, r, offsetof(struct jrec, rcrc));
}

static bool jrec_ok(const struct jrec *r)
{
	return r->magic == J_MAGIC &&
	       r->rcrc == pf_dc_crc32c(0, r, offsetof(struct jrec, rcrc));
}

static int jappend(struct pf_dc *dc, const struct jrec *r)
{
	ssize_t n = pwrite(dc->jfd, r, sizeof(*r), (off_t)dc->jlen);

	if (n == (ssize_t)sizeof(*r)) {
		dc->jlen += sizeof(*r);
		dc->jrecs++;
		return 0;
	}
	/* a torn record would end the replay early: cut it off */
	if (n > 0 && ftruncate(dc->jfd, (off_t)dc->jlen) < 0)
		pf_debug("disk cache: truncating the journal: %s",
			 strerror(errno));
	return n < 0 ? -errno : -ENOSPC;
}

/*
 * Writes the header and one PUT per valid slot to journal.tmp and renames
 * it over the journal.  Writer thread; dc->lock not held.
 */
int pf_dc_journal_compact(struct pf_dc *dc)
{
	struct jrec *recs;
	uint64_t n = 0;
	uint64_t cap;
	char why[128];
	int fd = -1;
	int ret = 0;

	pthread_mutex_lock(&dc->lock);
	cap = dc->nvalid + 1;
	recs = malloc(cap * sizeof(*recs));
	if (recs) {
		jrec_fill(&recs[n++], J_HDR, dc->bs, dc->nslots, 0, 0, 0,
			  NULL, false);
		for (uint32_t i = 0; i < dc->nslots; i++) {
			const struct dc_slot *s = &dc->slots[i];

			if (s->state == S_VALID)
				jrec_fill(&recs[n++], J_PUT, s->ka, s->kb,
					  s->blk, i, s->len, &s->sum,
					  s->kept != K_NO);
		}
	}
	pthread_mutex_unlock(&dc->lock);
	if (!recs)
		return -ENOMEM;
	fd = pf_dc_file_open(dc->dirfd, "journal.tmp", O_WRONLY | O_EXCL,
			     why, sizeof(why));
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	for (uint64_t off = 0; off < n * J_REC;) {
		ssize_t w = pwrite(fd, (char *)recs + off, n * J_REC - off,
				   (off_t)off);

		if (w <= 0) {
			ret = w < 0 ? -errno : -ENOSPC;
			goto out;
		}
		off += (uint64_t)w;
	}
	/* the old journal stays until the new one is on disk */
	if (fsync(fd) < 0 ||
	    renameat(dc->dirfd, "journal.tmp", dc->dirfd, "journal") < 0) {
		ret = -errno;
		goto out;
	}
	fsync(dc->dirfd);
	close(dc->jfd);
	dc->jfd = fd;
	fd = -1;
	dc->jlen = n * J_REC;
	dc->jrecs = n;
out:
	if (fd >= 0) {
		close(fd);
		unlinkat(dc->dirfd, "journal.tmp", 0);
	}
	free(recs);
	return ret;
}

void pf_dc_maintain(struct pf_dc *dc)
{
	int ret;

	if (dc->jrecs <= (uint64_t)JOURNAL_FACTOR * dc->nslots + 1024)
		return;
	ret = pf_dc_journal_compact(dc);
	if (ret < 0)
		pf_warn("disk cache: cannot compact the journal: %s",
			strerror(-ret));
}

/* Applies one record at replay (one thread, no lock needed). */
static void replay_rec(struct pf_dc *dc, const struct jrec *r)
{
	struct pf_dc_sum sum = { .nonce = r->nonce, .tag = r->tag };

	if (r->slot >= dc->nslots)
		return;
	if (r->type == J_DEL)
		pf_dc_index_del(dc, r->slot);
	else if (r->type == J_PUT && r->len != 0 && r->len <= dc->bs)
		pf_dc_index_put(dc, r->slot, r->ka, r->kb, r->blk, r->len,
				&sum, r->flags & J_KEPT);
}

/*
 * Replays the journal; a journal from another block size is discarded.
 * Returns whether it needs rewriting (no header, or mostly dead records).
 */
int pf_dc_journal_replay(struct pf_dc *dc, bool *rewrite)
{
	enum { CHUNK = J_REC * 4096 };
	char *buf = malloc(CHUNK);
	uint64_t off = 0;
	bool hdr = false;
	int ret = 0;

	*rewrite = false;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread(dc->jfd, buf, CHUNK, (off_t)off);
		ssize_t i;

		if (n < 0) {
			ret = -errno;
			goto out;
		}
		for (i = 0; i + J_REC <= n; i += J_REC) {
			struct jrec r;

			memcpy(&r, buf + i, J_REC);
			if (!jrec_ok(&r))
				goto end;
			if (!hdr) {
				if (r.type != J_HDR || r.ka != dc->bs)
					goto end;
				hdr = true;
			} else {
				replay_rec(dc, &r);
			}
			dc->st.replayed++;
			off += J_REC;
		}
		if (n < CHUNK)
			break;
	}
end:
	if (!hdr) {
		*rewrite = true;
		off = 0;
	}
	dc->jlen = off;
	dc->jrecs = off / J_REC;
	/* cut a torn or corrupt tail: appends go after the last good one */
	if (ftruncate(dc->jfd, (off_t)off) < 0)
		ret = -errno;
	if (dc->jrecs > 2 * dc->nvalid + 1024)
		*rewrite = true;
out:
	free(buf);
	return ret;
}

int pf_dc_journal_put(struct pf_dc *dc, uint32_t slot,
		      const struct dc_slot *s, const struct pf_dc_sum *sum)
{
	struct jrec r;

	jrec_fill(&r, J_PUT, s->ka, s->kb, s->blk, slot, s->len, sum,
		  s->kept != K_NO);
	return jappend(dc, &r);
}

int pf_dc_journal_del(struct pf_dc *dc, uint32_t slot)
{
	struct jrec r;

	jrec_fill(&r, J_DEL, 0, 0, 0, slot, 0, NULL, false);
	return jappend(dc, &r);
}

/* The block size in the journal's header, or 0 (none, or not one). */
uint32_t pf_dc_journal_block(struct pf_dc *dc)
{
	struct jrec r;

	if (pread(dc->jfd, &r, sizeof(r), 0) != (ssize_t)sizeof(r) ||
	    !jrec_ok(&r) || r.type != J_HDR || r.ka < 4096 ||
	    r.ka > MAX_BLOCK || (r.ka & (r.ka - 1)))
		return 0;
	return (uint32_t)r.ka;
}
