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
 * themselves in and out (tr.users), so that the writer, once it has
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

#include "pf_clock.h"
#include "pf_json.h"
#include "pf_log.h"
#include "pf_pattern.h"
#include "pf_trace.h"

#define TICK_MS 50
#define HOLD_NS (100ull * 1000000u)
#define HIT_GAP_NS 1000000ull
#define MAX_HIT_EVENTS 100000u
#define HIT_SAMPLE 16u
#define MAX_LANES 64u
#define DEFAULT_RING 65536u

atomic_bool pf_trace_active;

enum ev_type { EV_READ = 1, EV_FETCH, EV_PLAN, EV_PUSH, EV_COUNTERS };

#define F_WAITED 1u
#define F_MISSED 2u
#define F_PREFETCH 4u

/* One event as the producers leave it; field use depends on the type. */
struct tev {
	uint64_t t0;
	uint64_t t1;
	uint64_t tag;
	uint64_t a;		/* offset; inflight */
	uint64_t b;		/* size; queued */
	uint64_t c;		/* wait block, bytes; memory; batch */
	uint64_t d;		/* window */
	uint64_t x;		/* ahead */
	uint64_t y;		/* issued */
	uint32_t stream;
	int32_t err;
	uint32_t n;		/* depth */
	uint8_t type;
	uint8_t pattern;
	uint8_t flags;
};

struct cell {
	atomic_size_t seq;
	struct tev ev;
};

enum fam_kind { FAM_READS, FAM_FETCHES, FAM_PUSH };

/* READs answered from memory being gathered into one event */
struct hitrun {
	bool on;
	unsigned lane;
	uint64_t t0;
	uint64_t t1;
	uint64_t off;
	uint64_t end;
	uint64_t reads;
};

struct lane {
	uint64_t start;		/* of the last event on the lane */
	uint64_t end;		/* the latest end of an event on it */
	unsigned tid;
};

/* The lanes of one track: a stream's READs, its fetches, or the pusher. */
struct fam {
	enum fam_kind kind;
	uint64_t tag;
	unsigned stream;
	int pattern;
	unsigned pair;		/* sorts a stream's two families together */
	unsigned nlanes;
	unsigned cap;		/* room in lanes[] */
	struct lane *lanes;
	struct hitrun run;
};

struct name {
	uint64_t tag;
	char *path;		/* NULL: free slot */
};

static struct {
	/* set by pf_trace_open() and pf_trace_start(), then read-only */
	bool opened;
	FILE *out;
	char *path;
	char *title;
	uint64_t limit_ns;
	uint64_t (*clock)(void *arg);
	void *clock_arg;
	uint64_t t0;
	int pid;
	struct cell *ring;
	size_t mask;

	/* producers */
	atomic_size_t enq;
	atomic_size_t deq_pub;	/* the writer's position, for kicks */
	atomic_uint users;
	atomic_uint_fast64_t dropped;

	/* the writer thread; stop and kick under lock */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	atomic_bool kick;
	atomic_bool finished;

	/* the writer's own */
	size_t deq;
	struct tev *pend;
	size_t npend;
	size_t pcap;
	struct fam **fams;	/* open addressing */
	size_t fslots;
	size_t nfams;
	unsigned next_tid;
	unsigned npairs;
	bool first;
	uint64_t last_counter;
	uint64_t hit_events;
	uint64_t hit_runs;
	uint64_t hits_unshown;
	uint64_t lane_dropped;
	uint64_t late_dropped;
	uint64_t nomem_dropped;
	uint64_t last_ts;
	const char *stopped_by;

	/* file names, by tag (open addressing) */
	pthread_mutex_t names_lock;
	struct name *names;
	size_t nslots;
	size_t nnames;
} tr = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t now_ns(void)
{
	return tr.clock ? tr.clock(tr.clock_arg) : pf_now_ns();
}

/* ---- producers ----------------------------------------------------------- */

static void put(const struct tev *ev)
{
	struct cell *c;
	size_t pos;

	/* counted in before looking at the flag: see writer_quiesce() */
	atomic_fetch_add(&tr.users, 1);
	if (!atomic_load(&pf_trace_active))
		goto out;
	pos = atomic_load_explicit(&tr.enq, memory_order_relaxed);
	for (;;) {
		size_t seq;
		intptr_t dif;

		c = &tr.ring[pos & tr.mask];
		seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		dif = (intptr_t)seq - (intptr_t)pos;
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    &tr.enq, &pos, pos + 1,
				    memory_order_relaxed,
				    memory_order_relaxed))
				break;
		} else if (dif < 0) {
			/* full: the writer is behind */
			atomic_fetch_add_explicit(&tr.dropped, 1,
						  memory_order_relaxed);
			goto out;
		} else {
			pos = atomic_load_explicit(&tr.enq,
						   memory_order_relaxed);
		}
	}
	c->ev = *ev;
	atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
	/* half full: wake the writer before its tick */
	if (pos - atomic_load_explicit(&tr.deq_pub, memory_order_relaxed) ==
	    (tr.mask + 1) / 2) {
		atomic_store(&tr.kick, true);
		pthread_cond_signal(&tr.cond);
	}
out:
	atomic_fetch_sub(&tr.users, 1);
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
	size_t i = (size_t)mix(tag) & (tr.nslots - 1);

	while (tr.names[i].path && tr.names[i].tag != tag)
		i = (i + 1) & (tr.nslots - 1);
	return &tr.names[i];
}

static int names_grow(void)
{
	struct name *old = tr.names;
	size_t oslots = tr.nslots;
	size_t nslots = oslots ? oslots * 2 : 256;
	struct name *n = calloc(nslots, sizeof(*n));

	if (!n)
		return -ENOMEM;
	tr.names = n;
	tr.nslots = nslots;
	for (size_t i = 0; i < oslots; i++)
		if (old[i].path)
			*name_slot(old[i].tag) = old[i];
	free(old);
	return 0;
}

void pf_trace_file(uint64_t tag, const char *path)
{
	struct name *n;

	atomic_fetch_add(&tr.users, 1);
	if (!atomic_load(&pf_trace_active))
		goto out;
	pthread_mutex_lock(&tr.names_lock);
	if ((tr.nnames + 1) * 2 > tr.nslots && names_grow() < 0)
		goto unlock;
	n = name_slot(tag);
	if (!n->path) {
		n->path = strdup(path);
		if (n->path) {
			n->tag = tag;
			tr.nnames++;
		}
	}
unlock:
	pthread_mutex_unlock(&tr.names_lock);
out:
	atomic_fetch_sub(&tr.users, 1);
}

/* The writer: the name of the file tagged @tag, or NULL. */
static const char *name_of(uint64_t tag)
{
	const char *p = NULL;

	pthread_mutex_lock(&tr.names_lock);
	if (tr.nslots)
		p = name_slot(tag)->path;
	pthread_mutex_unlock(&tr.names_lock);
	return p;
}

/* ---- JSON output --------------------------------------------------------- */

static void fp_put(void *arg, const char *s, size_t n)
{
	fwrite(s, 1, n, arg);
}

/* @str as a JSON string, by the stats file's rule (pf_json_quote()). */
static void json_str(FILE *fp, const char *str)
{
	pf_json_quote(str, fp_put, fp);
}

/* Microseconds with nanosecond digits: the format's unit. */
static void put_us(uint64_t ns)
{
	fprintf(tr.out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Opens one event: {"name":...,"ts":T and the caller goes on. */
static void ev_head(const char *name, const char *cat, const char *ph,
		    unsigned tid, uint64_t t)
{
	fprintf(tr.out,
		"%s\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%s\","
		"\"pid\":%d,\"tid\":%u,\"ts\":",
		tr.first ? "" : ",", name, cat, ph, tr.pid, tid);
	put_us(t - tr.t0);
	tr.first = false;
	if (t > tr.last_ts)
		tr.last_ts = t;
}

static void put_dur(uint64_t t0, uint64_t t1)
{
	fputs(",\"dur\":", tr.out);
	put_us(t1 > t0 ? t1 - t0 : 0);
}

static void put_err(int err)
{
	if (err) {
		fputs(",\"error\":", tr.out);
		json_str(tr.out, strerror(err));
	}
}

/* ---- tracks -------------------------------------------------------------- */

static size_t fam_hash(enum fam_kind kind, uint64_t tag, unsigned stream)
{
	return (size_t)mix(tag * 0x9E3779B97F4A7C15ull ^
			   ((uint64_t)stream << 2 | kind));
}

static struct fam **fam_slot(enum fam_kind kind, uint64_t tag,
			     unsigned stream)
{
	size_t i = fam_hash(kind, tag, stream) & (tr.fslots - 1);

	while (tr.fams[i] && !(tr.fams[i]->kind == kind &&
			       tr.fams[i]->tag == tag &&
			       tr.fams[i]->stream == stream))
		i = (i + 1) & (tr.fslots - 1);
	return &tr.fams[i];
}

static struct fam *fam_find(enum fam_kind kind, uint64_t tag, unsigned stream)
{
	return tr.fslots ? *fam_slot(kind, tag, stream) : NULL;
}

static struct fam *fam_get(enum fam_kind kind, uint64_t tag, unsigned stream)
{
	struct fam **slot;
	struct fam *f;
	struct fam *sib;

	if ((tr.nfams + 1) * 2 > tr.fslots) {
		size_t oslots = tr.fslots;
		struct fam **old = tr.fams;
		size_t nslots = oslots ? oslots * 2 : 64;
		struct fam **n = calloc(nslots, sizeof(*n));

		if (!n)
			return NULL;
		tr.fams = n;
		tr.fslots = nslots;
		for (size_t i = 0; i < oslots; i++)
			if (old[i])
				*fam_slot(old[i]->kind, old[i]->tag,
					  old[i]->stream) = old[i];
		free(old);
	}
	slot = fam_slot(kind, tag, stream);
	if (*slot)
		return *slot;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->kind = kind;
	f->tag = tag;
	f->stream = stream;
	if (kind == FAM_PUSH) {
		f->pair = 0;
	} else {
		sib = fam_find(kind == FAM_READS ? FAM_FETCHES : FAM_READS,
			       tag, stream);
		f->pair = sib ? sib->pair : ++tr.npairs;
	}
	*slot = f;
	tr.nfams++;
	return f;
}

static void run_flush(struct fam *f);

/*
 * The lane for an event from @t0 to @t1: the first whose events all ended
 * by @t0, else a new one.  An instant (@t1 == @t0) may also go inside the
 * last event of a lane, as long as that started by @t0.  -1 when MAX_LANES
 * are busy.
 */
static int lane_pick(struct fam *f, uint64_t t0, uint64_t t1)
{
	unsigned i;

	for (i = 0; i < f->nlanes; i++)
		if (f->lanes[i].end <= t0 ||
		    (t1 == t0 && f->lanes[i].start <= t0))
			break;
	if (i == f->nlanes) {
		if (f->nlanes == MAX_LANES) {
			tr.lane_dropped++;
			return -1;
		}
		if (f->nlanes == f->cap) {
			unsigned cap = f->cap ? f->cap * 2 : 2;
			struct lane *n = realloc(f->lanes,
						 cap * sizeof(*n));

			if (!n) {
				tr.nomem_dropped++;
				return -1;
			}
			f->lanes = n;
			f->cap = cap;
		}
		memset(&f->lanes[i], 0, sizeof(f->lanes[i]));
		f->lanes[i].tid = ++tr.next_tid;
		f->nlanes++;
	}
	/* the hits gathered on this lane end before this event */
	if (f->run.on && f->run.lane == i)
		run_flush(f);
	f->lanes[i].start = t0;
	if (t1 > f->lanes[i].end)
		f->lanes[i].end = t1;
	return (int)i;
}

static void run_flush(struct fam *f)
{
	struct hitrun *r = &f->run;

	r->on = false;
	tr.hit_runs++;
	if (tr.hit_events >= MAX_HIT_EVENTS && tr.hit_runs % HIT_SAMPLE) {
		tr.hits_unshown += r->reads;
		return;
	}
	tr.hit_events++;
	ev_head(r->reads > 1 ? "hits" : "hit", "read", "X",
		f->lanes[r->lane].tid, r->t0);
	put_dur(r->t0, r->t1);
	fprintf(tr.out,
		",\"args\":{\"offset\":%" PRIu64 ",\"size\":%" PRIu64
		",\"reads\":%" PRIu64 "}}",
		r->off, r->end - r->off, r->reads);
}

/* ---- events -------------------------------------------------------------- */

static void do_hit(struct fam *f, const struct tev *ev)
{
	struct hitrun *r = &f->run;
	int lane;

	if (r->on && ev->a == r->end && ev->t0 >= r->t1 &&
	    ev->t0 - r->t1 <= HIT_GAP_NS) {
		r->t1 = ev->t1;
		r->end += ev->b;
		r->reads++;
		f->lanes[r->lane].end = r->t1;
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	/* one run per stream: the one on another lane ends here */
	if (r->on)
		run_flush(f);
	r->on = true;
	r->lane = (unsigned)lane;
	r->t0 = ev->t0;
	r->t1 = ev->t1;
	r->off = ev->a;
	r->end = ev->a + ev->b;
	r->reads = 1;
}

static void do_read(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_READS, ev->tag, ev->stream);
	int lane;

	if (!f) {
		tr.nomem_dropped++;
		return;
	}
	if (ev->pattern != PF_PAT_UNKNOWN)
		f->pattern = ev->pattern;
	if (!(ev->flags & F_WAITED) && !ev->err) {
		do_hit(f, ev);
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	ev_head(ev->err ? "read error" : "wait", "read", "X",
		f->lanes[lane].tid, ev->t0);
	put_dur(ev->t0, ev->t1);
	fprintf(tr.out,
		",\"args\":{\"offset\":%" PRIu64 ",\"size\":%" PRIu64
		",\"block\":%" PRIu64 ",\"demand_fetch\":%s",
		ev->a, ev->b, ev->c, (ev->flags & F_MISSED) ? "true" : "false");
	put_err(ev->err);
	fputs("}}", tr.out);
}

static void do_fetch(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_FETCHES, ev->tag, ev->stream);
	int lane;

	if (!f) {
		tr.nomem_dropped++;
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	ev_head((ev->flags & F_PREFETCH) ? "read-ahead" : "demand", "fetch",
		"X", f->lanes[lane].tid, ev->t0);
	put_dur(ev->t0, ev->t1);
	fprintf(tr.out,
		",\"args\":{\"offset\":%" PRIu64 ",\"size\":%" PRIu64
		",\"bytes\":%" PRIu64 ",\"stream\":%u",
		ev->a, ev->b, ev->c, ev->stream);
	put_err(ev->err);
	fputs("}}", tr.out);
}

static void do_plan(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_READS, ev->tag, ev->stream);
	int lane;

	if (!f) {
		tr.nomem_dropped++;
		return;
	}
	if (ev->pattern != PF_PAT_UNKNOWN)
		f->pattern = ev->pattern;
	lane = lane_pick(f, ev->t0, ev->t0);
	if (lane < 0)
		return;
	ev_head("refill", "plan", "i", f->lanes[lane].tid, ev->t0);
	fprintf(tr.out,
		",\"s\":\"t\",\"args\":{\"pattern\":\"%s\",\"next_offset\":%"
		PRIu64 ",\"batch\":%" PRIu64 ",\"window\":%" PRIu64
		",\"windows\":%u,\"windows_ahead\":%.2f,\"issued\":%" PRIu64
		"}}",
		pf_pattern_name((enum pf_pattern)ev->pattern), ev->a, ev->c,
		ev->d, ev->n, ev->d ? (double)ev->x / (double)ev->d : 0.0,
		ev->y);
}

static void do_push(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_PUSH, 0, 0);
	const char *name = name_of(ev->tag);
	int lane;

	if (!f) {
		tr.nomem_dropped++;
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	ev_head("push", "push", "X", f->lanes[lane].tid, ev->t0);
	put_dur(ev->t0, ev->t1);
	fputs(",\"args\":{\"file\":", tr.out);
	if (name)
		json_str(tr.out, name);
	else
		fprintf(tr.out, "\"inode %" PRIu64 "\"", ev->tag);
	fprintf(tr.out, ",\"offset\":%" PRIu64 ",\"bytes\":%" PRIu64,
		ev->a, ev->b);
	put_err(ev->err);
	fputs("}}", tr.out);
}

static void do_counters(const struct tev *ev)
{
	/* a counter track is one series: never back in time */
	uint64_t t = ev->t0 > tr.last_counter ? ev->t0 : tr.last_counter;

	tr.last_counter = t;
	ev_head("fetches", "counter", "C", 0, t);
	fprintf(tr.out,
		",\"args\":{\"in_flight\":%" PRIu64 ",\"queued\":%" PRIu64
		"}}",
		ev->a, ev->b);
	ev_head("memory", "counter", "C", 0, t);
	fprintf(tr.out, ",\"args\":{\"used_MiB\":%.1f}}",
		(double)ev->c / 1048576.0);
}

static void handle(struct tev *ev)
{
	/* started before the trace (a fetch issued earlier): from time 0 */
	if (ev->t0 < tr.t0)
		ev->t0 = tr.t0;
	if (ev->t1 < ev->t0)
		ev->t1 = ev->t0;
	if (ev->t0 - tr.t0 > tr.limit_ns) {
		tr.late_dropped++;
		return;
	}
	switch (ev->type) {
	case EV_READ:
		do_read(ev);
		break;
	case EV_FETCH:
		do_fetch(ev);
		break;
	case EV_PLAN:
		do_plan(ev);
		break;
	case EV_PUSH:
		do_push(ev);
		break;
	case EV_COUNTERS:
		do_counters(ev);
		break;
	default:
		break;
	}
}

/* ---- the writer ---------------------------------------------------------- */

/* Move what the producers published from the ring to tr.pend. */
static void drain(void)
{
	for (;;) {
		struct cell *c = &tr.ring[tr.deq & tr.mask];
		size_t seq = atomic_load_explicit(&c->seq,
						  memory_order_acquire);

		if (seq != tr.deq + 1)
			break;
		if (tr.npend == tr.pcap) {
			size_t cap = tr.pcap ? tr.pcap * 2 : 4096;
			struct tev *n = realloc(tr.pend, cap * sizeof(*n));

			if (n) {
				tr.pend = n;
				tr.pcap = cap;
			}
		}
		if (tr.npend < tr.pcap)
			tr.pend[tr.npend++] = c->ev;
		else
			tr.nomem_dropped++;
		atomic_store_explicit(&c->seq, tr.deq + tr.mask + 1,
				      memory_order_release);
		tr.deq++;
	}
	atomic_store_explicit(&tr.deq_pub, tr.deq, memory_order_relaxed);
}

static int tev_cmp(const void *a, const void *b)
{
	const struct tev *x = a;
	const struct tev *y = b;

	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	/* at one instant: longer events first, so that they enclose */
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1;
	return 0;
}

/* Write the held events that started by @horizon, in time order. */
static void process(uint64_t horizon)
{
	size_t i;

	if (!tr.npend)
		return;
	qsort(tr.pend, tr.npend, sizeof(*tr.pend), tev_cmp);
	for (i = 0; i < tr.npend && tr.pend[i].t0 <= horizon; i++)
		handle(&tr.pend[i]);
	memmove(tr.pend, tr.pend + i, (tr.npend - i) * sizeof(*tr.pend));
	tr.npend -= i;
}

static void thread_meta(const char *what, unsigned tid, const char *key)
{
	fprintf(tr.out,
		",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
		"\"ts\":0,\"args\":{\"%s\":",
		what, tr.pid, tid, key);
}

/* The track names ("M" events), one per lane. */
static void write_names(void)
{
	char name[4200];

	thread_meta("process_name", 0, "name");
	json_str(tr.out, tr.title ? tr.title : "prefetchfs");
	fputs("}}", tr.out);
	thread_meta("thread_name", 0, "name");
	json_str(tr.out, "prefetchfs");
	fputs("}}", tr.out);
	for (size_t s = 0; s < tr.fslots; s++) {
		struct fam *f = tr.fams[s];
		const char *file;
		char inode[40];
		int len;

		if (!f)
			continue;
		file = name_of(f->tag);
		if (!file && f->tag == 0) {
			/* no inode yet: opened by the engine ahead of its
			 * reader (next_file) */
			file = "next files, opened ahead";
		} else if (!file) {
			snprintf(inode, sizeof(inode), "inode %" PRIu64,
				 f->tag);
			file = inode;
		}
		if (f->kind == FAM_PUSH)
			len = snprintf(name, sizeof(name), "pusher");
		else if (f->kind == FAM_FETCHES && f->stream)
			len = snprintf(name, sizeof(name),
				       "fetches stream %u %s", f->stream,
				       file);
		else if (f->kind == FAM_FETCHES)
			len = snprintf(name, sizeof(name), "fetches %s", file);
		else if (f->stream)
			len = snprintf(name, sizeof(name), "stream %u %s (%s)",
				       f->stream, file,
				       pf_pattern_name((enum pf_pattern)
						       f->pattern));
		else
			len = snprintf(name, sizeof(name), "reads %s", file);
		if (len < 0 || (size_t)len >= sizeof(name) - 8)
			len = (int)sizeof(name) - 8;
		for (unsigned i = 0; i < f->nlanes; i++) {
			/* a lane number after the first */
			if (i)
				snprintf(name + len, sizeof(name) - (size_t)len,
					 " #%u", i + 1);
			thread_meta("thread_name", f->lanes[i].tid, "name");
			json_str(tr.out, name);
			fputs("}}", tr.out);
			thread_meta("thread_sort_index", f->lanes[i].tid,
				    "sort_index");
			fprintf(tr.out, "%u}}",
				f->pair * 256 +
					(f->kind == FAM_FETCHES ? 128 : 0) + i);
		}
	}
}

/* Everything held is written; close the document. */
static void finish(void)
{
	uint64_t end = now_ns();

	for (size_t s = 0; s < tr.fslots; s++)
		if (tr.fams[s] && tr.fams[s]->run.on)
			run_flush(tr.fams[s]);
	if (end < tr.t0)
		end = tr.t0;
	if (end - tr.t0 > tr.limit_ns)
		end = tr.t0 + tr.limit_ns;
	if (end < tr.last_ts)
		end = tr.last_ts;
	ev_head("trace end", "trace", "i", 0, end);
	fputs(",\"s\":\"g\"}", tr.out);
	write_names();
	fprintf(tr.out,
		"\n],\n\"otherData\":{\"producer\":\"prefetchfs\","
		"\"stopped_by\":\"%s\",\"limit_s\":%.3f,"
		"\"events_dropped\":%" PRIu64 ",\"hit_reads_unshown\":%" PRIu64
		",\"lanes_full_dropped\":%" PRIu64 ",\"after_limit\":%" PRIu64
		"}}\n",
		tr.stopped_by, (double)tr.limit_ns / 1e9,
		(uint64_t)atomic_load(&tr.dropped) + tr.nomem_dropped,
		tr.hits_unshown, tr.lane_dropped, tr.late_dropped);
	if (ferror(tr.out) | fclose(tr.out))
		pf_warn("trace %s: write failed: %s", tr.path,
			strerror(errno));
	tr.out = NULL;
	atomic_store(&tr.finished, true);
	pf_info("trace %s finished (%s)", tr.path, tr.stopped_by);
}

/* Tracing off; returns once no producer can still write to the ring. */
static void writer_quiesce(void)
{
	atomic_store(&pf_trace_active, false);
	while (atomic_load(&tr.users))
		sched_yield();
}

static void free_tables(void);

static void *writer_main(void *arg)
{
	bool stop = false;

	(void)arg;
	tr.stopped_by = "unmount";
	while (!stop) {
		struct timespec ts = pf_deadline_ms(TICK_MS);
		uint64_t now;

		pthread_mutex_lock(&tr.lock);
		if (!tr.stop && !atomic_load(&tr.kick))
			pthread_cond_timedwait(&tr.cond, &tr.lock, &ts);
		atomic_store(&tr.kick, false);
		stop = tr.stop;
		pthread_mutex_unlock(&tr.lock);
		now = now_ns();
		if (now >= tr.t0 && now - tr.t0 >= tr.limit_ns) {
			tr.stopped_by = "time limit";
			stop = true;
		}
		if (stop)
			break;
		drain();
		process(now > HOLD_NS ? now - HOLD_NS : 0);
		if (fflush(tr.out) != 0)
			pf_warn("trace %s: %s", tr.path, strerror(errno));
	}
	writer_quiesce();
	drain();
	process(UINT64_MAX);
	finish();
	/* a mount that goes on for days does not keep them */
	free_tables();
	return NULL;
}

/* ---- set-up -------------------------------------------------------------- */

/* The tables and buffers; once the file is finished nothing uses them. */
static void free_tables(void)
{
	for (size_t s = 0; s < tr.fslots; s++) {
		if (tr.fams[s])
			free(tr.fams[s]->lanes);
		free(tr.fams[s]);
	}
	free(tr.fams);
	for (size_t s = 0; s < tr.nslots; s++)
		free(tr.names[s].path);
	free(tr.names);
	free(tr.pend);
	free(tr.ring);
	tr.fams = NULL;
	tr.names = NULL;
	tr.pend = NULL;
	tr.ring = NULL;
	tr.fslots = 0;
	tr.nfams = 0;
	tr.nslots = 0;
	tr.nnames = 0;
	tr.npend = 0;
	tr.pcap = 0;
}

static void release(void)
{
	free_tables();
	free(tr.path);
	free(tr.title);
	tr.path = NULL;
	tr.title = NULL;
	tr.opened = false;
}

int pf_trace_open(const struct pf_trace_cfg *cfg, char *err, size_t errlen)
{
	size_t cells = cfg->ring_events ? cfg->ring_events : DEFAULT_RING;
	char why[128];
	int fd;
	int ret;

	if (tr.opened || (cells & (cells - 1)) || cells < 2 ||
	    !(cfg->seconds > 0)) {
		snprintf(err, errlen, "trace '%s': %s", cfg->path,
			 strerror(EINVAL));
		return -EINVAL;
	}
	tr.path = strdup(cfg->path);
	tr.ring = calloc(cells, sizeof(*tr.ring));
	if (!tr.path || !tr.ring) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cells; i++)
		atomic_init(&tr.ring[i].seq, i);
	tr.mask = cells - 1;
	atomic_init(&tr.enq, 0);
	atomic_init(&tr.deq_pub, 0);
	atomic_init(&tr.users, 0);
	atomic_init(&tr.dropped, 0);
	atomic_init(&tr.kick, false);
	atomic_init(&tr.finished, false);
	tr.deq = 0;
	tr.clock = cfg->clock;
	tr.clock_arg = cfg->clock_arg;
	tr.limit_ns = cfg->seconds >= 1e9 ? UINT64_MAX / 2 :
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
		tr.out = fdopen(fd, "w");
	if (!tr.out) {
		ret = -errno;
		close(fd);
		goto out;
	}
	/* the document's head: a file that exists is a trace being written */
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", tr.out);
	if (fflush(tr.out) != 0) {
		ret = -errno;
		fclose(tr.out);
		tr.out = NULL;
		goto out;
	}
	tr.first = true;
	tr.pid = (int)getpid();
	tr.opened = true;
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

	if (!tr.opened || tr.started)
		return -EINVAL;
	tr.title = title ? strdup(title) : NULL;
	tr.t0 = now_ns();
	tr.last_counter = tr.t0;
	tr.last_ts = tr.t0;
	tr.stop = false;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&tr.cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store(&pf_trace_active, true);
	ret = -pthread_create(&tr.thread, NULL, writer_main, NULL);
	if (ret < 0) {
		atomic_store(&pf_trace_active, false);
		pthread_cond_destroy(&tr.cond);
		return ret;
	}
	pthread_setname_np(tr.thread, "pf-trace");
	tr.started = true;
	return 0;
}

void pf_trace_stop(void)
{
	if (!tr.opened)
		return;
	if (tr.started) {
		pthread_mutex_lock(&tr.lock);
		tr.stop = true;
		pthread_cond_signal(&tr.cond);
		pthread_mutex_unlock(&tr.lock);
		pthread_join(tr.thread, NULL);
		pthread_cond_destroy(&tr.cond);
		tr.started = false;
	} else {
		/* opened, never started: a valid trace without events */
		tr.t0 = now_ns();
		tr.stopped_by = "unmount";
		finish();
	}
	release();
}

bool pf_trace_running(void)
{
	return tr.opened && !atomic_load(&tr.finished);
}
