/*
 * fuse_ll.c - libfuse3 low-level operations: a read-only mirror of the
 * backend's tree whose file reads go through the engine.
 *
 * DESIGN: metadata requests (lookup, getattr, readdir, readlink, statfs)
 * are answered on the FUSE worker thread that received them.  READs are
 * handed to the engine with the request as the reply cookie; the engine
 * answers them at once from memory or later from the backend's completion
 * thread (libfuse allows replying after the handler returned).  Errors
 * travel as -errno and become fuse_reply_err() only here.
 *
 * The virtual directory /.prefetchfs holds the stats file and the plan
 * file (declared read order, written by the mount's owner: see pf_hint.h
 * and pf_engine_hint_*); it is found by lookup but not listed by readdir.  A source entry of that name at the
 * root is neither found nor listed (see hide_meta_name()).  Statics are
 * lo_*, as in libfuse's passthrough_ll.c; pf_* names are public.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "pf_clock.h"
#include "pf_fuse.h"
#include "pf_log.h"
#include "pf_trace.h"

static struct pf_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/*
 * The first member of a directory's or the stats file's handle: on
 * fs->handles from its open until its release.  A handle the kernel never
 * releases (its holder still had it open when the daemon was told to
 * stop) is freed by pf_fuse_free_handles().
 */
struct pf_fh {
	struct list node;	/* on fs->handles (fs->handles_lock) */
	void (*free)(struct pf_fh *fh);
};

static void fh_track(struct pf_fs *fs, struct pf_fh *fh,
		     void (*free_fn)(struct pf_fh *))
{
	fh->free = free_fn;
	pthread_mutex_lock(&fs->handles_lock);
	list_add_tail(&fs->handles, &fh->node);
	pthread_mutex_unlock(&fs->handles_lock);
}

static void fh_release(struct pf_fs *fs, struct pf_fh *fh)
{
	pthread_mutex_lock(&fs->handles_lock);
	list_del(&fh->node);
	pthread_mutex_unlock(&fs->handles_lock);
	fh->free(fh);
}

void pf_fuse_free_handles(struct pf_fs *fs)
{
	while (!list_empty(&fs->handles))
		fh_release(fs, container_of(fs->handles.next, struct pf_fh,
					    node));
}

/* The pusher's thread: its opens and READs are its own read-ahead
 * (pf_fuse_push()); such an open's handle is SELF_FH. */
static _Atomic pid_t self_tid;
#define SELF_FH ((uint64_t)1)

static bool from_self(fuse_req_t req)
{
	pid_t t = self_tid;

	return t && fuse_req_ctx(req)->pid == t;
}

/* ---- the virtual stats entries --------------------------------------- */

/*
 * The stats name files and readers: only the mount's owner reads them,
 * unless the mount is shared (allow_other, which brings
 * default_permissions, so these modes are what the kernel checks).
 */
static bool shared(const struct pf_fs *fs)
{
	const char *p = strstr(fs->opts->fuse_opts, "allow_other");

	return p && (p == fs->opts->fuse_opts || p[-1] == ',') &&
	       (p[11] == ',' || p[11] == '\0');
}

/*
 * Attributes of the virtual entries.  The stats file gets the size and
 * time of a snapshot taken now (an open takes its own: it is served with
 * direct_io, so readers read until EOF whatever the size said).
 */
static void meta_attr(struct pf_fs *fs, fuse_ino_t ino, struct stat *st)
{
	mode_t others = shared(fs) ? 0055 : 0;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	if (ino == PF_META_DIR_INO) {
		st->st_mode = S_IFDIR | 0500 | others;
		st->st_nlink = 2;
	} else if (ino == PF_META_PLAN_INO) {
		st->st_mode = S_IFREG | 0200 | (others ? 0022 : 0);
		st->st_nlink = 1;
	} else {
		char *buf = pf_engine_stats_json(fs->engine, fs->backend_desc);

		st->st_mode = S_IFREG | 0400 | (others & 0044);
		st->st_nlink = 1;
		st->st_size = buf ? (off_t)strlen(buf) : 0;
		free(buf);
	}
}

static bool is_meta(fuse_ino_t ino)
{
	return ino == PF_META_DIR_INO || ino == PF_META_STATS_INO ||
	       ino == PF_META_PLAN_INO;
}

/* An open of the stats file: the snapshot its reads return. */
struct stats_fh {
	struct pf_fh fh;
	char *buf;
	size_t len;
};

static void stats_fh_free(struct pf_fh *fh)
{
	struct stats_fh *sf = (struct stats_fh *)fh;

	free(sf->buf);
	free(sf);
}

/* ---- metadata ---------------------------------------------------------- */

/*
 * With -o direct_io every read() of a dataset file is a round trip to the
 * daemon, however small: readers that size their buffers by st_blksize
 * (stdio, Python's io, cat) are told to read a MiB at once, the most one
 * READ carries (libfuse's 256 pages), instead of the source's 4 KiB.
 */
#define DIO_BLKSIZE (1 << 20)

static void io_size(const struct pf_opts *o, struct stat *st)
{
	if (o->direct_io && S_ISREG(st->st_mode) &&
	    st->st_blksize < DIO_BLKSIZE)
		st->st_blksize = DIO_BLKSIZE;
}

static void reply_entry(fuse_req_t req, const struct pf_opts *o,
			fuse_ino_t ino, const struct stat *st)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr = *st;
	io_size(o, &e.attr);
	e.attr_timeout = o->attr_timeout;
	e.entry_timeout = o->entry_timeout;
	fuse_reply_entry(req, &e);
}

/*
 * A lookup of the meta directory at the root or of a name in it: answers
 * it and returns true; false for any other lookup, not answered.
 */
static bool meta_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pf_fs *fs = fs_of(req);
	struct stat st;

	if (parent == PF_ROOT_INO && strcmp(name, PF_META_DIR_NAME) == 0) {
		meta_attr(fs, PF_META_DIR_INO, &st);
		reply_entry(req, fs->opts, PF_META_DIR_INO, &st);
		return true;
	}
	if (parent == PF_META_DIR_INO) {
		fuse_ino_t mi = PF_META_STATS_INO;

		if (strcmp(name, PF_META_PLAN_NAME) == 0) {
			mi = PF_META_PLAN_INO;
		} else if (strcmp(name, PF_META_STATS_NAME) != 0) {
			fuse_reply_err(req, ENOENT);
			return true;
		}
		struct fuse_entry_param e;

		/* timeouts 0: the kernel asks again each time */
		memset(&e, 0, sizeof(e));
		e.ino = mi;
		meta_attr(fs, mi, &e.attr);
		fuse_reply_entry(req, &e);
		return true;
	}
	return false;
}

static void lo_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct stat st;
	int ret;

	if (meta_lookup(req, parent, name))
		return;
	ret = pf_itable_lookup(fs->itable, parent, name, NULL, &st, &in);
	if (ret == -ENOENT) {
		/* negative entry, cached like positive ones: datasets
		 * do not change under a mount */
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->opts->entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	reply_entry(req, fs->opts, in->ino, &st);
}

static void lo_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pf_itable_forget(fs_of(req)->itable, ino, nlookup);
	fuse_reply_none(req);
}

static void lo_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct pf_fs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		pf_itable_forget(fs->itable, forgets[i].ino,
				 forgets[i].nlookup);
	fuse_reply_none(req);
}

static void lo_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct stat st;
	int ret;

	(void)fi;
	if (is_meta(ino)) {
		meta_attr(fs, ino, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	in = pf_itable_get(fs->itable, ino);
	if (!in) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	ret = pf_itable_getattr(fs->itable, in, &st);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	io_size(fs->opts, &st);
	fuse_reply_attr(req, &st, fs->opts->attr_timeout);
}

static void lo_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in = pf_itable_get(fs->itable, ino);
	char buf[PATH_MAX + 1];
	int ret;

	if (!in) {
		fuse_reply_err(req, is_meta(ino) ? EINVAL : ESTALE);
		return;
	}
	ret = fs->be->ops->readlink(fs->be, in->path, buf, sizeof(buf));
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fuse_reply_readlink(req, buf);
}

static void lo_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pf_fs *fs = fs_of(req);
	struct statvfs sv;
	int ret;

	(void)ino;
	ret = fs->be->ops->statfs(fs->be, &sv);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	sv.f_flag |= ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ---- directories ------------------------------------------------------- */

struct dent {
	char *name;
	struct stat st;
};

struct dir_fh {
	struct pf_fh fh;
	struct dent *ents;
	size_t n;
	size_t cap;
	fuse_ino_t ino;
	fuse_ino_t parent_ino;
};

static int dir_collect(void *arg, const char *name, const struct stat *st)
{
	struct dir_fh *d = arg;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct dent *n = realloc(d->ents, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->ents = n;
		d->cap = cap;
	}
	d->ents[d->n].name = strdup(name);
	if (!d->ents[d->n].name)
		return -ENOMEM;
	d->ents[d->n].st = *st;
	d->n++;
	return 0;
}

static void dir_free(struct dir_fh *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	free(d->ents);
	free(d);
}

static void dir_fh_free(struct pf_fh *fh)
{
	dir_free((struct dir_fh *)fh);
}

/*
 * A source entry named like the stats directory at the root would be
 * listed, and readdirplus would hand the kernel a dentry for it that
 * takes the stats directory's place: the stats directory wins, the
 * source's entry is not shown (and said so once).
 */
static void hide_meta_name(struct dir_fh *d)
{
	static atomic_bool told;

	for (size_t i = 0; i < d->n; i++) {
		if (strcmp(d->ents[i].name, PF_META_DIR_NAME) != 0)
			continue;
		if (!atomic_exchange(&told, true))
			pf_warn("the source has an entry '%s' at its root: "
				"hidden by the statistics directory of that "
				"name", PF_META_DIR_NAME);
		free(d->ents[i].name);
		memmove(&d->ents[i], &d->ents[i + 1],
			(d->n - i - 1) * sizeof(d->ents[0]));
		d->n--;
		break;
	}
}

static void lo_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct dir_fh *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	d->ino = ino;
	if (ino == PF_META_DIR_INO) {
		struct stat st;

		meta_attr(fs, PF_META_STATS_INO, &st);
		ret = dir_collect(d, PF_META_STATS_NAME, &st);
		if (ret < 0)
			goto err;
		fh_track(fs, &d->fh, dir_fh_free);
		fi->fh = (uintptr_t)d;
		fuse_reply_open(req, fi);
		return;
	}
	in = pf_itable_get(fs->itable, ino);
	if (!in) {
		ret = -ESTALE;
		goto err;
	}
	ret = fs->be->ops->readdir(fs->be, in->path, dir_collect, d);
	if (ret < 0)
		goto err;
	if (ino == PF_ROOT_INO)
		hide_meta_name(d);
	/* the listing is read once: the kernel may keep it */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fh_track(fs, &d->fh, dir_fh_free);
	fi->fh = (uintptr_t)d;
	fuse_reply_open(req, fi);
	return;
err:
	dir_free(d);
	fuse_reply_err(req, -ret);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi, bool plus)
{
	struct pf_fs *fs = fs_of(req);
	struct dir_fh *d = (struct dir_fh *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	size_t used = 0;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", 2.. entries */
	for (size_t i = (size_t)off; i < d->n + 2; i++) {
		struct fuse_entry_param e;
		const char *name;
		struct pf_inode *in = NULL;
		size_t need;

		memset(&e, 0, sizeof(e));
		if (i < 2) {
			name = i == 0 ? "." : "..";
			e.attr.st_mode = S_IFDIR;
			e.attr.st_ino = i == 0 ? ino : PF_ROOT_INO;
		} else {
			struct dent *de = &d->ents[i - 2];

			name = de->name;
			e.attr = de->st;
			if (plus && d->ino != PF_META_DIR_INO) {
				int ret = pf_itable_lookup(fs->itable, ino,
							   name, &de->st,
							   &e.attr, &in);

				if (ret < 0)
					continue;
				e.ino = in->ino;
				io_size(fs->opts, &e.attr);
				e.attr_timeout = fs->opts->attr_timeout;
				e.entry_timeout = fs->opts->entry_timeout;
			} else if (d->ino == PF_META_DIR_INO) {
				e.attr.st_ino = PF_META_STATS_INO;
			} else {
				/* a number the kernel only shows, never uses */
				e.attr.st_ino = 0xffffffffu;
			}
		}
		if (plus)
			need = fuse_add_direntry_plus(req, buf + used,
						      size - used, name, &e,
						      (off_t)i + 1);
		else
			need = fuse_add_direntry(req, buf + used, size - used,
						 name, &e.attr, (off_t)i + 1);
		if (need > size - used) {
			/* did not fit: the lookup it took is not the
			 * kernel's */
			if (in)
				pf_itable_forget(fs->itable, in->ino, 1);
			break;
		}
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void lo_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void lo_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void lo_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	fh_release(fs_of(req), (struct pf_fh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* ---- files ------------------------------------------------------------- */

/*
 * The engine gives every open handle of a file the one version it pinned
 * when the first was opened.  When an open finds that version older than
 * the source's (a reader still holds the old one open, or the kernel's
 * RELEASE of the last old handle is still in another worker's hands: the
 * kernel sends it without waiting), it does not wait for the old handles:
 * a new engine file of the path gets the file as it is now, replaces the
 * old one in the inode, and the old one is retired (its handles' READs
 * fail with EIO from now on: see pf_efile_retire()).  The caller then
 * makes the kernel forget the old size and page cache (returns 1).  Only
 * for a source whose getattr sees the file as it is now (a directory;
 * object stores answer from their listing).  *efp holds a reference of
 * the caller's, to the file now open.
 */
static bool same_version(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static int open_current(struct pf_fs *fs, struct pf_inode *in,
			struct pf_efile **efp, struct stat *st)
{
	struct pf_efile *old = *efp;
	struct pf_efile *nf;
	struct stat now;
	struct stat nst;
	int ret = pf_efile_open(old, st);

	if (ret == -ESTALE) {
		/* retired by another open since we got it: take its newer */
		nf = pf_itable_efile_get(fs->itable, in);
		if (!nf)
			return -ENOMEM;
		pf_efile_put(old);
		*efp = nf;
		old = nf;
		ret = pf_efile_open(old, st);
	}
	if (ret != 0 || strcmp(fs->be->ops->name, "posix") != 0)
		return ret;
	if (fs->be->ops->getattr(fs->be, in->path, &now) < 0 ||
	    !S_ISREG(now.st_mode) || same_version(&now, st))
		return 0;
	nf = pf_efile_new(fs->engine, in->path, in->ino);
	if (!nf)
		return 0;	/* share the old version, as ever */
	ret = pf_efile_open(nf, &nst);
	if (ret < 0) {
		pf_efile_put(nf);
		return 0;
	}
	if (!pf_itable_efile_replace(fs->itable, in, old, nf)) {
		/* another open replaced it first: open that one */
		pf_efile_close(nf);
		pf_efile_put(nf);
		nf = pf_itable_efile_get(fs->itable, in);
		if (!nf)
			return 0;
		ret = pf_efile_open(nf, &nst);
		if (ret < 0) {
			pf_efile_put(nf);
			return 0;
		}
	} else {
		pf_efile_retire(old);
	}
	pf_efile_close(old);
	pf_efile_put(old);
	*efp = nf;
	*st = nst;
	return 1;
}

/*
 * The plan file: each open for writing is one plan (pf_engine_hint_*).
 * Only the mount's owner may write plans unless the mount is shared: the
 * kernel checks the mode only with default_permissions, so the caller's
 * uid is checked here too.
 */
static void lo_open_plan(fuse_req_t req, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct pf_engine_hint *h;
	int ret;

	if ((fi->flags & O_ACCMODE) == O_RDONLY ||
	    (ctx->uid != getuid() && !shared(fs))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	ret = pf_engine_hint_open(fs->engine, &h);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;	/* writes reach us as written */
	fuse_reply_open(req, fi);
}

static void lo_write_plan(fuse_req_t req, fuse_ino_t ino, const char *buf,
			  size_t size, off_t off, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	int ret;

	if (ino != PF_META_PLAN_INO) {
		fuse_reply_err(req, EROFS);
		return;
	}
	ret = pf_engine_hint_write(fs->engine,
				   (struct pf_engine_hint *)(uintptr_t)fi->fh,
				   buf, size, (uint64_t)off);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

/* An open of the stats file: a snapshot of the statistics, read whole. */
static void meta_open_stats(fuse_req_t req, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct stats_fh *sf = calloc(1, sizeof(*sf));

	if (sf)
		sf->buf = pf_engine_stats_json(fs->engine, fs->backend_desc);
	if (!sf || !sf->buf) {
		free(sf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	sf->len = strlen(sf->buf);
	fh_track(fs, &sf->fh, stats_fh_free);
	fi->fh = (uintptr_t)sf;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void meta_read_stats(fuse_req_t req, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	struct stats_fh *sf = (struct stats_fh *)(uintptr_t)fi->fh;
	size_t o = (size_t)off < sf->len ? (size_t)off : sf->len;
	size_t n = sf->len - o < size ? sf->len - o : size;
	/*
	 * From a copy: once the kernel has the reply, the reader may close
	 * and RELEASE free sf on another thread while this writev is still
	 * returning (ASAN checks the iovec after it)
	 */
	char *copy = malloc(n + 1);

	if (!copy) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memcpy(copy, sf->buf + o, n);
	fuse_reply_buf(req, copy, n);
	free(copy);
}

/* A release of the stats file's or the plan file's handle. */
static void meta_release(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	if (ino == PF_META_STATS_INO)
		fh_release(fs_of(req), (struct pf_fh *)(uintptr_t)fi->fh);
	else
		pf_engine_hint_close(fs_of(req)->engine,
				     (struct pf_engine_hint *)(uintptr_t)fi->fh);
}

static void lo_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct pf_efile *ef;
	struct stat st;
	int ret;

	if (ino == PF_META_PLAN_INO) {
		lo_open_plan(req, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (ino == PF_META_STATS_INO) {
		meta_open_stats(req, fi);
		return;
	}
	in = pf_itable_get(fs->itable, ino);
	if (!in) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (!S_ISREG(in->mode)) {
		fuse_reply_err(req, S_ISDIR(in->mode) ? EISDIR : EINVAL);
		return;
	}
	if (from_self(req)) {
		/* the pusher: no open of the file, its page cache kept */
		fi->fh = SELF_FH;
		fi->keep_cache = 1;
		fi->noflush = 1;
		fuse_reply_open(req, fi);
		return;
	}
	ef = pf_itable_efile_get(fs->itable, in);
	if (!ef) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = open_current(fs, in, &ef, &st);
	/* the handle's open keeps it alive, not this reference */
	pf_efile_put(ef);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)ef;
	fi->noflush = 1;
	/* a dataset file keeps its page cache across opens (which is also
	 * where read-ahead is pushed), unless it changed since */
	fi->keep_cache = fs->opts->keep_cache && ret == 0;
	/*
	 * -o direct_io: READs bypass the page cache, so every read() of the
	 * reader reaches the engine and is copied once, from its blocks
	 * into the reader's buffer, instead of into page-cache folios the
	 * kernel must first allocate and zero (see lo_init() for mmap).
	 */
	fi->direct_io = fs->opts->direct_io;
	/* an object store's size came from a listing (inexact, or of
	 * another version): the size pinned now is what getattr says */
	if (ret == 1 || strcmp(fs->be->ops->name, "posix") != 0) {
		/*
		 * The kernel still has the old size (attributes are cached
		 * for long): expire them, and the next read asks for them
		 * (auto_inval_data), so no read is cut at a stale size or
		 * padded with zeros past the new end.
		 */
		int r = fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);

		if (r < 0 && r != -ENOENT)
			pf_warn("cannot expire the kernel's attributes of %s: "
				"%s", in->path, strerror(-r));
	}
	fuse_reply_open(req, fi);
}

static void reply_read(void *req, const struct iovec *iov, int iovcnt,
		       int err)
{
	if (err)
		fuse_reply_err(req, err);
	else if (iovcnt == 0)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_iov(req, iov, iovcnt);
}

static void lo_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	if (ino == PF_META_STATS_INO) {
		meta_read_stats(req, size, off, fi);
		return;
	}
	if (fi->fh == SELF_FH) {
		struct pf_fs *fs = fs_of(req);
		struct pf_inode *in = pf_itable_get(fs->itable, ino);
		struct pf_efile *ef = in ? pf_itable_efile_get(fs->itable, in) :
					   NULL;

		if (!ef) {
			fuse_reply_err(req, EIO);
			return;
		}
		pf_engine_read_self(ef, (uint64_t)off, size, reply_read, req);
		pf_efile_put(ef);
		return;
	}
	pf_engine_read((struct pf_efile *)(uintptr_t)fi->fh, (uint64_t)off,
		       size, reply_read, req);
}

static void lo_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	if (ino == PF_META_STATS_INO || ino == PF_META_PLAN_INO) {
		meta_release(req, ino, fi);
	} else if (fi->fh == SELF_FH) {
		/* the pusher's open: nothing to close */
	} else {
		pf_efile_close((struct pf_efile *)(uintptr_t)fi->fh);
	}
	fuse_reply_err(req, 0);
}

/* ---- everything that would change the tree ----------------------------- */

static void lo_erofs_setattr(fuse_req_t req, fuse_ino_t ino,
			     struct stat *attr, int to_set,
			     struct fuse_file_info *fi)
{
	(void)attr;
	(void)fi;
	if (ino == PF_META_PLAN_INO && to_set == FUSE_SET_ATTR_SIZE) {
		struct stat st;

		/* open(O_TRUNC) of the plan file: nothing to cut */
		meta_attr(fs_of(req), ino, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_mknod(fuse_req_t req, fuse_ino_t parent,
			   const char *name, mode_t mode, dev_t rdev)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)rdev;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_mkdir(fuse_req_t req, fuse_ino_t parent,
			   const char *name, mode_t mode)
{
	(void)parent;
	(void)name;
	(void)mode;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_unlink(fuse_req_t req, fuse_ino_t parent,
			    const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_symlink(fuse_req_t req, const char *link,
			     fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_rename(fuse_req_t req, fuse_ino_t parent,
			    const char *name, fuse_ino_t newparent,
			    const char *newname, unsigned int flags)
{
	(void)parent;
	(void)name;
	(void)newparent;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_link(fuse_req_t req, fuse_ino_t ino,
			  fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_create(fuse_req_t req, fuse_ino_t parent,
			    const char *name, mode_t mode,
			    struct fuse_file_info *fi)
{
	(void)parent;
	(void)name;
	(void)mode;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_setxattr(fuse_req_t req, fuse_ino_t ino,
			      const char *name, const char *value,
			      size_t size, int flags)
{
	(void)ino;
	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_removexattr(fuse_req_t req, fuse_ino_t ino,
				 const char *name)
{
	(void)ino;
	(void)name;
	fuse_reply_err(req, EROFS);
}

static void lo_erofs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			       off_t offset, off_t length,
			       struct fuse_file_info *fi)
{
	(void)ino;
	(void)mode;
	(void)offset;
	(void)length;
	(void)fi;
	fuse_reply_err(req, EROFS);
}

/* ---- shutdown on signals (see pf_fuse.h) -------------------------------- */

static struct {
	pthread_t tid;
	pthread_t loop_tid;	/* the thread that runs the session loop */
	struct pf_fs *fs;
	atomic_bool done;	/* the loop has returned: stop waking it */
	bool started;
} sigctl;

static void stop_sigset(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

int pf_fuse_block_signals(void)
{
	sigset_t set;

	stop_sigset(&set);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* SIGUSR1 only interrupts the loop thread's wait (no SA_RESTART). */
static void wake_handler(int sig)
{
	(void)sig;
}

static void *signal_thread(void *arg)
{
	struct timespec tick = { .tv_nsec = 100 * 1000 * 1000 };
	sigset_t set;
	int sig = 0;

	(void)arg;
	stop_sigset(&set);
	while (sigwait(&set, &sig) != 0)
		;
	if (atomic_load(&sigctl.done))
		return NULL;	/* pf_fuse_signals_stop() */
	pf_info("signal %d: unmounting", sig);
	pf_engine_stop_push(sigctl.fs->engine);
	fuse_session_exit(sigctl.fs->se);
	/*
	 * The loop waits in sem_wait(), its workers in read() of /dev/fuse:
	 * interrupt the wait until the loop has seen the exit (a wake-up
	 * just before it starts waiting would be lost).
	 */
	while (!atomic_load(&sigctl.done)) {
		pthread_kill(sigctl.loop_tid, SIGUSR1);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int pf_fuse_signals_start(struct pf_fs *fs)
{
	struct sigaction sa = { .sa_handler = wake_handler };
	sigset_t usr1;
	int ret;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return -errno;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	sigctl.fs = fs;
	sigctl.loop_tid = pthread_self();
	atomic_store(&sigctl.done, false);
	ret = -pthread_create(&sigctl.tid, NULL, signal_thread, NULL);
	if (ret == 0) {
		pthread_setname_np(sigctl.tid, "pf-signals");
		sigctl.started = true;
	}
	return ret;
}

void pf_fuse_signals_stop(void)
{
	if (!sigctl.started)
		return;
	atomic_store(&sigctl.done, true);
	/* a thread still in sigwait() takes this one and returns */
	pthread_kill(sigctl.tid, SIGTERM);
	pthread_join(sigctl.tid, NULL);
	sigctl.started = false;
}

/* ---- pushing read-ahead into the page cache ------------------------------ */

/*
 * Push by read-ahead (-o push_by=readahead).  notify_store creates 4 KiB
 * page-cache folios marked accessed (filemap_grab_folio() asks for
 * FGP_ACCESSED), so a reader's first read of each moves it to the active
 * LRU under the LRU lock: a quarter of the reader's read time in issue
 * 14's profile, 0.35 against 0.24 ms a MiB.  Pages the kernel's own
 * read-ahead allocates are not marked, and read like the local page cache.
 * So the pusher opens the file and has the kernel read the range ahead
 * (readahead(2), a read-ahead window a call); the READs that sends come
 * from the pusher's thread and are answered from the blocks in memory
 * (pf_engine_read_self()).  The file is opened through a clone of the
 * mount (open_tree(OPEN_TREE_CLONE), made anew for each push and closed
 * with it): an open file on the mount itself would make an unmount fail
 * with EBUSY while it is open, and a clone kept open would keep the file
 * system alive after the user's unmount.  Cloning needs CAP_SYS_ADMIN:
 * without it (or if anything fails) the push is a notify_store, and the
 * first failure is logged.
 */
static _Atomic int ra_off;	/* push_by=readahead found not to work */
#define RA_CHUNK ((uint64_t)1 << 20)	/* a READ at most (max_pages) */

static int push_readahead(struct pf_fs *fs, const char *path, uint64_t off,
			  uint64_t len)
{
	/* -o readahead_kb, 128 KiB where it is left to the kernel */
	uint64_t chunk = fs->opts->readahead_kb ?
				 (uint64_t)fs->opts->readahead_kb << 10 :
				 128u << 10;
	int tfd;
	int fd;
	int ret = 0;

	if (chunk > RA_CHUNK)
		chunk = RA_CHUNK;
	tfd = (int)syscall(SYS_open_tree, AT_FDCWD, fs->mountpoint,
			   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tfd < 0)
		return -errno;
	fd = openat(tfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		close(tfd);
		return ret;
	}
	/* the kernel reads at most its read-ahead window a call */
	for (uint64_t o = off; o < off + len && ret == 0; o += chunk) {
		uint64_t n = off + len - o < chunk ? off + len - o : chunk;

		if (readahead(fd, (off64_t)o, n) < 0)
			ret = -errno;
	}
	close(fd);
	close(tfd);
	return ret;
}

void pf_fuse_push(void *arg, uint64_t ino, const char *path, uint64_t off,
		  const struct iovec *iov, int iovcnt)
{
	struct pf_fs *fs = arg;
	struct fuse_session *se = fs->se;
	uint64_t t0 = pf_trace_on() ? pf_now_ns() : 0;
	uint64_t start = off;
	uint64_t total = 0;
	int ret = 0;

	if (!self_tid)
		self_tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (!fs->opts->push_store && !ra_off && fs->mountpoint) {
		ret = push_readahead(fs, path, off, total);
		if (ret == 0) {
			off += total;
			goto out;
		}
		if (ret != -ENOENT && !atomic_exchange(&ra_off, 1))
			pf_info("push by read-ahead not available (%s): "
				"pushing with notify_store", strerror(-ret));
		ret = 0;
	}
	/*
	 * One store per run of adjacent buffers: libfuse writes a one-buffer
	 * vector straight from it, where a longer one is first copied into
	 * a buffer it allocates (and faults in) on every call.
	 */
	for (int i = 0; i < iovcnt;) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(iov[i].iov_len);
		char *base = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		for (i++; i < iovcnt && (char *)iov[i].iov_base == base + len;
		     i++)
			len += iov[i].iov_len;
		bv.buf[0].mem = base;
		bv.buf[0].size = len;
		ret = fuse_lowlevel_notify_store(se, ino, (off_t)off, &bv, 0);
		/* -ENOENT: the kernel forgot the inode; nothing to do */
		if (ret < 0 && ret != -ENOENT)
			pf_debug("pushing %" PRIu64 "+%zu of inode %" PRIu64
				 " to the page cache: %s",
				 off, len, ino, strerror(-ret));
		if (ret < 0)
			break;
		off += len;
	}
out:
	if (pf_trace_on())
		pf_trace_push(ino, start, off - start, t0, pf_now_ns(),
			      ret < 0 ? -ret : 0);
}

/* ---- session ----------------------------------------------------------- */

/*
 * The kernel refuses a shared mapping (MAP_SHARED, even read-only: numpy's
 * memmap, Python's mmap.ACCESS_READ) of a file opened with direct_io with
 * ENODEV, unless the daemon asked for FUSE_DIRECT_IO_ALLOW_MMAP (Linux
 * 6.6); private mappings go through the page cache and work.  libfuse
 * names that flag from 3.16 on: built against an older one, the daemon
 * cannot ask, and says so once, since the reader's ENODEV reaches no log.
 */
static void want_direct_io_mmap(struct fuse_conn_info *conn)
{
#ifdef FUSE_CAP_DIRECT_IO_ALLOW_MMAP
	const char *why = "the kernel does not allow it";

	if (conn->capable & FUSE_CAP_DIRECT_IO_ALLOW_MMAP) {
		conn->want |= FUSE_CAP_DIRECT_IO_ALLOW_MMAP;
		return;
	}
#else
	const char *why = "a libfuse before 3.16 cannot ask the kernel for it";

	(void)conn;
#endif
	pf_warn("direct_io: shared mmap (MAP_SHARED, numpy.memmap) of the "
		"mount's files fails with ENODEV (%s); MAP_PRIVATE works; "
		"mount without direct_io for readers that map files shared",
		why);
}

static void lo_init(void *userdata, struct fuse_conn_info *conn)
{
	struct pf_fs *fs = userdata;

	/* READs answered out of order from the completion thread */
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/*
	 * Reads check that the attributes are current, which costs a clock
	 * comparison while they are (attr_timeout), and refreshes them after
	 * an open found the file changed and expired them.
	 */
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	if (fs->opts->direct_io)
		want_direct_io_mmap(conn);
	pthread_mutex_lock(&fs->init_lock);
	fs->initialized = 1;
	pthread_cond_broadcast(&fs->init_cond);
	pthread_mutex_unlock(&fs->init_lock);
}

const struct fuse_lowlevel_ops pf_fuse_ops = {
	.init = lo_init,
	.lookup = lo_lookup,
	.forget = lo_forget,
	.forget_multi = lo_forget_multi,
	.getattr = lo_getattr,
	.readlink = lo_readlink,
	.statfs = lo_statfs,
	.opendir = lo_opendir,
	.readdir = lo_readdir,
	.readdirplus = lo_readdirplus,
	.releasedir = lo_releasedir,
	.open = lo_open,
	.read = lo_read,
	.release = lo_release,
	.setattr = lo_erofs_setattr,
	.mknod = lo_erofs_mknod,
	.mkdir = lo_erofs_mkdir,
	.unlink = lo_erofs_unlink,
	.rmdir = lo_erofs_unlink,
	.symlink = lo_erofs_symlink,
	.rename = lo_erofs_rename,
	.link = lo_erofs_link,
	.write = lo_write_plan,
	.create = lo_erofs_create,
	.setxattr = lo_erofs_setxattr,
	.removexattr = lo_erofs_removexattr,
	.fallocate = lo_erofs_fallocate,
};
