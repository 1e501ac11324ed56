/*
 * objstore_dir.c - the object-storage backends' namespace: the table of
 * directory listings keyed by path, the listing of one directory at the
 * server (an HTTP index or JSON autoindex, or S3 ListObjectsV2 pages),
 * the entries' stat, and the first listing at mount
 * (pf_obj_check_root(): a source that names a file is said so).
 *
 * DESIGN
 * Entered by the FUSE worker threads through the ops (objstore.c:
 * lookup, getattr, readdir, open) and by the listings refresher thread
 * (objstore_listings.c: pf_obj_list_dir()).  o->lock guards the directory
 * table, every entry and o->list_bytes; pf_obj_dir_find(), pf_obj_dir_add() and
 * pf_obj_dir_lookup() are called with it held, pf_obj_list_dir() without it (it
 * makes requests, never under the lock).  pf_obj_dir_get() lists a directory
 * once, by one thread: others asking meanwhile wait on o->cond.  A struct
 * listing is built outside the lock by the thread that owns it.
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
#include "pf_hash.h"
#include "pf_strbuf.h"
#include "objstore_int.h"

/* ---- the directory table (under o->lock) --------------------------------- */

struct dir *pf_obj_dir_find(struct obj *o, const char *path)
{
	struct dir *d = o->dirs[pf_hash_str(path) & (o->nbuckets - 1)];

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
			size_t h = pf_hash_str(d->path) & (nb - 1);

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

struct dir *pf_obj_dir_add(struct obj *o, const char *path)
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
	h = pf_hash_str(path) & (o->nbuckets - 1);
	d->hnext = o->dirs[h];
	o->dirs[h] = d;
	o->ndirs++;
	return d;
}

/* Monotonic seconds, far from 0, so that a version learnt before the
 * boot (the listings file) still has a positive "seen" (MONO_BASE). */
int64_t pf_obj_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec + MONO_BASE;
}

/* The version as the engine sees it: a new ETag is a new mtime, also
 * within the same second. */
long pf_obj_etag_nsec(const char *etag)
{
	return etag && etag[0] ? (long)(pf_hash_str(etag) % 1000000000u) : 0;
}

/* Drops a reference to @p (any thread; NULL is none). */
void pf_obj_lpin_put(struct lpin *p)
{
	if (p && atomic_fetch_sub(&p->refs, 1) == 1)
		free(p);
}

void pf_obj_ents_free(struct ent *ents, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ents[i].name);
		free(ents[i].etag);
		pf_obj_lpin_put(ents[i].lazy);
	}
	free(ents);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
		      ((const struct ent *)b)->name);
}

int pf_obj_listing_add(struct listing *l, const char *name, int is_dir,
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
	l->ents[l->n].lazy = NULL;
	l->ents[l->n].head = false;
	l->n++;
	l->bytes += more;
	return 0;
}

static int listing_cb(void *arg, const struct pf_listent *e)
{
	struct listing *l = arg;
	struct ent *n;

	l->err = pf_obj_listing_add(l, e->name, e->is_dir, e->size, e->mtime);
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
		n->nsec = pf_obj_etag_nsec(n->etag);
		l->bytes += strlen(e->etag) + 1;
		n->seen = l->seen;
	} else if (l->mtime_exact && e->mtime > 0) {
		n->seen = l->seen;
	}
	return 0;
}

/* Sort, and keep one entry per name (a directory over a file of the same
 * name: S3 allows key "a" beside keys "a/..."). */
void pf_obj_listing_finish(struct listing *l, const char *dir)
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

int pf_obj_url_of(struct obj *o, const char *path, char *out, size_t len)
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

void pf_obj_log_fail(const char *what, const char *name,
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

	ret = pf_obj_url_of(o, dir, url, sizeof(url) - 1);
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
int pf_obj_list_dir(struct obj *o, const char *path, struct listing *l,
	     char *why, size_t whylen)
{
	pthread_mutex_lock(&o->lock);
	l->max = o->list_max > o->list_bytes ? o->list_max - o->list_bytes :
					       1;
	pthread_mutex_unlock(&o->lock);
	l->limit = o->list_max;
	l->seen = pf_obj_mono_s();
	if (o->kind == KIND_S3)
		return list_s3(o, path, l, why, whylen);
	return list_http(o, path, l, why, whylen);
}

/*
 * The listing of @path, loaded if needed.  Returns it with o->lock held
 * (the caller unlocks), or -errno without the lock.
 */
int pf_obj_dir_get(struct obj *o, const char *path, struct dir **out)
{
	struct listing l = { 0 };
	char why[300] = "";
	struct dir *d;
	int ret;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		d = pf_obj_dir_find(o, path);
		if (!d) {
			if (o->manifest) {
				pthread_mutex_unlock(&o->lock);
				return -ENOENT;
			}
			d = pf_obj_dir_add(o, path);
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

	ret = pf_obj_list_dir(o, path, &l, why, sizeof(why));
	if (ret == 0)
		pf_obj_listing_finish(&l, path);

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
		pf_obj_ents_free(l.ents, l.n);
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

struct ent *pf_obj_dir_lookup(struct dir *d, const char *name)
{
	struct ent key = { .name = (char *)name };

	if (!d->n)
		return NULL;
	return bsearch(&key, d->ents, d->n, sizeof(key), ent_cmp);
}

/* Splits @path into its directory (copied to dirbuf) and last name. */
const char *pf_obj_split_path(const char *path, char *dirbuf, size_t len)
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
void pf_obj_fill_stat(struct stat *st, const struct ent *e, int64_t now)
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

/* ---- the first listing, at mount ----------------------------------------- */

/*
 * After the first listing of @source failed with @ret or found nothing
 * (@ret 0): whether @source names a file (an object) rather than a
 * directory, and its size.  Over HTTP a file's URL with '/' appended is
 * not found (404), so only then is the URL as given asked for (HEAD); a
 * directory would have listed.  Over S3 "s3://b/key" lists the prefix
 * "key/", empty when key is an object: a HEAD of that key says.
 */
static bool names_a_file(struct obj *o, const char *source, int ret,
			 int64_t *size)
{
	struct pf_creq r = { .kind = PF_CREQ_HEAD };
	char url[URL_MAX];
	size_t n = strlen(source);

	if (o->kind == KIND_HTTP) {
		if (ret != -ENOENT || !n || source[n - 1] == '/')
			return false;
		snprintf(url, sizeof(url), "%s", source);
	} else {
		struct pf_s3_conf c = o->s3;
		char key[sizeof(c.prefix)];

		n = strlen(o->s3.prefix);
		if (ret != 0 || n < 2)
			return false;
		snprintf(key, sizeof(key), "%.*s", (int)(n - 1), o->s3.prefix);
		c.prefix[0] = '\0';
		if (pf_s3_object_url(&c, key, url, sizeof(url)) < 0)
			return false;
	}
	r.url = url;
	ret = pf_curl_run(o->curl, &r);
	free(r.buf);
	*size = r.size;
	return ret == 0 && r.status == 200 && r.size >= 0;
}

/* The message for a @source that names a file of @size bytes. */
static void file_source_err(const struct obj *o, const char *source,
			    int64_t size, char *err, size_t errlen)
{
	const char *slash = strrchr(source, '/');
	int dirlen = slash ? (int)(slash - source + 1) : 0;
	bool s3 = o->kind == KIND_S3;

	snprintf(err, errlen, "'%s' is %s (%" PRId64 " bytes), not a %s: "
		 "give the %s holding it (%.*s)", source,
		 s3 ? "an object" : "a file", size, s3 ? "prefix" : "directory",
		 s3 ? "prefix" : "URL of the directory", dirlen, source);
}

int pf_obj_check_root(struct obj *o, const char *source, char *err,
		      size_t errlen)
{
	struct listing l = { 0 };
	char why[300] = "";
	int64_t size;
	int ret;

	ret = pf_obj_list_dir(o, "", &l, why, sizeof(why));
	if ((ret < 0 || !l.n) && names_a_file(o, source, ret, &size)) {
		file_source_err(o, source, size, err, errlen);
		pf_obj_ents_free(l.ents, l.n);
		return -ENOTDIR;
	}
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
		pf_obj_ents_free(l.ents, l.n);
		return ret;
	}
	pf_obj_listing_finish(&l, "");
	if (!l.n)
		pf_warn("'%s' is empty (no objects or directories under it): "
			"check the source", source);
	pthread_mutex_lock(&o->lock);
	{
		struct dir *d = pf_obj_dir_add(o, "");

		if (!d) {
			pthread_mutex_unlock(&o->lock);
			pf_obj_ents_free(l.ents, l.n);
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
