/*
 * trace_write.c - the pipeline trace's writer thread (pf-trace): drains
 * the producers' ring, sorts the events, lays them on tracks of lanes and
 * writes them as Chrome Trace Event Format JSON; finishes the document.
 * It owns the file and every table of pf_tr but the file names.  See
 * trace.c for the design.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_json.h"
#include "pf_log.h"
#include "pf_pattern.h"
#include "trace_int.h"

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
	fprintf(pf_tr.out, "%" PRIu64 ".%03u", ns / 1000,
		(unsigned)(ns % 1000));
}

/* Opens one event: {"name":...,"ts":T and the caller goes on. */
static void ev_head(const char *name, const char *cat, const char *ph,
		    unsigned tid, uint64_t t)
{
	fprintf(pf_tr.out,
		"%s\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%s\","
		"\"pid\":%d,\"tid\":%u,\"ts\":",
		pf_tr.first ? "" : ",", name, cat, ph, pf_tr.pid, tid);
	put_us(t - pf_tr.t0);
	pf_tr.first = false;
	if (t > pf_tr.last_ts)
		pf_tr.last_ts = t;
}

static void put_dur(uint64_t t0, uint64_t t1)
{
	fputs(",\"dur\":", pf_tr.out);
	put_us(t1 > t0 ? t1 - t0 : 0);
}

static void put_err(int err)
{
	if (err) {
		fputs(",\"error\":", pf_tr.out);
		json_str(pf_tr.out, strerror(err));
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
	size_t i = fam_hash(kind, tag, stream) & (pf_tr.fslots - 1);

	while (pf_tr.fams[i] && !(pf_tr.fams[i]->kind == kind &&
				  pf_tr.fams[i]->tag == tag &&
				  pf_tr.fams[i]->stream == stream))
		i = (i + 1) & (pf_tr.fslots - 1);
	return &pf_tr.fams[i];
}

static struct fam *fam_find(enum fam_kind kind, uint64_t tag, unsigned stream)
{
	return pf_tr.fslots ? *fam_slot(kind, tag, stream) : NULL;
}

static struct fam *fam_get(enum fam_kind kind, uint64_t tag, unsigned stream)
{
	struct fam **slot;
	struct fam *f;
	struct fam *sib;

	if ((pf_tr.nfams + 1) * 2 > pf_tr.fslots) {
		size_t oslots = pf_tr.fslots;
		struct fam **old = pf_tr.fams;
		size_t nslots = oslots ? oslots * 2 : 64;
		struct fam **n = calloc(nslots, sizeof(*n));

		if (!n)
			return NULL;
		pf_tr.fams = n;
		pf_tr.fslots = nslots;
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
		f->pair = sib ? sib->pair : ++pf_tr.npairs;
	}
	*slot = f;
	pf_tr.nfams++;
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
			pf_tr.lane_dropped++;
			return -1;
		}
		if (f->nlanes == f->cap) {
			unsigned cap = f->cap ? f->cap * 2 : 2;
			struct lane *n = realloc(f->lanes,
						 cap * sizeof(*n));

			if (!n) {
				pf_tr.nomem_dropped++;
				return -1;
			}
			f->lanes = n;
			f->cap = cap;
		}
		memset(&f->lanes[i], 0, sizeof(f->lanes[i]));
		f->lanes[i].tid = ++pf_tr.next_tid;
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
	pf_tr.hit_runs++;
	if (pf_tr.hit_events >= MAX_HIT_EVENTS && pf_tr.hit_runs % HIT_SAMPLE) {
		pf_tr.hits_unshown += r->reads;
		return;
	}
	pf_tr.hit_events++;
	ev_head(r->reads > 1 ? "hits" : "hit", "read", "X",
		f->lanes[r->lane].tid, r->t0);
	put_dur(r->t0, r->t1);
	fprintf(pf_tr.out,
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
		pf_tr.nomem_dropped++;
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
	fprintf(pf_tr.out,
		",\"args\":{\"offset\":%" PRIu64 ",\"size\":%" PRIu64
		",\"block\":%" PRIu64 ",\"demand_fetch\":%s",
		ev->a, ev->b, ev->c, (ev->flags & F_MISSED) ? "true" : "false");
	put_err(ev->err);
	fputs("}}", pf_tr.out);
}

static void do_fetch(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_FETCHES, ev->tag, ev->stream);
	int lane;

	if (!f) {
		pf_tr.nomem_dropped++;
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	ev_head((ev->flags & F_PREFETCH) ? "read-ahead" : "demand", "fetch",
		"X", f->lanes[lane].tid, ev->t0);
	put_dur(ev->t0, ev->t1);
	fprintf(pf_tr.out,
		",\"args\":{\"offset\":%" PRIu64 ",\"size\":%" PRIu64
		",\"bytes\":%" PRIu64 ",\"stream\":%u",
		ev->a, ev->b, ev->c, ev->stream);
	put_err(ev->err);
	fputs("}}", pf_tr.out);
}

static void do_plan(const struct tev *ev)
{
	struct fam *f = fam_get(FAM_READS, ev->tag, ev->stream);
	int lane;

	if (!f) {
		pf_tr.nomem_dropped++;
		return;
	}
	if (ev->pattern != PF_PAT_UNKNOWN)
		f->pattern = ev->pattern;
	lane = lane_pick(f, ev->t0, ev->t0);
	if (lane < 0)
		return;
	ev_head("refill", "plan", "i", f->lanes[lane].tid, ev->t0);
	fprintf(pf_tr.out,
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
	const char *name = pf_trace_name_of(ev->tag);
	int lane;

	if (!f) {
		pf_tr.nomem_dropped++;
		return;
	}
	lane = lane_pick(f, ev->t0, ev->t1);
	if (lane < 0)
		return;
	ev_head("push", "push", "X", f->lanes[lane].tid, ev->t0);
	put_dur(ev->t0, ev->t1);
	fputs(",\"args\":{\"file\":", pf_tr.out);
	if (name)
		json_str(pf_tr.out, name);
	else
		fprintf(pf_tr.out, "\"inode %" PRIu64 "\"", ev->tag);
	fprintf(pf_tr.out, ",\"offset\":%" PRIu64 ",\"bytes\":%" PRIu64,
		ev->a, ev->b);
	put_err(ev->err);
	fputs("}}", pf_tr.out);
}

static void do_counters(const struct tev *ev)
{
	/* a counter track is one series: never back in time */
	uint64_t t = ev->t0 > pf_tr.last_counter ? ev->t0 : pf_tr.last_counter;

	pf_tr.last_counter = t;
	ev_head("fetches", "counter", "C", 0, t);
	fprintf(pf_tr.out,
		",\"args\":{\"in_flight\":%" PRIu64 ",\"queued\":%" PRIu64
		"}}",
		ev->a, ev->b);
	ev_head("memory", "counter", "C", 0, t);
	fprintf(pf_tr.out, ",\"args\":{\"used_MiB\":%.1f}}",
		(double)ev->c / 1048576.0);
}

static void handle(struct tev *ev)
{
	/* started before the trace (a fetch issued earlier): from time 0 */
	if (ev->t0 < pf_tr.t0)
		ev->t0 = pf_tr.t0;
	if (ev->t1 < ev->t0)
		ev->t1 = ev->t0;
	if (ev->t0 - pf_tr.t0 > pf_tr.limit_ns) {
		pf_tr.late_dropped++;
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

/* Move what the producers published from the ring to pf_tr.pend. */
static void drain(void)
{
	for (;;) {
		struct cell *c = &pf_tr.ring[pf_tr.deq & pf_tr.mask];
		size_t seq = atomic_load_explicit(&c->seq,
						  memory_order_acquire);

		if (seq != pf_tr.deq + 1)
			break;
		if (pf_tr.npend == pf_tr.pcap) {
			size_t cap = pf_tr.pcap ? pf_tr.pcap * 2 : 4096;
			struct tev *n = realloc(pf_tr.pend, cap * sizeof(*n));

			if (n) {
				pf_tr.pend = n;
				pf_tr.pcap = cap;
			}
		}
		if (pf_tr.npend < pf_tr.pcap)
			pf_tr.pend[pf_tr.npend++] = c->ev;
		else
			pf_tr.nomem_dropped++;
		atomic_store_explicit(&c->seq, pf_tr.deq + pf_tr.mask + 1,
				      memory_order_release);
		pf_tr.deq++;
	}
	atomic_store_explicit(&pf_tr.deq_pub, pf_tr.deq, memory_order_relaxed);
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

	if (!pf_tr.npend)
		return;
	qsort(pf_tr.pend, pf_tr.npend, sizeof(*pf_tr.pend), tev_cmp);
	for (i = 0; i < pf_tr.npend && pf_tr.pend[i].t0 <= horizon; i++)
		handle(&pf_tr.pend[i]);
	memmove(pf_tr.pend, pf_tr.pend + i,
		(pf_tr.npend - i) * sizeof(*pf_tr.pend));
	pf_tr.npend -= i;
}

static void thread_meta(const char *what, unsigned tid, const char *key)
{
	fprintf(pf_tr.out,
		",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
		"\"ts\":0,\"args\":{\"%s\":",
		what, pf_tr.pid, tid, key);
}

/* The track names ("M" events), one per lane. */
static void write_names(void)
{
	char name[4200];

	thread_meta("process_name", 0, "name");
	json_str(pf_tr.out, pf_tr.title ? pf_tr.title : "prefetchfs");
	fputs("}}", pf_tr.out);
	thread_meta("thread_name", 0, "name");
	json_str(pf_tr.out, "prefetchfs");
	fputs("}}", pf_tr.out);
	for (size_t s = 0; s < pf_tr.fslots; s++) {
		struct fam *f = pf_tr.fams[s];
		const char *file;
		char inode[40];
		int len;

		if (!f)
			continue;
		file = pf_trace_name_of(f->tag);
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
			json_str(pf_tr.out, name);
			fputs("}}", pf_tr.out);
			thread_meta("thread_sort_index", f->lanes[i].tid,
				    "sort_index");
			fprintf(pf_tr.out, "%u}}",
				f->pair * 256 +
					(f->kind == FAM_FETCHES ? 128 : 0) + i);
		}
	}
}

/* Everything held is written; close the document. */
void pf_trace_finish(void)
{
	uint64_t end = now_ns();

	for (size_t s = 0; s < pf_tr.fslots; s++)
		if (pf_tr.fams[s] && pf_tr.fams[s]->run.on)
			run_flush(pf_tr.fams[s]);
	if (end < pf_tr.t0)
		end = pf_tr.t0;
	if (end - pf_tr.t0 > pf_tr.limit_ns)
		end = pf_tr.t0 + pf_tr.limit_ns;
	if (end < pf_tr.last_ts)
		end = pf_tr.last_ts;
	ev_head("trace end", "trace", "i", 0, end);
	fputs(",\"s\":\"g\"}", pf_tr.out);
	write_names();
	fprintf(pf_tr.out,
		"\n],\n\"otherData\":{\"producer\":\"prefetchfs\","
		"\"stopped_by\":\"%s\",\"limit_s\":%.3f,"
		"\"events_dropped\":%" PRIu64 ",\"hit_reads_unshown\":%" PRIu64
		",\"lanes_full_dropped\":%" PRIu64 ",\"after_limit\":%" PRIu64
		"}}\n",
		pf_tr.stopped_by, (double)pf_tr.limit_ns / 1e9,
		(uint64_t)atomic_load(&pf_tr.dropped) + pf_tr.nomem_dropped,
		pf_tr.hits_unshown, pf_tr.lane_dropped, pf_tr.late_dropped);
	if (ferror(pf_tr.out) | fclose(pf_tr.out))
		pf_warn("trace %s: write failed: %s", pf_tr.path,
			strerror(errno));
	pf_tr.out = NULL;
	atomic_store(&pf_tr.finished, true);
	pf_info("trace %s finished (%s)", pf_tr.path, pf_tr.stopped_by);
}

/* Tracing off; returns once no producer can still write to the ring. */
static void writer_quiesce(void)
{
	atomic_store(&pf_trace_active, false);
	while (atomic_load(&pf_tr.users))
		sched_yield();
}

void *pf_trace_writer_main(void *arg)
{
	bool stop = false;

	(void)arg;
	pf_tr.stopped_by = "unmount";
	while (!stop) {
		struct timespec ts = pf_deadline_ms(TICK_MS);
		uint64_t now;

		pthread_mutex_lock(&pf_tr.lock);
		if (!pf_tr.stop && !atomic_load(&pf_tr.kick))
			pthread_cond_timedwait(&pf_tr.cond, &pf_tr.lock, &ts);
		atomic_store(&pf_tr.kick, false);
		stop = pf_tr.stop;
		pthread_mutex_unlock(&pf_tr.lock);
		now = now_ns();
		if (now >= pf_tr.t0 && now - pf_tr.t0 >= pf_tr.limit_ns) {
			pf_tr.stopped_by = "time limit";
			stop = true;
		}
		if (stop)
			break;
		drain();
		process(now > HOLD_NS ? now - HOLD_NS : 0);
		if (fflush(pf_tr.out) != 0)
			pf_warn("trace %s: %s", pf_tr.path, strerror(errno));
	}
	writer_quiesce();
	drain();
	process(UINT64_MAX);
	pf_trace_finish();
	/* a mount that goes on for days does not keep them */
	pf_trace_free_tables();
	return NULL;
}
