/*
 * trace.c - the pipeline trace (-o trace=FILE): what the daemon did in the
 * first seconds of a mount, as a Chrome Trace Event Format JSON file
 * (the {"traceEvents": [...]} form) that Perfetto and chrome://tracing open.
 *
 * DESIGN
 * Producers (FUSE workers, the backend's completion thread, the pusher)
 * call the event functions only while pf_trace_on() is true.  An event is
 * a fixed-size record put into a bounded lock-free ring whose cells carry
 * a sequence number (D. Vyukov's bounded queue): a producer claims a cell
 * with one compare-and-swap and publishes it with one release store; a
 * full ring drops the event and counts it.  Producers also count
 * themselves in and out (pf_tr.users), so that the writer, once it has
 * turned tracing off, knows when no producer can still touch the ring.
 *
 * One writer thread owns the file and every table but the file names
 * (those are registered under names_lock, once per open).  Every TICK_MS
 * it drains the ring, sorts what it holds by start time and writes the
 * events that started more than HOLD_NS ago, so that events of racing
 * threads come out in time order.
 *
 * Tracks.  The viewers draw the "X" events of one thread as a stack: two
 * that overlap without nesting are drawn wrongly or dropped.  A stream's
 * READs overlap (the kernel sends several at once) and so do its fetches,
 * so each track is a family of lanes: an event goes to the first lane
 * whose last event ended before it starts, and each lane is a thread (tid)
 * of its own, named "stream 3 a.bin (sequential)", then "... #2".  Within
 * a lane events never overlap and are written in time order.
 *
 * Volume.  READs answered from memory that continue each other on one
 * lane, less than HIT_GAP_NS apart, are written as one "hits" event; past
 * MAX_HIT_EVENTS such events one in HIT_SAMPLE is written and the others
 * are only counted (otherData.hit_reads_unshown).
 *
 * The file is written as it goes and finished (the events array closed,
 * track names, otherData) when the time limit passes (by the writer) or
 * at pf_trace_stop(), whichever comes first.
 *
 * This file holds the producers, the file names and the set-up;
 * trace_write.c the writer thread and the JSON it writes; trace_int.h
 * the state they share (pf_tr).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pf_log.h"
#include "trace_int.h"

atomic_bool pf_trace_active;

struct trace_state pf_tr = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ---- producers ----------------------------------------------------------- */

static void put(const struct tev *ev)
{
	struct cell *c;
	size_t pos;

	/* counted in before looking at the flag: see writer_quiesce() */
	atomic_fetch_add(&pf_tr.users, 1);
	if (!atomic_load(&pf_trace_active))
		goto out;
	pos = atomic_load_explicit(&pf_tr.enq, memory_order_relaxed);
	for (;;) {
		size_t seq;
		intptr_t dif;

		c = &pf_tr.ring[pos & pf_tr.mask];
		seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		dif = (intptr_t)seq - (intptr_t)pos;
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &pf_tr.enq, &pos, pos + 1,
				    memory_order_relaxed,
				    memory_order_relaxed))
				break;
		} else if (dif < 0) {
			/* full: the writer is behind */
			atomic_fetch_add_explicit(&pf_tr.dropped, 1,
						  memory_order_relaxed);
			goto out;
		} else {
			pos = atomic_load_explicit(&pf_tr.enq,
						   memory_order_relaxed);
		}
	}
	c->ev = *ev;
	atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
	/* half full: wake the writer before its tick */
	if (pos - atomic_load_explicit(&pf_tr.deq_pub, memory_order_relaxed) ==
	    (pf_tr.mask + 1) / 2) {
		atomic_store(&pf_tr.kick, true);
		pthread_cond_signal(&pf_tr.cond);
	}
out:
	atomic_fetch_sub(&pf_tr.users, 1);
}

void pf_trace_read(const struct pf_trace_read *r)
{
	struct tev ev = {
		.type = EV_READ,
		.tag = r->tag,
		.stream = r->stream,
		.pattern = (uint8_t)r->pattern,
		.t0 = r->t0,
		.t1 = r->t1,
		.a = r->off,
		.b = r->size,
		.c = r->wait_off,
		.err = r->err,
		.flags = (r->waited ? F_WAITED : 0) |
			 (r->missed ? F_MISSED : 0),
	};

	put(&ev);
}

void pf_trace_fetch(const struct pf_trace_fetch *f)
{
	struct tev ev = {
		.type = EV_FETCH,
		.tag = f->tag,
		.stream = f->stream,
		.t0 = f->t0,
		.t1 = f->t1,
		.a = f->off,
		.b = f->len,
		.c = f->res > 0 ? (uint64_t)f->res : 0,
		.err = f->res < 0 ? (int32_t)-f->res : 0,
		.flags = f->prefetch ? F_PREFETCH : 0,
	};

	put(&ev);
}

void pf_trace_plan(const struct pf_trace_plan *p)
{
	struct tev ev = {
		.type = EV_PLAN,
		.tag = p->tag,
		.stream = p->stream,
		.pattern = (uint8_t)p->pattern,
		.t0 = p->t,
		.t1 = p->t,
		.a = p->next_off,
		.c = p->batch,
		.d = p->window,
		.n = p->depth,
		.x = p->ahead,
		.y = p->issued,
	};

	put(&ev);
}

void pf_trace_push(uint64_t tag, uint64_t off, uint64_t bytes, uint64_t t0,
		   uint64_t t1, int err)
{
	struct tev ev = {
		.type = EV_PUSH,
		.tag = tag,
		.t0 = t0,
		.t1 = t1,
		.a = off,
		.b = bytes,
		.err = err,
	};

	put(&ev);
}

void pf_trace_counters(uint64_t t, unsigned inflight, unsigned queued,
		       uint64_t memory_used)
{
	struct tev ev = {
		.type = EV_COUNTERS,
		.t0 = t,
		.t1 = t,
		.a = inflight,
		.b = queued,
		.c = memory_used,
	};

	put(&ev);
}

/* Under names_lock: the slot of @tag (free if it has none). */
static struct name *name_slot(uint64_t tag)
{
	size_t i = (size_t)mix(tag) & (pf_tr.nslots - 1);

	while (pf_tr.names[i].path && pf_tr.names[i].tag != tag)
		i = (i + 1) & (pf_tr.nslots - 1);
	return &pf_tr.names[i];
}

static int names_grow(void)
{
	struct name *old = pf_tr.names;
	size_t oslots = pf_tr.nslots;
	size_t nslots = oslots ? oslots * 2 : 256;
	struct name *n = calloc(nslots, sizeof(*n));

	if (!n)
		return -ENOMEM;
	pf_tr.names = n;
	pf_tr.nslots = nslots;
	for (size_t i = 0; i < oslots; i++)
		if (old[i].path)
			*name_slot(old[i].tag) = old[i];
	free(old);
	return 0;
}

void pf_trace_file(uint64_t tag, const char *path)
{
	struct name *n;

	atomic_fetch_add(&pf_tr.users, 1);
	if (!atomic_load(&pf_trace_active))
		goto out;
	pthread_mutex_lock(&pf_tr.names_lock);
	if ((pf_tr.nnames + 1) * 2 > pf_tr.nslots && names_grow() < 0)
		goto unlock;
	n = name_slot(tag);
	if (!n->path) {
		n->path = strdup(path);
		if (n->path) {
			n->tag = tag;
			pf_tr.nnames++;
		}
	}
unlock:
	pthread_mutex_unlock(&pf_tr.names_lock);
out:
	atomic_fetch_sub(&pf_tr.users, 1);
}

/* The writer: the name of the file tagged @tag, or NULL. */
const char *pf_trace_name_of(uint64_t tag)
{
	const char *p = NULL;

	pthread_mutex_lock(&pf_tr.names_lock);
	if (pf_tr.nslots)
		p = name_slot(tag)->path;
	pthread_mutex_unlock(&pf_tr.names_lock);
	return p;
}
/* ---- set-up -------------------------------------------------------------- */

/* The tables and buffers; once the file is finished nothing uses them. */
void pf_trace_free_tables(void)
{
	for (size_t s = 0; s < pf_tr.fslots; s++) {
		if (pf_tr.fams[s])
			free(pf_tr.fams[s]->lanes);
		free(pf_tr.fams[s]);
	}
	free(pf_tr.fams);
	for (size_t s = 0; s < pf_tr.nslots; s++)
		free(pf_tr.names[s].path);
	free(pf_tr.names);
	free(pf_tr.pend);
	free(pf_tr.ring);
	pf_tr.fams = NULL;
	pf_tr.names = NULL;
	pf_tr.pend = NULL;
	pf_tr.ring = NULL;
	pf_tr.fslots = 0;
	pf_tr.nfams = 0;
	pf_tr.nslots = 0;
	pf_tr.nnames = 0;
	pf_tr.npend = 0;
	pf_tr.pcap = 0;
}

static void release(void)
{
	pf_trace_free_tables();
	free(pf_tr.path);
	free(pf_tr.title);
	pf_tr.path = NULL;
	pf_tr.title = NULL;
	pf_tr.opened = false;
}

int pf_trace_open(const struct pf_trace_cfg *cfg, char *err, size_t errlen)
{
	size_t cells = cfg->ring_events ? cfg->ring_events : DEFAULT_RING;
	char why[128];
	int fd;
	int ret;

	if (pf_tr.opened || (cells & (cells - 1)) || cells < 2 ||
	    !(cfg->seconds > 0)) {
		snprintf(err, errlen, "trace '%s': %s", cfg->path,
			 strerror(EINVAL));
		return -EINVAL;
	}
	pf_tr.path = strdup(cfg->path);
	pf_tr.ring = calloc(cells, sizeof(*pf_tr.ring));
	if (!pf_tr.path || !pf_tr.ring) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cells; i++)
		atomic_init(&pf_tr.ring[i].seq, i);
	pf_tr.mask = cells - 1;
	atomic_init(&pf_tr.enq, 0);
	atomic_init(&pf_tr.deq_pub, 0);
	atomic_init(&pf_tr.users, 0);
	atomic_init(&pf_tr.dropped, 0);
	atomic_init(&pf_tr.kick, false);
	atomic_init(&pf_tr.finished, false);
	pf_tr.deq = 0;
	pf_tr.clock = cfg->clock;
	pf_tr.clock_arg = cfg->clock_arg;
	pf_tr.limit_ns = cfg->seconds >= 1e9 ? UINT64_MAX / 2 :
					       (uint64_t)(cfg->seconds * 1e9);
	/* what was read, by name: for the mount's owner only, and never
	 * written (or truncated) through a link or into another's file */
	fd = pf_log_file_open(cfg->path, O_TRUNC, why, sizeof(why));
	if (fd < 0) {
		ret = fd;
		snprintf(err, errlen, "trace '%s': %s", cfg->path, why);
		release();
		return ret;
	}
	if (fchmod(fd, 0600) == 0)
		pf_tr.out = fdopen(fd, "w");
	if (!pf_tr.out) {
		ret = -errno;
		close(fd);
		goto out;
	}
	/* the document's head: a file that exists is a trace being written */
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", pf_tr.out);
	if (fflush(pf_tr.out) != 0) {
		ret = -errno;
		fclose(pf_tr.out);
		pf_tr.out = NULL;
		goto out;
	}
	pf_tr.first = true;
	pf_tr.pid = (int)getpid();
	pf_tr.opened = true;
	return 0;
out:
	snprintf(err, errlen, "trace '%s': %s", cfg->path, strerror(-ret));
	release();
	return ret;
}

int pf_trace_start(const char *title)
{
	pthread_condattr_t ca;
	int ret;

	if (!pf_tr.opened || pf_tr.started)
		return -EINVAL;
	pf_tr.title = title ? strdup(title) : NULL;
	pf_tr.t0 = now_ns();
	pf_tr.last_counter = pf_tr.t0;
	pf_tr.last_ts = pf_tr.t0;
	pf_tr.stop = false;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pf_tr.cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store(&pf_trace_active, true);
	ret = -pthread_create(&pf_tr.thread, NULL, pf_trace_writer_main, NULL);
	if (ret < 0) {
		atomic_store(&pf_trace_active, false);
		pthread_cond_destroy(&pf_tr.cond);
		return ret;
	}
	pthread_setname_np(pf_tr.thread, "pf-trace");
	pf_tr.started = true;
	return 0;
}

void pf_trace_stop(void)
{
	if (!pf_tr.opened)
		return;
	if (pf_tr.started) {
		pthread_mutex_lock(&pf_tr.lock);
		pf_tr.stop = true;
		pthread_cond_signal(&pf_tr.cond);
		pthread_mutex_unlock(&pf_tr.lock);
		pthread_join(pf_tr.thread, NULL);
		pthread_cond_destroy(&pf_tr.cond);
		pf_tr.started = false;
	} else {
		/* opened, never started: a valid trace without events */
		pf_tr.t0 = now_ns();
		pf_tr.stopped_by = "unmount";
		pf_trace_finish();
	}
	release();
}

bool pf_trace_running(void)
{
	return pf_tr.opened && !atomic_load(&pf_tr.finished);
}
