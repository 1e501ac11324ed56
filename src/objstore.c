/*
 * objstore.c - the object-storage backends: a plain HTTP(S) server
 * (http(s)://host/prefix/, listed through its directory index or a
 * manifest) and S3 (s3://bucket/prefix, listed with ListObjectsV2), both
 * behind the backend ops table and both on one curl multi loop
 * (curl_loop.c).
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
 * Ownership: a struct pf_bfile belongs to the engine between open() and
 * close(); a bio's request (struct oio) is freed by its completion.
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

#define URL_MAX 4096
#define LISTINGS_SAVE_S 5	/* the listings file at most this often */
#define LISTINGS_MAGIC "prefetchfs listings 1\n"
#define DOC_MAX (256u << 20)	/* largest listing page or manifest */
#define LIST_PAGES_MAX 10000	/* S3 pages of one directory (10 M keys) */
#define TOKEN_MAX 4096		/* S3 continuation token */
#define LIST_MAX_DEFAULT (256u << 20)	/* pf_obj_cfg.list_max 0 */

enum { KIND_HTTP, KIND_S3 };
enum { D_NEW, D_LOADING, D_LOADED };

/*
 * A name of a directory listing, and what is known of its version.  A
 * listing that gives a version (S3: ETag and size; nginx's JSON index:
 * size and an exact mtime) or a HEAD made for it sets "seen", the
 * monotonic second it was learnt: within -o revalidate of it an open pins
 * that version without a request.  An open that makes a HEAD writes what
 * it pinned here, so getattr (stat, the kernel's i_size) agrees with the
 * version read.
 */
struct ent {
	char *name;
	char *etag;		/* NULL: unknown */
	int is_dir;
	int64_t size;		/* -1: not known yet (HEAD on getattr) */
	int64_t mtime;		/* -1: unknown */
	int64_t seen;		/* monotonic s the version was learnt, or
				 * -1: size and mtime are not a version
				 * (an HTML index: minutes, rounded sizes) */
	long nsec;		/* st_mtim.tv_nsec: a hash of the ETag */
};

struct dir {
	struct dir *hnext;
	char *path;
	struct ent *ents;	/* sorted by name once loaded */
	size_t n;
	size_t cap;
	int state;
	int64_t learned;	/* monotonic s it was listed */
	int64_t retry;		/* stored: a refresh failed, not before */
	bool stored;		/* from the listings file, not listed since */
};

struct obj {
	struct pf_backend be;
	int kind;
	struct pf_curl *curl;
	struct pf_creds *creds;	/* S3: outlives curl */
	char root[URL_MAX];	/* HTTP: ends in '/' */
	struct pf_s3_conf s3;
	bool manifest;
	char desc[URL_MAX + 64];

	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a listing finished */
	struct dir **dirs;
	size_t nbuckets;	/* power of two */
	size_t ndirs;
	int64_t mount_time;	/* stands in for unknown times */
	unsigned revalidate_s;	/* see struct ent */
	size_t list_bytes;	/* memory of every listing kept */
	size_t list_max;	/* list_bytes at most */

	/* the listings file (NULL: none); see DESIGN */
	char *listings;
	char *source;		/* as given: the file names it */
	bool dirty;		/* a listing changed since the last save */
	bool stop;
	size_t nstored;		/* dirs with stored set */
	pthread_cond_t tick;	/* wakes the refresher to stop */
	pthread_t refresher;
	bool refresher_on;
	pthread_mutex_t save_lock;
};

struct pf_bfile {
	struct obj *o;
	char *path;
	char *url;
	char etag[128];
	int64_t size;
	int64_t mtime;		/* pinned Last-Modified when no etag */
};

/* One bio's request. */
struct oio {
	struct pf_creq r;
	struct pf_bio *bio;
	struct pf_bfile *f;
};

static size_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return (size_t)(h ^ (h >> 29));
}

/* ---- the directory table (under o->lock) --------------------------------- */

static struct dir *dir_find(struct obj *o, const char *path)
{
	struct dir *d = o->dirs[hash_str(path) & (o->nbuckets - 1)];

	while (d && strcmp(d->path, path) != 0)
		d = d->hnext;
	return d;
}

static int dir_grow(struct obj *o)
{
	size_t nb = o->nbuckets * 2;
	struct dir **t = calloc(nb, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < o->nbuckets; i++) {
		struct dir *d = o->dirs[i];

		while (d) {
			struct dir *n = d->hnext;
			size_t h = hash_str(d->path) & (nb - 1);

			d->hnext = t[h];
			t[h] = d;
			d = n;
		}
	}
	free(o->dirs);
	o->dirs = t;
	o->nbuckets = nb;
	return 0;
}

static struct dir *dir_add(struct obj *o, const char *path)
{
	struct dir *d;
	size_t h;

	if (o->ndirs >= o->nbuckets && dir_grow(o) < 0)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	h = hash_str(path) & (o->nbuckets - 1);
	d->hnext = o->dirs[h];
	o->dirs[h] = d;
	o->ndirs++;
	return d;
}

/* Monotonic seconds, far from 0, so that a version learnt before the
 * boot (the listings file) still has a positive "seen". */
#define MONO_BASE ((int64_t)1 << 40)
static int64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec + MONO_BASE;
}

/* The version as the engine sees it: a new ETag is a new mtime, also
 * within the same second. */
static long etag_nsec(const char *etag)
{
	return etag && etag[0] ? (long)(hash_str(etag) % 1000000000u) : 0;
}

static void ents_free(struct ent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ents[i].name);
		free(ents[i].etag);
	}
	free(ents);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
		      ((const struct ent *)b)->name);
}

/*
 * A listing being built, outside the lock.  bytes counts its memory
 * (entries, names, ETags); more than max is -ENOMEM: the listings of a
 * mount share o->list_max.
 */
struct listing {
	struct ent *ents;
	size_t n;
	size_t cap;
	int err;
	size_t bytes;
	size_t max;		/* 0: no limit */
	size_t limit;		/* o->list_max, for the messages */
	int64_t seen;		/* what entries with a version get */
	bool mtime_exact;	/* the index gives mtimes to the second */
};

static int listing_add(struct listing *l, const char *name, int is_dir,
		       int64_t size, int64_t mtime)
{
	size_t more = sizeof(struct ent) + strlen(name) + 1;

	if (l->max && l->bytes + more > l->max)
		return -ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct ent *n = realloc(l->ents, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->ents = n;
		l->cap = cap;
	}
	l->ents[l->n].name = strdup(name);
	if (!l->ents[l->n].name)
		return -ENOMEM;
	l->ents[l->n].etag = NULL;
	l->ents[l->n].is_dir = is_dir;
	l->ents[l->n].size = is_dir ? 0 : size;
	l->ents[l->n].mtime = mtime;
	l->ents[l->n].seen = -1;
	l->ents[l->n].nsec = 0;
	l->n++;
	l->bytes += more;
	return 0;
}

static int listing_cb(void *arg, const struct pf_listent *e)
{
	struct listing *l = arg;
	struct ent *n;

	l->err = listing_add(l, e->name, e->is_dir, e->size, e->mtime);
	if (l->err || e->is_dir || e->size < 0)
		return l->err;
	n = &l->ents[l->n - 1];
	if (e->etag && e->etag[0] && strlen(e->etag) < 128) {
		if (l->max && l->bytes + strlen(e->etag) + 1 > l->max) {
			l->err = -ENOMEM;
			return l->err;
		}
		n->etag = strdup(e->etag);
		if (!n->etag) {
			l->err = -ENOMEM;
			return l->err;
		}
		n->nsec = etag_nsec(n->etag);
		l->bytes += strlen(e->etag) + 1;
		n->seen = l->seen;
	} else if (l->mtime_exact && e->mtime > 0) {
		n->seen = l->seen;
	}
	return 0;
}

/* Sort, and keep one entry per name (a directory over a file of the same
 * name: S3 allows key "a" beside keys "a/..."). */
static void listing_finish(struct listing *l, const char *dir)
{
	size_t o = 0;

	if (!l->n)
		return;		/* ents may be NULL: no qsort of nothing */
	qsort(l->ents, l->n, sizeof(*l->ents), ent_cmp);
	for (size_t i = 0; i < l->n; i++) {
		if (o && strcmp(l->ents[o - 1].name, l->ents[i].name) == 0) {
			pf_warn("'%s%s%s' is both a file and a directory: "
				"showing the directory", dir, *dir ? "/" : "",
				l->ents[i].name);
			if (l->ents[i].is_dir) {
				free(l->ents[o - 1].name);
				free(l->ents[o - 1].etag);
				l->ents[o - 1] = l->ents[i];
			} else {
				free(l->ents[i].name);
				free(l->ents[i].etag);
			}
			continue;
		}
		l->ents[o++] = l->ents[i];
	}
	l->n = o;
}

/* ---- listing a directory at the server ----------------------------------- */

static int url_of(struct obj *o, const char *path, char *out, size_t len)
{
	char enc[URL_MAX];
	int ret;

	if (o->kind == KIND_S3)
		return pf_s3_object_url(&o->s3, path, out, len);
	ret = pf_s3_uri_encode(path, 1, enc, sizeof(enc));
	if (ret < 0)
		return ret;
	if ((size_t)snprintf(out, len, "%s%s", o->root, enc) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void log_fail(const char *what, const char *name,
		     const struct pf_creq *r, int err)
{
	pf_warn("%s '%s': %s (%s)", what, name, strerror(-err),
		r->errmsg[0] ? r->errmsg : "no detail");
}

static int list_http(struct obj *o, const char *dir, struct listing *l,
		     char *why, size_t whylen)
{
	struct pf_creq r = { .kind = PF_CREQ_DOC, .doc_max = DOC_MAX };
	char url[URL_MAX];
	const char *p;
	int ret;

	ret = url_of(o, dir, url, sizeof(url) - 1);
	if (ret < 0)
		return ret;
	if (*dir)
		strcat(url, "/");
	r.url = url;
	ret = pf_curl_run(o->curl, &r);
	if (ret < 0) {
		snprintf(why, whylen, "%s", r.errmsg);
		free(r.buf);
		return ret;
	}
	p = r.buf;
	while (p && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	l->mtime_exact = p && *p == '[';
	if (p && *p == '[')
		ret = pf_list_parse_json(r.buf, r.buflen, listing_cb, l);
	else
		ret = pf_list_parse_html(r.buf ? r.buf : "", r.buflen,
					 listing_cb, l);
	free(r.buf);
	if (l->err) {
		if (l->err == -ENOMEM)
			snprintf(why, whylen, "the listings would take more "
				 "than %zu MiB", l->limit >> 20);
		return l->err;
	}
	if (ret < 0) {
		snprintf(why, whylen, "the server's page for '%s/' is not a "
			 "directory index", dir);
		return -EPROTO;
	}
	return 0;
}

/*
 * The continuation token of page @page (0-based) must be new: a server
 * that hands one out again would have us list for ever.  Also caps the
 * pages of one directory.  @seen grows by one hash per page.
 */
static int token_check(uint64_t **seen, unsigned page, const char *tok,
		       char *why, size_t whylen)
{
	uint64_t h = 1469598103934665603ull;
	uint64_t *n;

	if (page + 1 >= LIST_PAGES_MAX) {
		snprintf(why, whylen, "more than %u pages", LIST_PAGES_MAX);
		return -EIO;
	}
	for (const char *p = tok; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ull;
	}
	for (unsigned i = 0; i < page; i++)
		if ((*seen)[i] == h) {
			snprintf(why, whylen, "the server repeats a "
				 "continuation token (page %u gave the token "
				 "of page %u)", page + 1, i + 1);
			return -EIO;
		}
	/* grown in steps of 64 pages */
	if (page % 64 == 0) {
		n = realloc(*seen, (page + 64) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		*seen = n;
	}
	(*seen)[page] = h;
	return 0;
}

static int list_s3(struct obj *o, const char *dir, struct listing *l,
		   char *why, size_t whylen)
{
	char url[URL_MAX];
	char lp[1536];
	char *tok = malloc(TOKEN_MAX);
	uint64_t *seen = NULL;	/* hashes of the tokens had */
	int truncated = 1;
	int ret = 0;

	if (!tok)
		return -ENOMEM;
	tok[0] = '\0';
	for (unsigned page = 0; truncated; page++) {
		struct pf_creq r = { .kind = PF_CREQ_DOC,
				     .doc_max = DOC_MAX };

		ret = pf_s3_list_url(&o->s3, dir, tok, 1000, url, sizeof(url),
				     lp, sizeof(lp));
		if (ret < 0)
			break;
		r.url = url;
		ret = pf_curl_run(o->curl, &r);
		if (ret < 0) {
			snprintf(why, whylen, "%s", r.errmsg);
			free(r.buf);
			break;
		}
		ret = pf_list_parse_s3(r.buf ? r.buf : "", r.buflen, lp,
				       listing_cb, l, &truncated, tok,
				       TOKEN_MAX);
		free(r.buf);
		if (l->err) {
			ret = l->err;
			if (ret == -ENOMEM)
				snprintf(why, whylen, "the listings would "
					 "take more than %zu MiB (page %u)",
					 l->limit >> 20, page + 1);
			break;
		}
		if (ret < 0) {
			snprintf(why, whylen, "bad ListObjectsV2 answer "
				 "(page %u)", page + 1);
			break;
		}
		ret = 0;
		if (!truncated)
			break;
		ret = token_check(&seen, page, tok, why, whylen);
		if (ret < 0)
			break;
	}
	free(seen);
	free(tok);
	return ret;
}

/* Lists @path at the server into @l, within what is left of the mount's
 * listing memory. */
static int list_dir(struct obj *o, const char *path, struct listing *l,
		    char *why, size_t whylen)
{
	pthread_mutex_lock(&o->lock);
	l->max = o->list_max > o->list_bytes ? o->list_max - o->list_bytes :
					       1;
	pthread_mutex_unlock(&o->lock);
	l->limit = o->list_max;
	l->seen = mono_s();
	if (o->kind == KIND_S3)
		return list_s3(o, path, l, why, whylen);
	return list_http(o, path, l, why, whylen);
}

/*
 * The listing of @path, loaded if needed.  Returns it with o->lock held
 * (the caller unlocks), or -errno without the lock.
 */
static int dir_get(struct obj *o, const char *path, struct dir **out)
{
	struct listing l = { 0 };
	char why[300] = "";
	struct dir *d;
	int ret;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		d = dir_find(o, path);
		if (!d) {
			if (o->manifest) {
				pthread_mutex_unlock(&o->lock);
				return -ENOENT;
			}
			d = dir_add(o, path);
			if (!d) {
				pthread_mutex_unlock(&o->lock);
				return -ENOMEM;
			}
		}
		if (d->state == D_LOADED) {
			*out = d;
			return 0;
		}
		if (d->state == D_NEW)
			break;
		pthread_cond_wait(&o->cond, &o->lock);
	}
	d->state = D_LOADING;
	pthread_mutex_unlock(&o->lock);

	ret = list_dir(o, path, &l, why, sizeof(why));
	if (ret == 0)
		listing_finish(&l, path);

	pthread_mutex_lock(&o->lock);
	if (ret == 0 && o->list_bytes + l.bytes > o->list_max) {
		/* listed at the same time as another directory */
		snprintf(why, sizeof(why), "the listings would take more "
			 "than %zu MiB", o->list_max >> 20);
		ret = -ENOMEM;
	}
	if (ret < 0) {
		pf_warn("cannot list '%s/': %s%s%s", path, strerror(-ret),
			why[0] ? ": " : "", why);
		d->state = D_NEW;	/* the next caller tries again */
		ents_free(l.ents, l.n);
		pthread_cond_broadcast(&o->cond);
		pthread_mutex_unlock(&o->lock);
		return ret;
	}
	d->ents = l.ents;
	d->n = l.n;
	d->cap = l.cap;
	d->state = D_LOADED;
	d->learned = l.seen;
	o->dirty = true;
	o->list_bytes += l.bytes;
	pthread_cond_broadcast(&o->cond);
	*out = d;
	return 0;
}

static struct ent *dir_lookup(struct dir *d, const char *name)
{
	struct ent key = { .name = (char *)name };

	if (!d->n)
		return NULL;
	return bsearch(&key, d->ents, d->n, sizeof(key), ent_cmp);
}

/* Splits @path into its directory (copied to dirbuf) and last name. */
static const char *split(const char *path, char *dirbuf, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t dl;

	if (!slash) {
		dirbuf[0] = '\0';
		return path;
	}
	dl = (size_t)(slash - path);
	if (dl >= len)
		dl = len - 1;
	memcpy(dirbuf, path, dl);
	dirbuf[dl] = '\0';
	return slash + 1;
}

/* @now stands in for an unknown time (directories, most indexes). */
static void fill_stat(struct stat *st, const struct ent *e, int64_t now)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = e->is_dir ? (S_IFDIR | 0555) : (S_IFREG | 0444);
	st->st_nlink = e->is_dir ? 2 : 1;
	st->st_size = e->size > 0 ? (off_t)e->size : 0;
	st->st_blksize = 1 << 20;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_mtim.tv_sec = (time_t)(e->mtime > 0 ? e->mtime : now);
	st->st_mtim.tv_nsec = e->nsec;
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
}

/* ---- ops ---------------------------------------------------------------- */

static int head(struct obj *o, const char *path, struct pf_creq *r,
		char *url, size_t urllen)
{
	int ret = url_of(o, path, url, urllen);

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

	if (e->etag)
		o->list_bytes -= strlen(e->etag) + 1;
	free(e->etag);
	e->etag = etag;
	if (etag)
		o->list_bytes += strlen(etag) + 1;
	e->nsec = etag_nsec(etag);
	e->size = r->size;
	if (r->mtime > 0)
		e->mtime = r->mtime;
	e->seen = mono_s();
	o->dirty = true;	/* the listings file keeps it too */
}

/*
 * The entry of @path, copied into *copy (its etag, if any, into etag[128]),
 * listing its directory if needed.  -ENOENT if there is none.
 */
static int ent_get(struct obj *o, const char *path, struct ent *copy,
		   char *etag)
{
	char dirbuf[PATH_MAX];
	const char *name = split(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;
	int ret;

	ret = dir_get(o, dirbuf, &d);
	if (ret < 0)
		return ret;
	e = dir_lookup(d, name);
	if (!e) {
		pthread_mutex_unlock(&o->lock);
		return -ENOENT;
	}
	*copy = *e;
	copy->name = NULL;
	copy->etag = NULL;
	etag[0] = '\0';
	if (e->etag) {
		snprintf(etag, 128, "%s", e->etag);
		copy->etag = etag;
	}
	pthread_mutex_unlock(&o->lock);
	return 0;
}

/* HEAD @path, and record what it found in its entry. */
static int head_pin(struct obj *o, const char *path, struct pf_creq *r,
		    char *url, size_t urllen)
{
	char dirbuf[PATH_MAX];
	const char *name = split(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;
	int ret;

	ret = head(o, path, r, url, urllen);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&o->lock);
	d = dir_find(o, dirbuf);
	e = d && d->state == D_LOADED ? dir_lookup(d, name) : NULL;
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

		fill_stat(st, &root, o->mount_time);
		return 0;
	}
	ret = ent_get(o, path, &copy, etag);
	if (ret < 0)
		return ret;
	if (!copy.is_dir && copy.size < 0) {
		/* the index gave no exact size (Apache): ask the object */
		struct pf_creq r;
		char url[URL_MAX];

		ret = head_pin(o, path, &r, url, sizeof(url));
		if (ret < 0) {
			log_fail("cannot get the size of", path, &r, ret);
			return ret;
		}
		copy.size = r.size;
		if (r.mtime > 0)
			copy.mtime = r.mtime;
		copy.nsec = etag_nsec(r.etag);
	}
	fill_stat(st, &copy, o->mount_time);
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
	ret = dir_get(o, path, &d);
	if (ret < 0)
		return ret;
	/* copy, so that fn runs without the lock */
	for (size_t i = 0; i < d->n && ret == 0; i++) {
		ret = listing_add(&l, d->ents[i].name, d->ents[i].is_dir,
				  d->ents[i].size, d->ents[i].mtime);
		if (ret == 0)
			l.ents[l.n - 1].nsec = d->ents[i].nsec;
	}
	pthread_mutex_unlock(&o->lock);
	for (size_t i = 0; i < l.n && ret == 0; i++) {
		struct stat st;

		fill_stat(&st, &l.ents[i], o->mount_time);
		if (fn(arg, l.ents[i].name, &st))
			break;
	}
	ents_free(l.ents, l.n);
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
 * and it is younger than -o revalidate (no request), else with a HEAD.
 */
static int obj_open(struct pf_backend *be, const char *path,
		    struct pf_bfile **out, struct stat *st)
{
	struct obj *o = (struct obj *)be;
	struct pf_bfile *f;
	struct pf_creq r;
	char url[URL_MAX];
	struct ent e;
	char etag[128];
	int ret;

	if (!*path)
		return -EISDIR;
	ret = ent_get(o, path, &e, etag);
	if (ret < 0)
		return ret;
	if (e.is_dir)
		return -EISDIR;
	if (e.seen >= 0 && e.size >= 0 && o->revalidate_s &&
	    mono_s() - e.seen < (int64_t)o->revalidate_s) {
		ret = url_of(o, path, url, sizeof(url));
		if (ret < 0)
			return ret;
	} else {
		ret = head_pin(o, path, &r, url, sizeof(url));
		if (ret < 0) {
			log_fail("cannot open", path, &r, ret);
			return ret;
		}
		snprintf(etag, sizeof(etag), "%s", r.etag);
		e.size = r.size;
		/* no Last-Modified: nothing to pin by but the size */
		e.mtime = r.mtime > 0 ? r.mtime : -1;
		e.nsec = etag_nsec(etag);
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = o;
	f->path = strdup(path);
	f->url = strdup(url);
	if (!f->path || !f->url) {
		free(f->path);
		free(f->url);
		free(f);
		return -ENOMEM;
	}
	snprintf(f->etag, sizeof(f->etag), "%s", etag);
	f->size = e.size;
	f->mtime = e.mtime;
	fill_stat(st, &e, o->mount_time);
	*out = f;
	return 0;
}

static void obj_close(struct pf_backend *be, struct pf_bfile *f)
{
	(void)be;
	free(f->path);
	free(f->url);
	free(f);
}

/* A read found @path changed: its next open asks the server again,
 * however young its entry. */
static void ent_stale(struct obj *o, const char *path)
{
	char dirbuf[PATH_MAX];
	const char *name = split(path, dirbuf, sizeof(dirbuf));
	struct dir *d;
	struct ent *e;

	pthread_mutex_lock(&o->lock);
	d = dir_find(o, dirbuf);
	e = d && d->state == D_LOADED ? dir_lookup(d, name) : NULL;
	if (e)
		e->seen = -1;
	pthread_mutex_unlock(&o->lock);
}

static void oio_done(struct pf_creq *r, int err)
{
	struct oio *io = (struct oio *)r;
	struct pf_bio *bio = io->bio;
	int64_t res = err < 0 ? err : (int64_t)r->len;

	if (err < 0 && err != -ECANCELED)
		pf_warn("read of '%s' bytes %" PRIu64 "-%" PRIu64 " failed: "
			"%s (%s)", io->f->path, r->off, r->off + r->len - 1,
			strerror(-err), r->errmsg[0] ? r->errmsg : "no detail");
	if (r->changed)
		ent_stale(io->f->o, io->f->path);
	free(r->buf);
	free(io);
	bio->done(bio, res);
}

static int obj_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct obj *o = (struct obj *)be;
	struct pf_bfile *f = bio->file;
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
	io->r.done = oio_done;
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

static void listings_stop(struct obj *o);

static void obj_destroy(struct pf_backend *be)
{
	struct obj *o = (struct obj *)be;

	listings_stop(o);
	pf_curl_free(o->curl);
	pf_creds_free(o->creds);
	for (size_t i = 0; i < o->nbuckets; i++) {
		struct dir *d = o->dirs[i];

		while (d) {
			struct dir *n = d->hnext;

			ents_free(d->ents, d->n);
			free(d->path);
			free(d);
			d = n;
		}
	}
	free(o->dirs);
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
		 ", \"whole_bodies\": %" PRIu64 ", \"active\": %u}",
		 t.requests, t.retries, t.errors, t.resumed, t.full_bodies,
		 t.active);
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
	int ret = listing_add(&l, name, is_dir, size, -1);

	d->ents = l.ents;
	d->n = l.n;
	d->cap = l.cap;
	o->list_bytes += l.bytes;
	return ret;
}

/* Every directory of a manifest path exists, listed in its parent. */
static int manifest_dir(struct obj *o, const char *path, struct dir **out)
{
	struct dir *d = dir_find(o, path);
	char parent[PATH_MAX];
	const char *name;
	struct dir *pd;

	if (d) {
		*out = d;
		return 0;
	}
	d = dir_add(o, path);
	if (!d)
		return -ENOMEM;
	d->state = D_LOADED;
	*out = d;
	if (!*path)
		return 0;
	name = split(path, parent, sizeof(parent));
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
	const char *name = split(e->name, parent, sizeof(parent));
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

			listing_finish(&l, d->path);
			d->n = l.n;
		}
	return 0;
}

/* The first listing at mount: the source exists and answers. */
static int check_root(struct obj *o, const char *source, char *err,
		      size_t errlen)
{
	struct listing l = { 0 };
	char why[300] = "";
	int ret;

	ret = list_dir(o, "", &l, why, sizeof(why));
	if (ret < 0) {
		const char *hint = "";

		if (ret == -EACCES && o->kind == KIND_S3)
			hint = o->s3.cred.anonymous ?
				       " (anonymous: give credentials, or "
				       "check the bucket policy)" :
				       " (check the credentials and region)";
		else if (strstr(why, "certificate"))
			hint = ": give the server's CA with -o cacert=FILE, or "
			       "-o insecure not to verify it";
		/* a network error says more than "Input/output error" */
		snprintf(err, errlen, "cannot list '%s': %s%s%s%s", source,
			 ret == -EIO && why[0] ? "" : strerror(-ret),
			 why[0] && ret != -EIO ? ": " : "", why, hint);
		ents_free(l.ents, l.n);
		return ret;
	}
	listing_finish(&l, "");
	if (!l.n)
		pf_warn("'%s' is empty (no objects or directories under it): "
			"check the source", source);
	pthread_mutex_lock(&o->lock);
	{
		struct dir *d = dir_add(o, "");

		if (!d) {
			pthread_mutex_unlock(&o->lock);
			ents_free(l.ents, l.n);
			return -ENOMEM;
		}
		d->ents = l.ents;
		d->n = l.n;
		d->cap = l.cap;
		d->state = D_LOADED;
		/* not dirty: every mount lists the root again, so a daemon
		 * that stops before it lists more (a second one on the
		 * cache dir, refused) leaves the file alone */
		d->learned = l.seen;
		o->list_bytes += l.bytes;
	}
	pthread_mutex_unlock(&o->lock);
	return 0;
}

/* ---- the listings file --------------------------------------------------- */

static uint64_t fnv64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* A monotonic second as wall-clock, and back; -1 stays -1. */
static int64_t to_wall(int64_t mono, int64_t mnow, int64_t wnow)
{
	return mono < 0 ? -1 : wnow - (mnow - mono);
}

static size_t ents_bytes(const struct ent *e, size_t n)
{
	size_t b = 0;

	for (size_t i = 0; i < n; i++)
		b += sizeof(*e) + strlen(e[i].name) + 1 +
		     (e[i].etag ? strlen(e[i].etag) + 1 : 0);
	return b;
}

/*
 * The file: LISTINGS_MAGIC, "source LEN\n" and the source, then per
 * directory "D WALL PATHLEN NENTS\n" and the path, per entry "E ISDIR SIZE
 * MTIME SEEN ETAGLEN NAMELEN\n", the ETag (ETAGLEN -1: none) and the name;
 * last "end HEX\n", HEX the FNV-1a of every byte before it.  WALL and SEEN
 * are wall-clock seconds (-1: no version).  Lengths, not separators:
 * names may hold any byte but NUL and '/'.
 */
static int listings_save(struct obj *o)
{
	struct pf_strbuf sb;
	char tmp[PATH_MAX];
	char *dir;
	int64_t mnow = mono_s();
	int64_t wnow = (int64_t)time(NULL);
	size_t len;
	char *buf;
	int fd;
	int ret = 0;

	pthread_mutex_lock(&o->save_lock);
	pf_strbuf_init(&sb, 1 << 16);
	pf_strbuf_addstr(&sb, LISTINGS_MAGIC);
	pf_strbuf_addf(&sb, "source %zu\n", strlen(o->source));
	pf_strbuf_addstr(&sb, o->source);
	pthread_mutex_lock(&o->lock);
	o->dirty = false;
	for (size_t i = 0; i < o->nbuckets; i++) {
		for (struct dir *d = o->dirs[i]; d; d = d->hnext) {
			if (d->state != D_LOADED)
				continue;
			pf_strbuf_addf(&sb, "D %" PRId64 " %zu %zu\n",
				       to_wall(d->learned, mnow, wnow),
				       strlen(d->path), d->n);
			pf_strbuf_addstr(&sb, d->path);
			for (size_t j = 0; j < d->n; j++) {
				const struct ent *e = &d->ents[j];

				ssize_t el = e->etag ?
					(ssize_t)strlen(e->etag) : -1;

				pf_strbuf_addf(&sb, "E %d %" PRId64 " %" PRId64
					       " %" PRId64 " %zd %zu\n",
					       e->is_dir, e->size, e->mtime,
					       to_wall(e->seen, mnow, wnow), el,
					       strlen(e->name));
				if (e->etag)
					pf_strbuf_addstr(&sb, e->etag);
				pf_strbuf_addstr(&sb, e->name);
			}
		}
	}
	pthread_mutex_unlock(&o->lock);
	buf = pf_strbuf_detach(&sb, &len);
	if (!buf) {
		pthread_mutex_unlock(&o->save_lock);
		return -ENOMEM;
	}
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", o->listings,
		 (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
	} else {
		char end[32];
		int n = snprintf(end, sizeof(end), "end %016" PRIx64 "\n",
				 fnv64(buf, len));
		size_t off = 0;

		while (off < len && ret == 0) {
			ssize_t w = write(fd, buf + off, len - off);

			if (w < 0)
				ret = -errno;
			else
				off += (size_t)w;
		}
		if (ret == 0 && write(fd, end, (size_t)n) != n)
			ret = errno ? -errno : -EIO;
		if (ret == 0 && fsync(fd) < 0)
			ret = -errno;
		close(fd);
		if (ret == 0 && rename(tmp, o->listings) < 0)
			ret = -errno;
		if (ret < 0)
			unlink(tmp);
	}
	free(buf);
	/* the rename itself is durable once the directory is synced */
	dir = strdup(o->listings);
	if (ret == 0 && dir && strrchr(dir, '/')) {
		*strrchr(dir, '/') = '\0';
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(dir);
	if (ret < 0) {
		pthread_mutex_lock(&o->lock);
		o->dirty = true;
		pthread_mutex_unlock(&o->lock);
		pf_warn("cannot write the listings to '%s': %s", o->listings,
			strerror(-ret));
	}
	pthread_mutex_unlock(&o->save_lock);
	return ret;
}

/* The next "WORD ...\n" header of the file at *p into line; NULL at
 * the end of buf or if it is too long. */
static const char *next_line(const char **p, const char *end, char *line,
			     size_t size)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n;

	if (!nl || (size_t)(nl - *p) >= size)
		return NULL;
	n = (size_t)(nl - *p);
	memcpy(line, *p, n);
	line[n] = '\0';
	*p = nl + 1;
	return line;
}

/* @n bytes at *p as a new string; NULL if past end or out of memory. */
static char *take(const char **p, const char *end, long long n)
{
	char *s;

	if (n < 0 || n > end - *p || memchr(*p, '\0', (size_t)n))
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, *p, (size_t)n);
	s[n] = '\0';
	*p += n;
	return s;
}

struct sdir {
	char *path;
	int64_t learned;
	struct listing l;
};

/* Parses the whole file; 0 and the directories, or -EPROTO. */
static int listings_parse(struct obj *o, const char *buf, size_t len,
			  struct sdir **out, size_t *nout)
{
	const char *p = buf;
	const char *end;
	char line[160];
	char *src = NULL;
	struct sdir *sd = NULL;
	size_t nsd = 0;
	size_t bytes = 0;
	int64_t mnow = mono_s();
	int64_t wnow = (int64_t)time(NULL);
	unsigned long long sum;
	long long n;
	int ret = -EPROTO;

	/* the checksum line, then everything before it */
	if (len < 22 || buf[len - 1] != '\n' ||
	    sscanf(buf + len - 21, "end %16llx", &sum) != 1 ||
	    memcmp(buf + len - 21, "end ", 4) != 0 ||
	    fnv64(buf, len - 21) != (uint64_t)sum)
		return -EPROTO;
	end = buf + len - 21;
	if ((size_t)(end - p) < strlen(LISTINGS_MAGIC) ||
	    memcmp(p, LISTINGS_MAGIC, strlen(LISTINGS_MAGIC)) != 0)
		return -EPROTO;
	p += strlen(LISTINGS_MAGIC);
	if (!next_line(&p, end, line, sizeof(line)) ||
	    sscanf(line, "source %lld", &n) != 1)
		return -EPROTO;
	src = take(&p, end, n);
	if (!src || strcmp(src, o->source) != 0)
		goto out;	/* another source of the same hash */
	while (p < end) {
		long long wall, pl, ne;
		struct sdir *d;

		if (!next_line(&p, end, line, sizeof(line)) ||
		    sscanf(line, "D %lld %lld %lld", &wall, &pl, &ne) != 3 ||
		    ne < 0)
			goto out;
		d = realloc(sd, (nsd + 1) * sizeof(*sd));
		if (!d)
			goto out;
		sd = d;
		d = &sd[nsd++];
		memset(d, 0, sizeof(*d));
		d->path = take(&p, end, pl);
		if (!d->path)
			goto out;
		/* clock gone back, or unknown: due for a refresh at once */
		d->learned = wall >= 0 && wall <= wnow ?
				     mnow - (wnow - wall) :
				     mnow - (int64_t)o->revalidate_s - 1;
		d->l.max = o->list_max > bytes ? o->list_max - bytes : 1;
		for (long long i = 0; i < ne; i++) {
			long long isdir, size, mtime, seen, el, nl;
			char *etag = NULL;
			char *name;
			struct ent *e;

			if (!next_line(&p, end, line, sizeof(line)) ||
			    sscanf(line, "E %lld %lld %lld %lld %lld %lld",
				   &isdir, &size, &mtime, &seen, &el,
				   &nl) != 6)
				goto out;
			if (el >= 128 ||
			    (el >= 0 && !(etag = take(&p, end, el))))
				goto out;
			name = take(&p, end, nl);
			if (!name || !name[0] || strchr(name, '/')) {
				free(name);
				free(etag);
				goto out;
			}
			ret = listing_add(&d->l, name, isdir != 0, size, mtime);
			free(name);
			if (ret < 0) {
				free(etag);
				goto out;
			}
			ret = -EPROTO;
			e = &d->l.ents[d->l.n - 1];
			e->etag = etag;
			e->nsec = etag_nsec(etag);
			d->l.bytes += etag ? strlen(etag) + 1 : 0;
			e->seen = seen >= 0 && seen <= wnow ?
					  mnow - (wnow - seen) : -1;
		}
		bytes += d->l.bytes;
		/* the file was written sorted; a hand-made one need not be */
		listing_finish(&d->l, d->path);
	}
	ret = 0;
out:
	free(src);
	if (ret < 0) {
		for (size_t i = 0; i < nsd; i++) {
			free(sd[i].path);
			ents_free(sd[i].l.ents, sd[i].l.n);
		}
		free(sd);
		return ret;
	}
	*out = sd;
	*nout = nsd;
	return 0;
}

/* Reads the listings file once: every directory not listed yet. */
static void listings_load(struct obj *o)
{
	struct sdir *sd = NULL;
	size_t nsd = 0;
	struct stat st;
	char *buf;
	ssize_t got;
	size_t loaded = 0;
	int fd = open(o->listings, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return;		/* the first mount with this cache dir */
	if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    (uint64_t)st.st_size > 2 * (uint64_t)o->list_max + (1u << 20)) {
		close(fd);
		pf_warn("listings file '%s' is empty or too large: ignored, "
			"directories are listed again", o->listings);
		return;
	}
	buf = malloc((size_t)st.st_size);
	got = buf ? pread(fd, buf, (size_t)st.st_size, 0) : -1;
	close(fd);
	ret = got == st.st_size ? listings_parse(o, buf, (size_t)got, &sd, &nsd)
				: -EIO;
	free(buf);
	if (ret < 0) {
		pf_warn("listings file '%s' is damaged (%s): ignored, "
			"directories are listed again", o->listings,
			ret == -EPROTO ? "bad checksum or format" :
					 strerror(-ret));
		return;
	}
	pthread_mutex_lock(&o->lock);
	for (size_t i = 0; i < nsd; i++) {
		struct dir *d = dir_find(o, sd[i].path);

		if (d || o->list_bytes + sd[i].l.bytes > o->list_max ||
		    !(d = dir_add(o, sd[i].path))) {
			ents_free(sd[i].l.ents, sd[i].l.n);
		} else {
			d->ents = sd[i].l.ents;
			d->n = sd[i].l.n;
			d->cap = sd[i].l.cap;
			d->state = D_LOADED;
			d->learned = sd[i].learned;
			d->stored = true;
			o->nstored++;
			o->list_bytes += sd[i].l.bytes;
			loaded++;
		}
		free(sd[i].path);
	}
	pthread_mutex_unlock(&o->lock);
	free(sd);
	pf_info("listings of %zu directories read from '%s'", loaded,
		o->listings);
}

/* Lists the stored directory @path again and takes the new listing. */
static void refresh_dir(struct obj *o, const char *path)
{
	struct listing l = { 0 };
	char why[300] = "";
	struct dir *d;
	int ret = list_dir(o, path, &l, why, sizeof(why));

	if (ret == 0)
		listing_finish(&l, path);
	pthread_mutex_lock(&o->lock);
	d = dir_find(o, path);
	if (ret == 0 && d && d->state == D_LOADED) {
		size_t old = ents_bytes(d->ents, d->n);

		if (o->list_bytes - old + l.bytes > o->list_max) {
			ret = -ENOMEM;
		} else {
			struct ent *oe = d->ents;
			size_t on = d->n;

			d->ents = l.ents;
			d->n = l.n;
			d->cap = l.cap;
			l.ents = oe;
			l.n = on;
			o->list_bytes = o->list_bytes - old + l.bytes;
			d->learned = l.seen;
			d->stored = false;
			o->nstored--;
			o->dirty = true;
		}
	}
	if (ret < 0 && d)	/* again later; learned stays true */
		d->retry = mono_s() + (o->revalidate_s > 10 ?
					       (int64_t)o->revalidate_s : 10);
	pthread_mutex_unlock(&o->lock);
	ents_free(l.ents, l.n);
	if (ret < 0)
		pf_warn("cannot list '%s/' again: %s%s%s (its stored listing "
			"stays)", path, strerror(-ret), why[0] ? ": " : "",
			why);
}

static void *refresher(void *arg)
{
	struct obj *o = arg;
	int64_t saved = mono_s();
	int64_t due = o->revalidate_s ? (int64_t)o->revalidate_s : 1;

	pthread_mutex_lock(&o->lock);
	while (!o->stop) {
		int64_t now = mono_s();
		char *path = NULL;

		for (size_t i = 0; o->nstored && !path && i < o->nbuckets;
		     i++)
			for (struct dir *d = o->dirs[i]; d && !path;
			     d = d->hnext)
				if (d->stored && now - d->learned >= due &&
				    now >= d->retry)
					path = strdup(d->path);
		if (path) {
			pthread_mutex_unlock(&o->lock);
			refresh_dir(o, path);
			free(path);
			pthread_mutex_lock(&o->lock);
			continue;
		}
		if (o->dirty && now - saved >= LISTINGS_SAVE_S) {
			pthread_mutex_unlock(&o->lock);
			listings_save(o);
			saved = mono_s();
			pthread_mutex_lock(&o->lock);
			continue;
		}
		{
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&o->tick, &o->lock, &ts);
		}
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

/* After the root is listed: read the file, start the refresher.  Without
 * memory or a thread the mount goes on without the file. */
static void listings_start(struct obj *o, const char *source,
			   const char *path)
{
	if (!path)
		return;
	o->listings = strdup(path);
	o->source = strdup(source);
	if (!o->listings || !o->source)
		return;
	listings_load(o);
	if (pthread_create(&o->refresher, NULL, refresher, o) != 0) {
		pf_warn("cannot start the listings thread: listings are not "
			"kept in '%s'", path);
		return;
	}
	o->refresher_on = true;
}

static void listings_stop(struct obj *o)
{
	if (!o->refresher_on)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->tick);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->refresher, NULL);
	o->refresher_on = false;
	if (o->dirty)
		listings_save(o);
}

/* What the constructors share: the limits of @cfg into @o and @cc. */
static void curl_cfg_of(const struct pf_obj_cfg *cfg, struct pf_curl_cfg *cc,
			struct obj *o)
{
	o->revalidate_s = cfg->revalidate_s;
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
		ret = check_root(o, source, err, errlen);
	}
	if (ret < 0)
		goto out;
	if (!o->manifest)
		listings_start(o, source, cfg->listings);
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
	ret = check_root(o, source, err, errlen);
	if (ret < 0)
		goto out;
	listings_start(o, source, cfg->listings);
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
