/*
 * engine_stats.c - the engine's totals and the stats file's JSON.
 *
 * The notes ("notes"): what the numbers show of the reader that no option
 * of the daemon's own changes.  One kind: a random stream whose READs are
 * mostly the mount's read-ahead (READS_RA of them at least) on a mount
 * without a cache tier.  An mmap reader's page fault makes the kernel read
 * that much around the page, however little the reader uses of it (a 2 KiB
 * window of a token file costs a 1 MiB READ), and without a tier every
 * such READ is a fetch of the source.  What is measured is the READ size
 * and count; what the reader uses of a READ is not seen (its page faults
 * after the first are the kernel's): the note says the size, its cause and
 * the option that sets it (readahead_kb), and no value, since a smaller
 * one was not faster for the token reader (docs/tuning.md).
 *
 * DESIGN
 * Called by whichever thread reads the stats file (a FUSE worker) or a
 * test; takes e->lock to copy the totals and to walk the files and their
 * streams, formats with it released where it can.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pf_pool.h"
#include "pf_strbuf.h"
#include "engine_int.h"
#include "pf_log.h"

#define NOTES_MAX 4
/* READs of a random stream before a note */
#define NOTE_READS 32
/* a read-ahead below this costs little more than a page */
#define NOTE_RA_MIN (64u << 10)

void pf_engine_totals(struct pf_engine *e, struct pf_engine_totals *t)
{
	pthread_mutex_lock(&e->lock);
	*t = e->tot;
	t->inflight = e->inflight + e->queued;
	t->memory_used = (uint64_t)pf_pool_in_use(e->pool) * e->bs;
	pf_cache_memory(e, &t->memory_inflight, &t->memory_ahead,
		     &t->memory_reread);
	t->memory_mapped = pf_pool_resident(e->pool);
	t->memory_warmed = pf_pool_warmed(e->pool);
	t->files = 0;
	t->files_state_bytes = 0;
	for (struct list *l = e->files.next; l != &e->files; l = l->next) {
		t->files++;
		t->files_state_bytes += pf_efile_state_bytes(
			container_of(l, struct pf_efile, node));
	}
	pthread_mutex_unlock(&e->lock);
}

/* ---- stats ----------------------------------------------------------- */

/* Bytes of @st's plan that are in memory, in order, up to the first gap. */
static uint64_t ready_ahead(struct pf_engine *e, struct pf_efile *f,
			    const struct pf_stream *st)
{
	struct pf_extent ext[MAX_EXTENTS];
	struct pf_plan_cfg pc =
		pf_ra_stream_plan_cfg(e, pf_efile_stream_find(f, st->id));
	unsigned n = pf_plan(st, &pc, f->size, ext, MAX_EXTENTS);
	uint64_t ready = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t got = pf_cache_resident_run(e, f, ext[i].off,
					    ext[i].off + ext[i].len, false);

		ready += got;
		if (got < ext[i].len)
			break;
	}
	return ready;
}

static bool recently_read(struct pf_efile *f, uint64_t now)
{
	unsigned n = pf_tracker_count(f->tracker);

	for (unsigned i = 0; i < n; i++) {
		const struct pf_stream *st = pf_tracker_stream(f->tracker, i);

		if (now - st->last_ns < 60ull * 1000000000u)
			return true;
	}
	return false;
}

static void stats_stream(struct pf_strbuf *sb, struct pf_engine *e,
			 struct pf_efile *f, const struct pf_stream *st,
			 bool *first)
{
	struct efile_stream *s = pf_efile_stream_find(f, st->id);
	uint64_t win = pf_plan_window(st, &e->plan);
	uint64_t ready = e->cfg.prefetch ? ready_ahead(e, f, st) : 0;
	pf_strbuf_addf(sb, "%s\n    {\"file\": ", *first ? "" : ",");
	*first = false;
	pf_strbuf_add_json(sb, f->path);
	pf_strbuf_addf(sb,
		  ", \"stream\": %u, \"pattern\": \"%s\", "
		  "\"next_offset\": %" PRIu64 ", \"stride\": %" PRIu64
		  ", \"record\": %" PRIu64 ", \"batch\": %" PRIu64
		  ", \"window\": %" PRIu64 ", \"windows_ahead\": %.2f"
		  ", \"reads\": %" PRIu64 ", \"hits\": %" PRIu64
		  ", \"misses\": %" PRIu64 ", \"waits\": %" PRIu64
		  ", \"inflight_waits\": %" PRIu64
		  ", \"wait_ms\": %.3f, \"bytes_fetched\": %" PRIu64
		  ", \"bytes_served\": %" PRIu64
		  ", \"bytes_unused\": %" PRIu64 ", \"inflight\": %u"
		  ", \"windows\": %u, \"read_bytes\": %" PRIu64
		  ", \"reads_ra\": %" PRIu64 "}",
		  st->id, pf_pattern_name(st->pattern), st->next_off,
		  st->stride, st->record, st->batch, win,
		  win ? (double)ready / (double)win : 0.0, st->reads,
		  s ? s->hits : 0, s ? s->misses : 0, s ? s->waits : 0,
		  s ? s->inflight_waits : 0,
		  s ? (double)s->wait_ns / 1e6 : 0.0,
		  s ? s->bytes_fetched : 0, s ? s->bytes_served : 0,
		  s ? s->bytes_unused : 0, s ? s->inflight : 0,
		  pf_ra_stream_plan_cfg(e, s).windows, st->bytes,
		  s ? s->reads_ra : 0);
}

/*
 * Under the lock: the stats' "notes" (see the top): a random stream of
 * mostly read-ahead READs, at most NOTES_MAX, its file named when @paths.
 */
static void stats_notes(struct pf_strbuf *sb, struct pf_engine *e,
			bool paths, uint64_t now)
{
	uint64_t ra = engine_ra_read(e);
	unsigned n = 0;

	pf_strbuf_addf(sb, ",\n  \"read_ahead\": %" PRIu64
		       ",\n  \"notes\": [", e->read_ahead);
	/* with a cache tier the fill, not the READ's size, decides */
	if (ra < NOTE_RA_MIN || e->be->ops->capacity)
		goto out;
	for (struct list *l = e->files.next; l != &e->files && n < NOTES_MAX;
	     l = l->next) {
		struct pf_efile *f = container_of(l, struct pf_efile, node);
		unsigned ns;

		if (!f->tracker || (!f->opens && !recently_read(f, now)))
			continue;
		ns = pf_tracker_count(f->tracker);
		for (unsigned i = 0; i < ns && n < NOTES_MAX; i++) {
			const struct pf_stream *st =
				pf_tracker_stream(f->tracker, i);
			struct efile_stream *s =
				pf_efile_stream_find(f, st->id);
			char line[PATH_MAX + 256];
			uint64_t reads;

			if (!s || st->pattern != PF_PAT_RANDOM)
				continue;
			/* READs answered, counted where reads_ra is (the
			 * tracker's st->reads moves with its merges) */
			reads = s->hits + s->waits;
			if (reads < NOTE_READS || s->reads_ra * 4 < reads * 3)
				continue;
			snprintf(line, sizeof(line),
				 "random READs of %s: %" PRIu64 " of %" PRIu64
				 " are %" PRIu64 " KiB, the mount's read-ahead"
				 ": the kernel reads that much around each "
				 "page an mmap reader faults in, however "
				 "little it uses; readahead_kb=N sets it "
				 "(docs/tuning.md)",
				 paths ? f->path : "a file", s->reads_ra,
				 reads, ra >> 10);
			pf_strbuf_addf(sb, n ? ", " : "");
			pf_strbuf_add_json(sb, line);
			n++;
		}
	}
out:
	pf_strbuf_addf(sb, "]");
}

char *pf_engine_stats_json(struct pf_engine *e, const char *backend_desc)
{
	return pf_engine_stats_json_for(e, backend_desc, NULL);
}

char *pf_engine_stats_json_for(struct pf_engine *e, const char *backend_desc,
			       const struct pf_engine_cred *viewer)
{
	/* another user than the owner: totals, no path, its own plans */
	bool all = !viewer || viewer->owner;
	struct pf_strbuf sb;
	struct pf_engine_totals t;
	bool first = true;
	uint64_t now;

	pf_strbuf_init(&sb, 4096);
	pf_engine_totals(e, &t);
	pf_strbuf_addf(&sb, "{\n  \"backend\": ");
	pf_strbuf_add_json(&sb, backend_desc);
	if (e->be->ops->stats_json) {
		char bs[4096];

		e->be->ops->stats_json(e->be, bs, sizeof(bs));
		pf_strbuf_addf(&sb, ",\n  \"transport\": %s", bs);
	}
	{
		char notes[PF_LOG_NOTES][PF_LOG_NOTE_MAX];
		unsigned n = pf_log_notes(notes, PF_LOG_NOTES);

		/* the process's warnings that cost an order of magnitude */
		pf_strbuf_addf(&sb, ",\n  \"warnings\": [");
		for (unsigned i = 0; i < n; i++) {
			pf_strbuf_addf(&sb, i ? ", " : "");
			pf_strbuf_add_json(&sb, notes[i]);
		}
		pf_strbuf_addf(&sb, "]");
	}
	pf_strbuf_addf(&sb,
		  ",\n  \"prefetch\": %s,\n  \"push\": %s,\n"
		  "  \"block_size\": %u,\n"
		  "  \"fetch_size\": %" PRIu64 ",\n  \"max_inflight\": %u,\n"
		  "  \"prefetch_batches\": %u,\n"
		  "  \"totals\": {\"reads\": %" PRIu64 ", \"hits\": %" PRIu64
		  ", \"misses\": %" PRIu64 ", \"waits\": %" PRIu64
		  ", \"inflight_waits\": %" PRIu64
		  ", \"wait_ms\": %.3f, \"miss_wait_ms\": %.3f"
		  ", \"bytes_served\": %" PRIu64 ", \"bytes_hit\": %" PRIu64
		  ", \"bytes_fetched\": %" PRIu64
		  ", \"bytes_prefetched\": %" PRIu64
		  ", \"bytes_unused\": %" PRIu64 ", \"bytes_pushed\": %" PRIu64
		  ", \"self_reads\": %" PRIu64 ", \"self_misses\": %" PRIu64
		  ", \"next_files\": %" PRIu64 ", \"fetches\": %" PRIu64
		  ", \"fetches_done\": %" PRIu64 ", \"fetch_ms\": %.3f"
		  ", \"fetch_errors\": %" PRIu64
		  ", \"fetches_started\": %" PRIu64 ", \"inflight\": %u"
		  ", \"memory_used\": %" PRIu64 ", \"memory_max\": %" PRIu64
		  ", \"memory_inflight\": %" PRIu64
		  ", \"memory_ahead\": %" PRIu64
		  ", \"memory_reread\": %" PRIu64
		  ", \"memory_mapped\": %" PRIu64
		  ", \"memory_warmed\": %" PRIu64
		  ", \"files\": %" PRIu64
		  ", \"files_state_bytes\": %" PRIu64
		  ", \"opens\": %" PRIu64 ", \"quiet_opens\": %" PRIu64
		  ", \"quiet_bytes\": %" PRIu64
		  "},\n  \"uptime_s\": %.3f",
		  e->cfg.prefetch ? "true" : "false",
		  e->push_fn ? "true" : "false", e->bs,
		  e->cfg.fetch_size, e->cfg.max_inflight,
		  e->cfg.prefetch_batches, t.reads, t.hits, t.misses, t.waits,
		  t.inflight_waits, (double)t.wait_ns / 1e6,
		  (double)t.miss_wait_ns / 1e6, t.bytes_served, t.bytes_hit,
		  t.bytes_fetched,
		  t.bytes_prefetched, t.bytes_unused, t.bytes_pushed,
		  t.self_reads, t.self_misses,
		  t.next_files, t.fetches, t.fetches_done,
		  (double)t.fetch_ns / 1e6, t.fetch_errors, t.fetches_started, t.inflight,
		  t.memory_used, t.memory_max,
		  t.memory_inflight, t.memory_ahead, t.memory_reread,
		  t.memory_mapped, t.memory_warmed, t.files,
		  t.files_state_bytes, t.opens, t.quiet_opens, t.quiet_bytes,
		  (double)(engine_now(e) - e->t_start) / 1e9);
	now = engine_now(e);
	pthread_mutex_lock(&e->lock);
	e->hooks->stats_locked(e, &sb, all);
	stats_notes(&sb, e, all, now);
	pf_strbuf_addf(&sb, ",\n  \"streams\": [");
	for (struct list *l = e->files.next; all && l != &e->files;
	     l = l->next) {
		struct pf_efile *f = container_of(l, struct pf_efile, node);
		unsigned n;

		/* open files, and closed ones read in the last minute */
		if (!f->tracker || (!f->opens && !recently_read(f, now)))
			continue;
		n = pf_tracker_count(f->tracker);
		for (unsigned i = 0; i < n; i++)
			stats_stream(&sb, e, f,
				     pf_tracker_stream(f->tracker, i),
				     &first);
	}
	pthread_mutex_unlock(&e->lock);
	pf_strbuf_addf(&sb, "\n  ]");
	e->hooks->stats(e, &sb, viewer);
	pf_strbuf_addf(&sb, "\n}\n");
	return pf_strbuf_detach(&sb, NULL);
}
