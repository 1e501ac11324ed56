/*
 * objstore.c - the object-storage backends: a plain HTTP(S) server
 * (http(s)://host/prefix/, listed through its directory index or a
 * manifest) and S3 (s3://bucket/prefix, listed with ListObjectsV2), both
 * behind the backend ops table and both on one curl multi loop
 * (curl_loop.c).  This file has the ops and the constructors;
 * objstore_dir.c the directory table and the listing of a directory at
 * the server, objstore_listings.c the listings file and its refresher
 * thread; objstore_int.h what they share.
 *
 * DESIGN
 * The namespace is a cache of directory listings, keyed by directory path.
 * A directory is listed the first time something inside it is looked up or
 * it is read, once, by one thread; others asking meanwhile wait on
 * o->cond.  Datasets are immutable, so a listing is kept for the life of
 * the mount (the kernel's entry and attribute caches, cache_timeout, sit
 * in front of it anyway).  With a manifest the whole tree is known at
 * mount and nothing is listed.  o->lock guards the directory table,
 * every entry and list_bytes; no request is made under it.
 *
 * Listings are bounded: the memory of every listing kept (entries, names,
 * ETags; a manifest's tree too) counts against o->list_max (a quarter of
 * max_memory), an S3 directory has at most LIST_PAGES_MAX pages and a
 * continuation token that comes back ends its listing; either fails that
 * directory (-ENOMEM, -EIO: logged with the reason), the mount stays.
 *
 * open() pins the object's version: its size and ETag, or Last-Modified
 * where the server sends no ETag.  The listing's when it gave them (S3:
 * ETag and size; nginx's JSON index: size and mtime to the second) and
 * they were learnt less than o->revalidate_s ago: no request.  Else a
 * HEAD, whose answer is written into the entry (struct ent), so that
 * getattr says from then on what was pinned (an index without exact
 * sizes, a wrong manifest: the object's size wins).  Every ranged GET of
 * the file carries If-Match with that ETag (else If-Unmodified-Since) and
 * is checked against the size (curl_loop.c), so an object replaced while
 * it is read gives -EIO, never bytes of two versions.  The pinned st_mtim
 * carries a hash of the ETag in its nanoseconds, so that the engine,
 * which compares size and mtime between opens, also sees a replacement
 * within the same second.  The entries are plain data (names, sizes,
 * times, ETags, the second they were learnt), so the listing cache can be
 * written out and read back as it is.
 *
 * A listing that gives the exact size but no version (nginx's HTML index:
 * minutes, no ETag) is trusted for an open as a version-giving one is,
 * within revalidate of the listing: the open reports the listing's size
 * and time and makes no request, and the version is pinned lazily by the
 * first ranged GET's answer (struct lpin, a struct pf_cpin the curl loop
 * fills: its ETag, else its Last-Modified; its Content-Range total must
 * be the size the open reported).  Every later answer of every open that
 * shares the pin is checked against it and every later try carries
 * If-Match, as for a version pinned at open; the first answer's version
 * is then written into the entry (lazy_record(), on the loop thread,
 * under o->lock), so later opens pin it without a request.  All opens of
 * an entry made before its version is known share its one lpin, so the
 * blocks the engine keeps for the entry's st_mtim are of one version;
 * when an ETag pins, the entry keeps that st_mtim (and a HEAD that finds
 * the same ETag keeps it too), so a later open keeps those blocks.  A
 * read that finds the object changed (another size, ETag or Last-Modified,
 * 412, 416: -EIO; or gone, 404: -ENOENT) sets ent->head: the next open
 * makes a HEAD.  An ETag-less server pinned by Last-Modified gives the
 * entry that exact time, so the next open reports another st_mtim and
 * the blocks read so far are dropped once.  Not with cache_dir, whose disk
 * cache keeps blocks by the version an open reports across mounts: a
 * listing's minute would not tell a replacement of the same size.
 *
 * With cfg->listings (a file in -o cache_dir, named by main.c) the
 * listings outlive the mount: the mount still lists the root (the check
 * that the source answers; unreachable fails the mount as without the
 * file), then reads the file once and takes every other directory in it
 * as listed, each entry's version as learnt at the wall-clock second
 * stored, so revalidate counts its age across the remount.  One thread,
 * the refresher, lists a stored directory again once it is older than
 * revalidate (then it is as if listed now), and writes the file (temp,
 * fsync, rename; FNV-1a checksum, a damaged file is ignored with one log
 * line) at most every LISTINGS_SAVE_S seconds after a change and at
 * destroy.  It takes o->lock as the ops do and never requests under it;
 * o->save_lock orders the writers of the file (refresher, destroy).
 *
 * Ownership: a struct obj_file (the engine's opaque struct pf_bfile)
 * belongs to the engine between open() and close(); a bio's request
 * (struct oio) is freed by its completion.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "pf_backend.h"
#include "pf_curl.h"
#include "pf_listing.h"
#include "pf_log.h"
#include "pf_objstore.h"
#include "pf_creds.h"
#include "pf_s3conf.h"
#include "pf_strbuf.h"
#include "objstore_int.h"

/*
 * An open object: what the engine holds as the opaque struct pf_bfile
 * (pf_backend.h) is one of these; to_ofile() converts.
 */
struct obj_file {
	struct obj *o;
	char *path;
	char *url;
	char etag[128];
	int64_t size;
	int64_t mtime;		/* pinned Last-Modified when no etag */
	struct lpin *lazy;	/* pinned by the first GET, or NULL */
};

static struct obj_file *to_ofile(struct pf_bfile *bf)
{
	return (struct obj_file *)bf;
}

/* One bio's request. */
struct oio {
	struct pf_creq r;
	struct pf_bio *bio;
	struct obj_file *f;
};

/* ---- ops ---------------------------------------------------------------- */

static int head(struct obj *o, const char *path, struct pf_creq *r,
		char *url, size_t urllen)
{
	int ret = pf_obj_url_of(o, path, url, urllen);

	if (ret < 0)
		return ret;
	memset(r, 0, sizeof(*r));
	r->kind = PF_CREQ_HEAD;
	r->url = url;
	ret = pf_curl_run(o->curl, r);
	free(r->buf);
	r->buf = NULL;
	if (ret == 0 && r->size < 0) {
		snprintf(r->errmsg, sizeof(r->errmsg),
			 "no Content-Length in the answer to HEAD");
		ret = -EIO;
	}
	return ret;
}

/*
 * Records in @e (under o->lock) the version a HEAD found: from now on
 * getattr says what open pins.  An ETag's memory is not held against the
 * listing limit (one per file opened).
 */
static void ent_pin(struct obj *o, struct ent *e, const struct pf_creq *r)
{
	char *etag = r->etag[0] ? strdup(r->etag) : NULL;
	/* the version pinned before: it keeps its st_mtim (see DESIGN) */
	bool same = etag && e->etag && strcmp(etag, e->etag) == 0 &&
		    e->size == r->size;

	if (e->etag)
		o->list_bytes -= strlen(e->etag) + 1;
	free(e->etag);
	e->etag = etag;
	if (etag)
		o->list_bytes += strlen(etag) + 1;
	if (!same) {
		e->nsec = pf_obj_etag_nsec(etag);
		if (r->mtime > 0)
			e->mtime = r->mtime;
	}
	e->size = r->size;
	e->seen = pf_obj_mono_s();
	e->head = false;
	pf_obj_lpin_put(e->lazy);
	e->lazy = NULL;
	o->dirty = true;	/* the listings file keeps it too */
}

/*
 * May an open of @e (in @d, under o->lock) answer from the listing and
 * pin the version from its first GET?  Only for a listing that gave the
 * exact size and no version (nginx's HTML index), young enough to be
 * trusted as a version-giving one is, and only without cache_dir or a
 * shared cache tier (cfg->exact_versions): they keep blocks by the version
 * an open reports, and a lazy open reports the listing's size and minute.
 */
static bool lazy_ok(const struct obj *o, const struct dir *d,
		    const struct ent *e)
{
	return o->lazy_pins && o->kind == KIND_HTTP && !o->manifest &&
	       o->revalidate_s && !e->is_dir && e->size >= 0 && e->seen < 0 &&
	       !e->etag && !e->head &&
	       pf_obj_mono_s() - d->learned < (int64_t)o->revalidate_s;
}

/*
 * The entry of @path, copied into *copy (its etag, if any, into etag[128]),
 * listing its directory if needed.  -ENOENT if there is none.
 */
static int ent_get(struct obj *o, const char *path, struct ent *copy,
		   char *etag, struct lpin **lazy)
{
	char dirbuf[PATH_MAX];
	const char *name = pf_obj_split_path(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;
	int ret;

	ret = pf_obj_dir_get(o, dirbuf, &d);
	if (ret < 0)
		return ret;
	e = pf_obj_dir_lookup(d, name);
	if (!e) {
		pthread_mutex_unlock(&o->lock);
		return -ENOENT;
	}
	*copy = *e;
	copy->name = NULL;
	copy->etag = NULL;
	copy->lazy = NULL;
	etag[0] = '\0';
	if (e->etag) {
		snprintf(etag, 128, "%s", e->etag);
		copy->etag = etag;
	}
	if (lazy && lazy_ok(o, d, e)) {
		/* every open until the version is known shares one pin */
		if (!e->lazy) {
			e->lazy = calloc(1, sizeof(*e->lazy));
			if (e->lazy)
				atomic_init(&e->lazy->refs, 1);
		}
		if (e->lazy) {
			atomic_fetch_add(&e->lazy->refs, 1);
			*lazy = e->lazy;
		}
	}
	pthread_mutex_unlock(&o->lock);
	return 0;
}

/* HEAD @path, and record what it found in its entry. */
static int head_pin(struct obj *o, const char *path, struct pf_creq *r,
		    char *url, size_t urllen)
{
	char dirbuf[PATH_MAX];
	const char *name = pf_obj_split_path(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;
	int ret;

	ret = head(o, path, r, url, urllen);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&o->lock);
	d = pf_obj_dir_find(o, dirbuf);
	e = d && d->state == D_LOADED ? pf_obj_dir_lookup(d, name) : NULL;
	if (e && !e->is_dir)
		ent_pin(o, e, r);
	pthread_mutex_unlock(&o->lock);
	return 0;
}

static int obj_getattr(struct pf_backend *be, const char *path,
		       struct stat *st)
{
	struct obj *o = (struct obj *)be;
	struct ent copy;
	char etag[128];
	int ret;

	if (!*path) {
		struct ent root = { .is_dir = 1, .mtime = -1 };

		pf_obj_fill_stat(st, &root, o->mount_time);
		return 0;
	}
	ret = ent_get(o, path, &copy, etag, NULL);
	if (ret < 0)
		return ret;
	if (!copy.is_dir && copy.size < 0) {
		/* the index gave no exact size (Apache): ask the object */
		struct pf_creq r;
		char url[URL_MAX];

		ret = head_pin(o, path, &r, url, sizeof(url));
		if (ret < 0) {
			pf_obj_log_fail(
				"cannot get the size of", path, &r, ret);
			return ret;
		}
		copy.size = r.size;
		if (r.mtime > 0)
			copy.mtime = r.mtime;
		copy.nsec = pf_obj_etag_nsec(r.etag);
	}
	pf_obj_fill_stat(st, &copy, o->mount_time);
	return 0;
}

static int obj_readdir(struct pf_backend *be, const char *path,
		       pf_dirent_fn fn, void *arg)
{
	struct obj *o = (struct obj *)be;
	struct listing l = { 0 };
	struct dir *d;
	int ret;

	if (*path) {
		struct stat st;

		ret = obj_getattr(be, path, &st);
		if (ret < 0)
			return ret;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	ret = pf_obj_dir_get(o, path, &d);
	if (ret < 0)
		return ret;
	/* copy, so that fn runs without the lock */
	for (size_t i = 0; i < d->n && ret == 0; i++) {
		ret = pf_obj_listing_add(&l, d->ents[i].name, d->ents[i].is_dir,
				  d->ents[i].size, d->ents[i].mtime);
		if (ret == 0)
			l.ents[l.n - 1].nsec = d->ents[i].nsec;
	}
	pthread_mutex_unlock(&o->lock);
	for (size_t i = 0; i < l.n && ret == 0; i++) {
		struct stat st;

		pf_obj_fill_stat(&st, &l.ents[i], o->mount_time);
		if (fn(arg, l.ents[i].name, &st))
			break;
	}
	pf_obj_ents_free(l.ents, l.n);
	return ret;
}

static int obj_readlink(struct pf_backend *be, const char *path, char *buf,
			size_t size)
{
	(void)be;
	(void)path;
	(void)buf;
	(void)size;
	return -EINVAL;		/* object stores have no symlinks */
}

/*
 * Pins the version of @path: from its listing entry when that gave one
 * and it is younger than -o revalidate (no request); lazily, from the
 * first GET, when the listing gave only the size (lazy_ok()); else with a
 * HEAD.
 */
static int obj_open(struct pf_backend *be, const char *path,
		    struct pf_bfile **out, struct stat *st)
{
	struct obj *o = (struct obj *)be;
	struct lpin *lazy = NULL;
	struct obj_file *f;
	struct pf_creq r;
	char url[URL_MAX];
	struct ent e;
	char etag[128];
	int64_t pin_mtime;
	int ret;

	if (!*path)
		return -EISDIR;
	ret = ent_get(o, path, &e, etag, &lazy);
	if (ret < 0)
		return ret;
	if (e.is_dir) {
		ret = -EISDIR;
		goto out;
	}
	pin_mtime = e.mtime;
	if (lazy) {
		/* the listing's size and time; the version comes later */
		ret = pf_obj_url_of(o, path, url, sizeof(url));
		if (ret < 0)
			goto out;
		pin_mtime = -1;
	} else if (e.seen >= 0 && e.size >= 0 && o->revalidate_s &&
		   pf_obj_mono_s() - e.seen < (int64_t)o->revalidate_s) {
		ret = pf_obj_url_of(o, path, url, sizeof(url));
		if (ret < 0)
			return ret;
	} else {
		/* the version pinned before keeps its st_mtim (ent_pin) */
		bool same;

		ret = head_pin(o, path, &r, url, sizeof(url));
		if (ret < 0) {
			pf_obj_log_fail("cannot open", path, &r, ret);
			return ret;
		}
		same = etag[0] && strcmp(etag, r.etag) == 0 &&
		       e.size == r.size;
		snprintf(etag, sizeof(etag), "%s", r.etag);
		e.size = r.size;
		/* no Last-Modified: nothing to pin by but the size */
		pin_mtime = r.mtime > 0 ? r.mtime : -1;
		if (!same) {
			e.mtime = pin_mtime;
			e.nsec = pf_obj_etag_nsec(etag);
		}
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	f->o = o;
	f->path = strdup(path);
	f->url = strdup(url);
	if (!f->path || !f->url) {
		free(f->path);
		free(f->url);
		free(f);
		ret = -ENOMEM;
		goto out;
	}
	snprintf(f->etag, sizeof(f->etag), "%s", etag);
	f->size = e.size;
	f->mtime = pin_mtime;
	f->lazy = lazy;
	lazy = NULL;
	pf_obj_fill_stat(st, &e, o->mount_time);
	*out = (struct pf_bfile *)f;
	ret = 0;
out:
	pf_obj_lpin_put(lazy);
	return ret;
}

static void obj_close(struct pf_backend *be, struct pf_bfile *bf)
{
	struct obj_file *f = to_ofile(bf);

	(void)be;
	pf_obj_lpin_put(f->lazy);
	free(f->path);
	free(f->url);
	free(f);
}

/* A read found @path changed: its next open asks the server again (a
 * HEAD), however young its entry or listing. */
static void ent_stale(struct obj *o, const char *path)
{
	char dirbuf[PATH_MAX];
	const char *name = pf_obj_split_path(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;

	pthread_mutex_lock(&o->lock);
	d = pf_obj_dir_find(o, dirbuf);
	e = d && d->state == D_LOADED ? pf_obj_dir_lookup(d, name) : NULL;
	if (e) {
		e->seen = -1;
		e->head = true;
		pf_obj_lpin_put(e->lazy);
		e->lazy = NULL;
	}
	pthread_mutex_unlock(&o->lock);
}

/*
 * The first answer to a GET of @f pinned its lazy pin (loop thread): the
 * entry takes that version, so that later opens pin it as if a HEAD had
 * found it.  The entry keeps its st_mtim when an ETag pins (the engine
 * and the kernel keep the blocks read so far); a Last-Modified pin is
 * its time, which later opens send as If-Unmodified-Since.  Without
 * either, the entry keeps sharing the pin.
 */
static void lazy_record(struct obj *o, struct obj_file *f)
{
	const struct pf_cpin *p = &f->lazy->cpin;
	char dirbuf[PATH_MAX];
	const char *name = pf_obj_split_path(f->path, dirbuf, sizeof(dirbuf));
	char *etag = p->etag[0] ? strdup(p->etag) : NULL;
	struct dir *d;
	struct ent *e;

	f->lazy->recorded = true;
	if (!etag && p->mtime <= 0)
		return;
	pthread_mutex_lock(&o->lock);
	d = pf_obj_dir_find(o, dirbuf);
	e = d && d->state == D_LOADED ? pf_obj_dir_lookup(d, name) : NULL;
	/* not if a read found it changed meanwhile (ent_stale) */
	if (e && e->lazy == f->lazy && !e->etag) {
		if (etag) {
			e->etag = etag;
			etag = NULL;
			o->list_bytes += strlen(e->etag) + 1;
		} else {
			e->mtime = p->mtime;
		}
		e->seen = pf_obj_mono_s();
		pf_obj_lpin_put(e->lazy);
		e->lazy = NULL;
		o->dirty = true;
	}
	pthread_mutex_unlock(&o->lock);
	free(etag);
}

static void oio_done(struct pf_creq *r, int err)
{
	struct oio *io = (struct oio *)r;
	struct pf_bio *bio = io->bio;
	int64_t res = err < 0 ? err : (int64_t)r->len;

	/* the engine answers READs EIO either way, and fails the range's
	 * next READs at once for a while: they would time out again */
	if (err == -EIO && r->timed_out)
		res = -ETIMEDOUT;
	if (err < 0 && err != -ECANCELED)
		pf_warn("read of '%s' bytes %" PRIu64 "-%" PRIu64 " failed: "
			"%s (%s)", io->f->path, r->off, r->off + r->len - 1,
			strerror(-err), r->errmsg[0] ? r->errmsg : "no detail");
	if (r->changed)
		ent_stale(io->f->o, io->f->path);
	else if (io->f->lazy && io->f->lazy->cpin.pinned &&
		 !io->f->lazy->recorded)
		lazy_record(io->f->o, io->f);
	free(r->buf);
	free(io);
	bio->done(bio, res);
}

static void oio_started(struct pf_creq *r)
{
	struct pf_bio *bio = ((struct oio *)r)->bio;

	bio->started(bio);
}

static int obj_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct obj *o = (struct obj *)be;
	struct obj_file *f = to_ofile(bio->file);
	uint64_t want = 0;
	struct oio *io;
	int ret;

	for (int i = 0; i < bio->iovcnt; i++)
		want += bio->iov[i].iov_len;
	if (f->size >= 0 && bio->off >= (uint64_t)f->size)
		want = 0;
	else if (f->size >= 0 && want > (uint64_t)f->size - bio->off)
		want = (uint64_t)f->size - bio->off;
	if (!want) {
		bio->done(bio, 0);
		return 0;
	}
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->bio = bio;
	io->f = f;
	io->r.kind = PF_CREQ_RANGE;
	io->r.url = f->url;
	io->r.off = bio->off;
	io->r.len = want;
	io->r.iov = bio->iov;
	io->r.iovcnt = bio->iovcnt;
	io->r.if_match = f->etag[0] ? f->etag : NULL;
	io->r.pin_size = f->size;
	io->r.pin_mtime = f->etag[0] ? -1 : f->mtime;
	io->r.pin = f->lazy ? &f->lazy->cpin : NULL;
	io->r.done = oio_done;
	io->r.started = bio->started ? oio_started : NULL;
	ret = pf_curl_submit(o->curl, &io->r);
	if (ret < 0)
		free(io);
	return ret;
}

static int obj_statfs(struct pf_backend *be, struct statvfs *sv)
{
	(void)be;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 1 << 20;
	sv->f_frsize = 1 << 20;
	sv->f_namemax = 1024;
	return 0;
}

static void obj_cancel(struct pf_backend *be)
{
	pf_curl_stop(((struct obj *)be)->curl);
}


static void obj_destroy(struct pf_backend *be)
{
	struct obj *o = (struct obj *)be;

	pf_obj_ahead_stop(o);
	pf_obj_listings_stop(o);
	pf_curl_free(o->curl);
	pf_creds_free(o->creds);
	for (size_t i = 0; i < o->nbuckets; i++) {
		struct dir *d = o->dirs[i];

		while (d) {
			struct dir *n = d->hnext;

			pf_obj_ents_free(d->ents, d->n);
			free(d->path);
			free(d);
			d = n;
		}
	}
	free(o->dirs);
	if (o->listings)
		close(o->listings_dirfd);
	free(o->listings);
	free(o->source);
	pthread_mutex_destroy(&o->lock);
	pthread_cond_destroy(&o->cond);
	pthread_cond_destroy(&o->tick);
	pthread_mutex_destroy(&o->save_lock);
	explicit_bzero(&o->s3.cred, sizeof(o->s3.cred));
	free(o);
}

static void obj_stats_json(struct pf_backend *be, char *buf, size_t size)
{
	struct pf_curl_totals t;

	pf_curl_totals(((struct obj *)be)->curl, &t);
	snprintf(buf, size,
		 "{\"requests\": %" PRIu64 ", \"retries\": %" PRIu64
		 ", \"errors\": %" PRIu64 ", \"resumed\": %" PRIu64
		 ", \"whole_bodies\": %" PRIu64 ", \"connects\": %" PRIu64
		 ", \"lowat_bodies\": %" PRIu64
		 ", \"range_gets\": %" PRIu64 ", \"range_bytes\": %" PRIu64
		 ", \"range_ms\": %.1f, \"range_ttfb_ms\": %.1f"
		 ", \"active\": %u, \"dirs_listed_ahead\": %u}",
		 t.requests, t.retries, t.errors, t.resumed, t.full_bodies,
		 t.connects, t.lowat_bodies, t.range_gets, t.range_bytes,
		 t.range_us / 1e3, t.range_ttfb_us / 1e3, t.active,
		 pf_obj_ahead_listed((struct obj *)be));
}

/* The two backends differ only in how they list and sign, not in ops. */
#define OBJ_OPS(backend_name)                 \
	{                                     \
		.name = backend_name,         \
		.getattr = obj_getattr,       \
		.readdir = obj_readdir,       \
		.readlink = obj_readlink,     \
		.open = obj_open,             \
		.close = obj_close,           \
		.submit = obj_submit,         \
		.statfs = obj_statfs,         \
		.destroy = obj_destroy,       \
		.cancel = obj_cancel,         \
		.stats_json = obj_stats_json, \
	}

static const struct pf_backend_ops http_ops = OBJ_OPS("http");
static const struct pf_backend_ops s3_ops = OBJ_OPS("s3");

/* ---- construction ---------------------------------------------------------- */

static struct obj *obj_alloc(void)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->nbuckets = 256;
	o->dirs = calloc(o->nbuckets, sizeof(*o->dirs));
	if (!o->dirs) {
		free(o);
		return NULL;
	}
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	pthread_mutex_init(&o->save_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&o->tick, &ca);
		pthread_condattr_destroy(&ca);
	}
	o->mount_time = (int64_t)time(NULL);
	return o;
}

/* Adds an entry to a directory built at mount (a manifest's). */
static int dir_append(struct obj *o, struct dir *d, const char *name,
		      int is_dir, int64_t size)
{
	struct listing l = { .ents = d->ents, .n = d->n, .cap = d->cap };
	int ret = pf_obj_listing_add(&l, name, is_dir, size, -1);

	d->ents = l.ents;
	d->n = l.n;
	d->cap = l.cap;
	o->list_bytes += l.bytes;
	return ret;
}

/* Every directory of a manifest path exists, listed in its parent. */
static int manifest_dir(struct obj *o, const char *path, struct dir **out)
{
	struct dir *d = pf_obj_dir_find(o, path);
	char parent[PATH_MAX];
	const char *name;
	struct dir *pd;

	if (d) {
		*out = d;
		return 0;
	}
	d = pf_obj_dir_add(o, path);
	if (!d)
		return -ENOMEM;
	d->state = D_LOADED;
	*out = d;
	if (!*path)
		return 0;
	name = pf_obj_split_path(path, parent, sizeof(parent));
	if (manifest_dir(o, parent, &pd) < 0)
		return -ENOMEM;
	return dir_append(o, pd, name, 1, 0);
}

struct mctx {
	struct obj *o;
	int err;
};

static int manifest_cb(void *arg, const struct pf_listent *e)
{
	struct mctx *m = arg;
	char parent[PATH_MAX];
	const char *name = pf_obj_split_path(e->name, parent, sizeof(parent));
	struct dir *pd;

	if (strlen(e->name) >= sizeof(parent))
		return 0;
	m->err = manifest_dir(m->o, parent, &pd);
	if (m->err < 0)
		return m->err;
	m->err = dir_append(m->o, pd, name, 0, e->size);
	if (m->err == 0 && m->o->list_bytes > m->o->list_max)
		m->err = -EFBIG;
	return m->err;
}

static int load_manifest(struct obj *o, const char *murl, char *err,
			 size_t errlen)
{
	struct pf_creq r = { .kind = PF_CREQ_DOC, .doc_max = DOC_MAX,
			     .url = murl };
	struct mctx m = { .o = o };
	struct dir *root;
	unsigned bad = 0;
	int ret;

	ret = pf_curl_run(o->curl, &r);
	if (ret < 0) {
		snprintf(err, errlen, "manifest '%s': %s (%s)", murl,
			 strerror(-ret), r.errmsg);
		free(r.buf);
		return ret;
	}
	o->manifest = true;
	if (manifest_dir(o, "", &root) < 0) {
		free(r.buf);
		return -ENOMEM;
	}
	ret = pf_list_parse_manifest(r.buf ? r.buf : "", r.buflen,
				     manifest_cb, &m, &bad);
	free(r.buf);
	if (ret == -EINVAL) {
		snprintf(err, errlen, "manifest '%s': line %u is not 'PATH "
			 "SIZE' with a relative path", murl, bad);
		return ret;
	}
	if (m.err == -EFBIG) {
		snprintf(err, errlen, "manifest '%s': its tree would take more "
			 "than %zu MiB (a quarter of max_memory)", murl,
			 o->list_max >> 20);
		return m.err;
	}
	if (ret < 0 || m.err < 0) {
		snprintf(err, errlen, "manifest '%s': %s", murl,
			 strerror(m.err < 0 ? -m.err : -ret));
		return ret < 0 ? ret : m.err;
	}
	/* sort every directory (and settle duplicate names) */
	for (size_t i = 0; i < o->nbuckets; i++)
		for (struct dir *d = o->dirs[i]; d; d = d->hnext) {
			struct listing l = { .ents = d->ents, .n = d->n,
					     .cap = d->cap };

			pf_obj_listing_finish(&l, d->path);
			d->n = l.n;
		}
	return 0;
}

/* What the constructors share: the limits of @cfg into @o and @cc. */
static void curl_cfg_of(const struct pf_obj_cfg *cfg, struct pf_curl_cfg *cc,
			struct obj *o)
{
	o->revalidate_s = cfg->revalidate_s;
	o->lazy_pins = !cfg->listings && !cfg->exact_versions;
	o->list_max = cfg->list_max ? cfg->list_max : LIST_MAX_DEFAULT;
	memset(cc, 0, sizeof(*cc));
	cc->max_conns = cfg->max_conns;
	cc->connect_timeout_ms = cfg->connect_timeout_ms;
	cc->timeout_s = cfg->timeout_s;
	cc->request_timeout_s = cfg->request_timeout_s;
	cc->retries = cfg->retries;
	cc->backoff_ms = cfg->backoff_ms;
	cc->cacert = cfg->cacert;
	cc->insecure = cfg->insecure;
}

int pf_http_backend_new(const char *source, const struct pf_obj_cfg *cfg,
			struct pf_backend **out, char *err, size_t errlen)
{
	struct pf_curl_cfg cc;
	struct obj *o;
	size_t n = strlen(source);
	int ret;

	if (n + 2 > URL_MAX) {
		snprintf(err, errlen, "source URL too long");
		return -ENAMETOOLONG;
	}
	if (strchr(source, '?') || strchr(source, '#')) {
		snprintf(err, errlen, "source '%s': a URL of a directory, "
			 "without '?' or '#'", source);
		return -EINVAL;
	}
	o = obj_alloc();
	if (!o) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o->be.ops = &http_ops;
	o->kind = KIND_HTTP;
	snprintf(o->root, sizeof(o->root), "%s%s", source,
		 source[n - 1] == '/' ? "" : "/");
	curl_cfg_of(cfg, &cc, o);
	ret = pf_curl_new(&cc, &o->curl);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start the HTTP client: %s",
			 strerror(-ret));
		goto out;
	}
	if (cfg->manifest) {
		char murl[URL_MAX];

		/* relative names are under the source */
		if (strstr(cfg->manifest, "://"))
			snprintf(murl, sizeof(murl), "%s", cfg->manifest);
		else
			snprintf(murl, sizeof(murl), "%s%s", o->root,
				 cfg->manifest);
		ret = load_manifest(o, murl, err, errlen);
	} else {
		ret = pf_obj_check_root(o, source, err, errlen);
	}
	if (ret < 0)
		goto out;
	if (!o->manifest) {
		pf_obj_listings_start(o, source, cfg->listings_dirfd,
				      cfg->listings);
		pf_obj_ahead_start(o, cfg->list_ahead);
	}
	snprintf(o->desc, sizeof(o->desc), "http:%s (%s)", o->root,
		 o->manifest ? "manifest" : "directory index");
	*out = &o->be;
	return 0;
out:
	obj_destroy(&o->be);
	return ret;
}

int pf_s3_backend_new(const char *source, const struct pf_obj_cfg *cfg,
		      struct pf_backend **out, char *err, size_t errlen)
{
	struct pf_curl_cfg cc;
	struct pf_creds_cfg cr = { 0 };
	char sig[128];
	struct obj *o = obj_alloc();
	int ret;

	if (!o) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o->be.ops = &s3_ops;
	o->kind = KIND_S3;
	ret = pf_s3_resolve(source, &cfg->s3, cfg->env, &o->s3, err, errlen);
	if (ret < 0)
		goto out;
	curl_cfg_of(cfg, &cc, o);
	cr.env = cfg->env;
	cr.profile = cfg->s3.profile;
	cr.region = o->s3.region;
	cr.cacert = cfg->cacert;
	cr.insecure = cfg->insecure;
	ret = pf_creds_new(&o->s3, &cr, &o->creds, err, errlen);
	/* the keys live in the provider only */
	explicit_bzero(o->s3.cred.access_key, sizeof(o->s3.cred.access_key));
	explicit_bzero(o->s3.cred.secret_key, sizeof(o->s3.cred.secret_key));
	explicit_bzero(o->s3.cred.session_token,
		       sizeof(o->s3.cred.session_token));
	if (ret < 0)
		goto out;
	if (o->s3.cred.chain)
		pf_creds_source(o->creds, o->s3.cred.source,
				sizeof(o->s3.cred.source));
	if (!o->s3.cred.anonymous) {
		pf_s3_sigv4_param(&o->s3, sig, sizeof(sig));
		cc.sigv4 = sig;
		cc.creds = o->creds;
	}
	ret = pf_curl_new(&cc, &o->curl);
	if (ret < 0) {
		snprintf(err, errlen, "cannot start the HTTP client: %s",
			 strerror(-ret));
		goto out;
	}
	ret = pf_obj_check_root(o, source, err, errlen);
	if (ret < 0)
		goto out;
	pf_obj_listings_start(o, source, cfg->listings_dirfd, cfg->listings);
	pf_obj_ahead_start(o, cfg->list_ahead);
	pf_s3_describe(&o->s3, o->desc, sizeof(o->desc));
	*out = &o->be;
	return 0;
out:
	obj_destroy(&o->be);
	return ret;
}

const char *pf_obj_backend_desc(const struct pf_backend *be)
{
	return ((const struct obj *)be)->desc;
}
