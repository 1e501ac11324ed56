/*
 * objstore_int.h - private to the object-storage backends (objstore*.c):
 * the backend instance (struct obj), its directory table and entries,
 * a listing being built, and what each objstore file lends the others.
 * Not part of the library's interface: callers use pf_objstore.h.
 *
 * DESIGN
 * See objstore.c.  o->lock guards the directory table, every entry,
 * list_bytes and the listings file's state (dirty, stop, nstored); no
 * request is made under it.  o->save_lock orders the writers of the
 * listings file.  The functions below say which lock they expect.
 */
#ifndef PF_OBJSTORE_INT_H
#define PF_OBJSTORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pf_backend.h"
#include "pf_curl.h"
#include "pf_creds.h"
#include "pf_s3conf.h"

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
	struct lpin *lazy;	/* the lazy pin its opens share, or NULL */
	bool head;		/* a read found it changed: the next open
				 * makes a HEAD, lazy or not */
};

/*
 * A lazy pin (see objstore.c): the version of a file opened from a listing
 * that gave its size but no version, learnt from the first ranged GET's
 * answer.  Shared by the entry and every open made from it, counted by
 * refs; cpin and recorded belong to the curl loop's thread once a GET
 * points to it.
 */
struct lpin {
	struct pf_cpin cpin;
	atomic_int refs;
	bool recorded;		/* its version was written into the entry */
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
	bool lazy_pins;		/* opens may pin lazily (no cache_dir) */
	size_t list_bytes;	/* memory of every listing kept */
	size_t list_max;	/* list_bytes at most */

	/* the listings file (NULL: none; its path, for messages); see DESIGN */
	char *listings;
	const char *listings_name;	/* its last component */
	int listings_dirfd;	/* its directory (-1: none) */
	char *source;		/* as given: the file names it */
	bool dirty;		/* a listing changed since the last save */
	bool stop;
	size_t nstored;		/* dirs with stored set */
	pthread_cond_t tick;	/* wakes the refresher to stop */
	pthread_t refresher;
	bool refresher_on;
	pthread_mutex_t save_lock;

	struct ahead *ahead;	/* the first directories listed at mount
				 * (objstore_ahead.c), or NULL */
};

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

/* Monotonic seconds, far from 0, so that a version learnt before the
 * boot (the listings file) still has a positive "seen". */
#define MONO_BASE ((int64_t)1 << 40)

/* ---- objstore_dir.c: the directory table and listing at the server ----- */

struct dir *pf_obj_dir_find(struct obj *o, const char *path);
struct dir *pf_obj_dir_add(struct obj *o, const char *path);
int64_t pf_obj_mono_s(void);
long pf_obj_etag_nsec(const char *etag);
void pf_obj_ents_free(struct ent *ents, size_t n);
void pf_obj_lpin_put(struct lpin *p);
int pf_obj_listing_add(struct listing *l, const char *name, int is_dir,
		int64_t size, int64_t mtime);
void pf_obj_listing_finish(struct listing *l, const char *dir);
int pf_obj_url_of(struct obj *o, const char *path, char *out, size_t len);
void pf_obj_log_fail(const char *what, const char *name,
	      const struct pf_creq *r, int err);
int pf_obj_list_dir(struct obj *o, const char *path, struct listing *l,
	     char *why, size_t whylen);
int pf_obj_dir_get(struct obj *o, const char *path, struct dir **out);
/*
 * The first listing, at mount: the source exists and answers, its root
 * is loaded.  A source naming a file (an object) rather than a directory
 * (a prefix) is said so in @err, with what to give instead (-ENOTDIR).
 */
int pf_obj_check_root(struct obj *o, const char *source, char *err,
		      size_t errlen);
struct ent *pf_obj_dir_lookup(struct dir *d, const char *name);
const char *pf_obj_split_path(const char *path, char *dirbuf, size_t len);
void pf_obj_fill_stat(struct stat *st, const struct ent *e, int64_t now);

/* ---- objstore_listings.c: the listings file and its refresher ---------- */

void pf_obj_listings_start(struct obj *o, const char *source, int dirfd,
			   const char *path);
void pf_obj_listings_stop(struct obj *o);

/* ---- objstore_ahead.c: the first directories listed at mount --------- */

/* Lists up to @max directories breadth first from the root (loaded: not
 * again), waiting a second at most; the rest go on in the background. */
void pf_obj_ahead_start(struct obj *o, unsigned max);
/* Before the curl loop is freed: stops and joins. */
void pf_obj_ahead_stop(struct obj *o);
unsigned pf_obj_ahead_listed(struct obj *o);

#endif
