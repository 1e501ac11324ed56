/*
 * diskcache_backend.c - the disk cache as a backend decorator: it wraps any
 * backend and keeps the blocks read through it in a pf_dc store (see
 * diskcache.c), so that they are read from local disk the next time, in
 * this run or after a remount.  This file holds its ops table and life
 * cycle: the pass-through ops, open/close, capacity/holds/held_run/keep,
 * stats, create, cancel and destroy.  The data path is cut into files along it
 * (diskcache_int.h): the read path, hits and misses, is diskcache_read.c;
 * ops and the staging pool diskcache_stage.c; the ring thread, which reads
 * hits and writes misses back, diskcache_ring.c.
 *
 * getattr, readdir, readlink and statfs pass through.  open() opens the
 * inner file, which pins its version, and derives the cache key from the
 * source, the path and that version (size, mtime with nanoseconds; object
 * stores put a hash of the ETag in the nanoseconds).  submit():
 *  - every cache block the read touches is cached: the blocks are read
 *    from the data file into a staging buffer, their CRC32C checked, the
 *    bytes copied to the reader and bio->done() called, on the ring thread;
 *    a block that fails (I/O error, checksum) is dropped and the read goes
 *    to the inner backend instead;
 *  - else the read goes to the inner backend, widened to whole cache
 *    blocks, into a staging buffer; its completion copies the bytes to the
 *    reader, calls bio->done() at once, and only then hands the buffer to
 *    the ring thread, which writes the whole blocks to free or cold slots
 *    and journals them after the write completed.  A read of the engine's
 *    fill through the tier (PF_BIO_CACHE) is done only then: the engine
 *    drops its bytes at once, and a reader finds them on disk.
 *  - a miss of blocks another miss is reading, or has read and not yet
 *    written, joins that one (diskcache_join.c): one read per block.
 * The fill's reads (PF_BIO_FILL, PF_BIO_CACHE) leave a quarter of the
 * staging to readers' and wait for staging behind theirs.
 * When no staging memory is left (the writes lag behind, or many hits are
 * being read), a read waits for it, at most WAIT_MAX reads: back-pressure
 * on the engine's fetches, whose slots stay taken meanwhile, so that a
 * background fill neither outruns the disk writes nor sends hits to the
 * store.  Beyond that a miss goes to the inner backend directly and is
 * not cached, a hit is read from the store.  A write that fails with
 * disk full shrinks the cache to what the disk holds; any I/O error on the
 * cache is logged once and costs only a read from the store.
 *
 * DESIGN
 * Threads: one ring thread owns the io_uring on the data file, the ops it
 * has in flight and the journal (pf_dc_commit/drop/maintain).  Other
 * threads (the engine's, the inner backend's completions) only queue ops
 * under d->lock and signal the eventfd registered with the ring; the ring
 * thread sleeps in read() on it, as in posix_uring.c.  d->lock guards
 * the queue and the stopping flags and is never held across I/O or a
 * done() call.  Staging is one pool buffer per cache block (d->plock
 * guards the pool), counted in an atomic bounded by cfg->staging, so the
 * tier never holds more memory than that (plus the index): main.c takes
 * both out of max_memory.  Blocks of an op in consecutive slots are read
 * or written with one readv/writev SQE (a run).
 * Ownership: an op owns its staging buffer; a miss op is freed by the
 * inner completion (after done()) unless it becomes a write op, which the
 * ring thread frees when its last write completed.
 * This file's ops run on FUSE workers' and the engine's threads, but
 * cancel() and destroy(), run once by the thread that unmounts: destroy()
 * fails the reads waiting for staging, lets the ring thread finish the
 * queued writes and joins it, destroys the inner backend, then fails what
 * its completions queued after the ring thread's last look.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <liburing.h>

#include "pf_backend.h"
#include "pf_diskcache.h"
#include "pf_log.h"
#include "pf_pool.h"
#include "diskcache_int.h"

#define DEFAULT_STAGING (64ull << 20)

/* "disk cache: WHAT: ERROR; THEN", the first time only */
void pf_dcb_warn_once(atomic_bool *flag, const char *what, int err,
	       const char *then)
{
	if (!atomic_exchange(flag, true))
		pf_warn("disk cache: %s: %s; %s", what, strerror(-err), then);
}

/* ---- pass-through ops, life cycle ------------------------------------- */

static int dcb_getattr(struct pf_backend *be, const char *path,
		       struct stat *st)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->getattr(in, path, st);
}

static int dcb_readdir(struct pf_backend *be, const char *path,
		       pf_dirent_fn fn, void *arg)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->readdir(in, path, fn, arg);
}

static int dcb_readlink(struct pf_backend *be, const char *path, char *buf,
			size_t size)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->readlink(in, path, buf, size);
}

static int dcb_statfs(struct pf_backend *be, struct statvfs *sv)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->statfs(in, sv);
}

static int dcb_open(struct pf_backend *be, const char *path,
		    struct pf_bfile **out, struct stat *st)
{
	struct dcb *d = to_d(be);
	struct pf_bfile *in = NULL;
	struct dc_file *f;
	int ret;

	*out = NULL;
	ret = d->inner->ops->open(d->inner, path, &in, st);
	if (ret < 0)
		return ret;
	f = malloc(sizeof(*f));
	if (!f) {
		d->inner->ops->close(d->inner, in);
		return -ENOMEM;
	}
	f->inner = in;
	f->size = (uint64_t)st->st_size;
	pf_dc_key_of(d->source, path, st, &f->key);
	*out = (struct pf_bfile *)f;
	return 0;
}

static void dcb_close(struct pf_backend *be, struct pf_bfile *bf)
{
	struct dcb *d = to_d(be);
	struct dc_file *f = to_dcfile(bf);

	if (!f)
		return;
	d->inner->ops->close(d->inner, f->inner);
	free(f);
}

static void dcb_cancel(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	uint64_t one = 1;

	pthread_mutex_lock(&d->lock);
	d->cancelled = true;
	pthread_mutex_unlock(&d->lock);
	if (write(d->efd, &one, sizeof(one)) < 0)
		pf_debug("disk cache: eventfd: %s", strerror(errno));
	pf_dcb_stage_close(d);
	if (d->inner->ops->cancel)
		d->inner->ops->cancel(d->inner);
}

static void dcb_stop(struct dcb *d)
{
	uint64_t one = 1;

	if (!d->thread_started)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_mutex_unlock(&d->lock);
	if (write(d->efd, &one, sizeof(one)) < 0)
		pf_debug("disk cache: eventfd: %s", strerror(errno));
	pthread_join(d->thread, NULL);
	d->thread_started = false;
}

static void dcb_free(struct dcb *d)
{
	if (d->ring_ready)
		io_uring_queue_exit(&d->ring);
	if (d->efd >= 0)
		close(d->efd);
	pf_dc_close(d->dc);
	pf_pool_free(d->pool);
	pthread_mutex_destroy(&d->plock);
	pthread_mutex_destroy(&d->wlock);
	pthread_mutex_destroy(&d->ilock);
	pthread_mutex_destroy(&d->lock);
	free(d->source);
	free(d);
}

static void dcb_destroy(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	struct op *left;

	pf_dcb_stage_close(d);
	/* writes still queued are finished: a clean unmount keeps them */
	dcb_stop(d);
	/* completions of the inner backend find the ring stopped now */
	d->inner->ops->destroy(d->inner);
	/* what was queued after the ring thread's last look */
	pthread_mutex_lock(&d->lock);
	d->stopped = true;
	left = d->qhead;
	d->qhead = NULL;
	d->qtail = NULL;
	pthread_mutex_unlock(&d->lock);
	while (left) {
		struct op *next = left->next;

		pf_dcb_op_fail(left, -ECANCELED);
		left = next;
	}
	dcb_free(d);
}

static void dcb_stats_json(struct pf_backend *be, char *buf, size_t size)
{
	struct dcb *d = to_d(be);
	struct pf_dc_stats s;
	char inner[3072] = "";
	const char *rest = "";
	uint64_t mapped;
	size_t n;

	if (d->inner->ops->stats_json)
		d->inner->ops->stats_json(d->inner, inner, sizeof(inner));
	/* the inner object's fields follow ours: "{...}" -> ", ...}" */
	n = strlen(inner);
	if (n > 2 && inner[0] == '{' && inner[n - 1] == '}')
		rest = inner + 1;
	pf_dc_get_stats(d->dc, &s);
	pthread_mutex_lock(&d->plock);
	mapped = (uint64_t)pf_pool_allocated(d->pool) * d->bs;
	pthread_mutex_unlock(&d->plock);
	snprintf(buf, size,
		 "{\"disk_cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
		 ", \"bytes_hit\": %" PRIu64 ", \"bytes_cached\": %" PRIu64
		 ", \"bytes_kept\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"bytes_written\": %" PRIu64
		 ", \"evictions\": %" PRIu64 ", \"rejected\": %" PRIu64
		 ", \"dropped\": %" PRIu64 ", \"errors\": %" PRIu64
		 ", \"capacity\": %" PRIu64 ", \"replayed\": %" PRIu64
		 ", \"index_bytes\": %" PRIu64 ", \"staging\": %" PRIu64
		 ", \"staging_mapped\": %" PRIu64 ", \"staging_max\": %"
		 PRIu64 ", \"uncached\": %" PRIu64 ", \"waited\": %" PRIu64
		 ", \"waited_fill\": %" PRIu64 ", \"joined\": %" PRIu64
		 "}%s%s",
		 s.hits, s.misses, s.bytes_hit, s.bytes_cached, s.bytes_kept,
		 s.blocks,
		 s.bytes_written, s.evictions, s.rejected, s.dropped,
		 s.errors, s.capacity, s.replayed, s.index_bytes,
		 (uint64_t)atomic_load(&d->staging), mapped, d->staging_max,
		 (uint64_t)atomic_load(&d->uncached),
		 (uint64_t)atomic_load(&d->waited),
		 (uint64_t)atomic_load(&d->waited_fill),
		 (uint64_t)atomic_load(&d->joined), *rest ? ", " : "}",
		 rest);
}

uint64_t pf_diskcache_backend_memory(const struct pf_backend *be)
{
	struct dcb *d = to_d((struct pf_backend *)be);
	struct pf_dc_stats s;

	pf_dc_get_stats(d->dc, &s);
	return d->staging_max + s.index_bytes;
}

/*
 * What the tier can hold for the engine's background fill: its slots (less
 * any a full disk took away), less an eighth.  A file's last block takes a
 * whole slot: a file of 8 blocks or more (128 KiB with 16 KiB blocks)
 * wastes at most an eighth of what it takes, a 110 KiB file takes 112 KiB;
 * smaller files of a tree waste more, and the fill of such a tree may
 * evict some of its own first blocks (they are read from the store again).
 */
static uint64_t dcb_capacity(struct pf_backend *be)
{
	struct dcb *d = to_d(be);
	struct pf_dc_stats s;

	pf_dc_get_stats(d->dc, &s);
	return s.capacity - s.capacity / 8;
}

/* Whether every block of [0, @size) of @f is in the cache, touching none:
 * the fill need not read a file the tier holds whole (after a remount). */
static bool dcb_holds(struct pf_backend *be, struct pf_bfile *bf,
		      uint64_t size)
{
	struct dcb *d = to_d(be);
	struct dc_file *f = to_dcfile(bf);

	if (size != f->size || !size)
		return false;
	for (uint64_t b = 0; b * d->bs < size; b++) {
		uint64_t bo = b * d->bs;
		uint32_t len = (uint32_t)(size - bo < d->bs ? size - bo : d->bs);

		if (!pf_dc_has(d->dc, &f->key, b, len))
			return false;
	}
	return true;
}

/* The run of blocks from @off's on that are all cached or all not,
 * touching none, to the end of the last block [off, off + len) meets. */
static uint64_t dcb_held_run(struct pf_backend *be, struct pf_bfile *bf,
			     uint64_t off, uint64_t len, bool *held)
{
	struct dcb *d = to_d(be);
	struct dc_file *f = to_dcfile(bf);
	uint64_t end = off + len < f->size ? off + len : f->size;
	uint64_t b = off / d->bs;
	bool first = true;

	*held = false;
	if (off >= end)
		return len;
	for (; b * d->bs < end; b++) {
		uint64_t bo = b * d->bs;
		uint32_t blen = (uint32_t)(f->size - bo < d->bs ? f->size - bo
								: d->bs);
		bool has = pf_dc_has(d->dc, &f->key, b, blen);

		if (first)
			*held = has;
		else if (has != *held)
			break;
		first = false;
	}
	return (b * d->bs < f->size ? b * d->bs : f->size) - off;
}

/* The cached blocks [off, off + len) meets are the fill's (pf_dc_keep()). */
static void dcb_keep(struct pf_backend *be, struct pf_bfile *bf, uint64_t off,
		     uint64_t len)
{
	struct dcb *d = to_d(be);
	struct dc_file *f = to_dcfile(bf);
	uint64_t end = off + len < f->size ? off + len : f->size;

	for (uint64_t b = off / d->bs; b * d->bs < end; b++) {
		uint64_t bo = b * d->bs;
		uint32_t blen = (uint32_t)(f->size - bo < d->bs ? f->size - bo
								: d->bs);

		pf_dc_keep(d->dc, &f->key, b, blen);
	}
}

/* The tier under this one's: whether a peer node brings it in. */
static bool dcb_peer_fills(struct pf_backend *be, struct pf_bfile *bf,
			   uint64_t off, uint64_t len)
{
	struct pf_backend *in = to_d(be)->inner;

	return in->ops->peer_fills &&
	       in->ops->peer_fills(in, to_dcfile(bf)->inner, off, len);
}

static const struct pf_backend_ops dcb_ops = {
	.name = "diskcache",
	.getattr = dcb_getattr,
	.readdir = dcb_readdir,
	.readlink = dcb_readlink,
	.open = dcb_open,
	.close = dcb_close,
	.submit = pf_dcb_submit,
	.statfs = dcb_statfs,
	.destroy = dcb_destroy,
	.cancel = dcb_cancel,
	.stats_json = dcb_stats_json,
	.capacity = dcb_capacity,
	.holds = dcb_holds,
	.held_run = dcb_held_run,
	.keep = dcb_keep,
	.peer_fills = dcb_peer_fills,
};

int pf_diskcache_backend_new(struct pf_backend *inner,
			     const struct pf_diskcache_cfg *cfg,
			     struct pf_backend **out, char *err,
			     size_t errlen)
{
	struct pf_dc_cfg dcfg = { .size = cfg->size,
				  .block_size = cfg->block_size,
				  .index_max = cfg->index_max,
				  .dirfd = cfg->dirfd };
	sigset_t all;
	sigset_t old;
	struct dcb *d;
	int ret;

	*out = NULL;
	/* a read of more blocks than the ring takes is not cached */
	if (cfg->max_read > (uint64_t)RING_DEPTH * PF_DC_BLOCK)
		dcfg.min_block = (uint32_t)((cfg->max_read + RING_DEPTH - 1) /
					    RING_DEPTH);
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->be.ops = &dcb_ops;
	d->efd = -1;
	d->inner = inner;
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->plock, NULL);
	pthread_mutex_init(&d->wlock, NULL);
	pthread_mutex_init(&d->ilock, NULL);
	list_init(&d->inflight);
	d->staging_max = cfg->staging ? cfg->staging : DEFAULT_STAGING;
	d->source = strdup(cfg->source ? cfg->source : "");
	if (!d->source) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = pf_dc_open(cfg->dir, &dcfg, &d->dc, err, errlen);
	if (ret < 0)
		goto out;
	d->bs = pf_dc_block_size(d->dc);
	if ((uint64_t)d->bs * 2 > d->staging_max)
		d->staging_max = (uint64_t)d->bs * 2;
	d->staging_max -= d->staging_max % d->bs;
	d->staging_rsv = d->staging_max / 4;
	d->staging_rsv -= d->staging_rsv % d->bs;
	ret = pf_pool_new(d->bs, d->staging_max / d->bs, &d->pool);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ret = io_uring_queue_init(RING_DEPTH, &d->ring, 0);
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: io_uring: %s",
			 strerror(-ret));
		goto out;
	}
	d->ring_ready = true;
	d->efd = eventfd(0, EFD_CLOEXEC);
	ret = d->efd < 0 ? -errno : io_uring_register_eventfd(&d->ring, d->efd);
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: eventfd: %s",
			 strerror(-ret));
		goto out;
	}
	/* the thread must not take the daemon's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&d->thread, NULL, pf_dcb_ring_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret == 0)
		pthread_setname_np(d->thread, "pf-diskcache");
	if (ret < 0) {
		snprintf(err, errlen, "disk cache: thread: %s",
			 strerror(-ret));
		goto out;
	}
	d->thread_started = true;
	*out = &d->be;
	return 0;
out:
	dcb_free(d);
	return ret;
}

void pf_diskcache_backend_exiting(struct pf_backend *be)
{
	pf_dc_exiting(to_d(be)->dc);
}
