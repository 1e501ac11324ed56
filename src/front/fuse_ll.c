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
 * The virtual directory /.prefetchfs (meta.c) holds the stats file and
 * the plan file; it is found by lookup but not listed by readdir.  A
 * source entry of that name at the root is neither found nor listed (see
 * hide_meta_name()).  The pusher's own opens and READs (fuse_push.c) are
 * answered here too.  Statics are lo_*, as in libfuse's passthrough_ll.c;
 * pf_* names are the front end's (front_int.h) or public (pf_fuse.h).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>

#include "front_int.h"
#include "pf_log.h"

/* ---- handles ----------------------------------------------------------- */

void pf_fuse_fh_track(struct pf_fs *fs, struct pf_fh *fh,
		      void (*free_fn)(struct pf_fh *))
{
	fh->free = free_fn;
	pthread_mutex_lock(&fs->handles_lock);
	list_add_tail(&fs->handles, &fh->node);
	pthread_mutex_unlock(&fs->handles_lock);
}

void pf_fuse_fh_release(struct pf_fs *fs, struct pf_fh *fh)
{
	pthread_mutex_lock(&fs->handles_lock);
	list_del(&fh->node);
	pthread_mutex_unlock(&fs->handles_lock);
	fh->free(fh);
}

void pf_fuse_free_handles(struct pf_fs *fs)
{
	while (!list_empty(&fs->handles))
		pf_fuse_fh_release(fs, container_of(fs->handles.next,
						    struct pf_fh, node));
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

void pf_fuse_reply_entry(fuse_req_t req, const struct pf_opts *o,
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

static void lo_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct stat st;
	int ret;

	if (pf_meta_lookup(req, parent, name))
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
	pf_itable_told(fs->itable, in, &st);
	pf_fuse_reply_entry(req, fs->opts, in->ino, &st);
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
	if (pf_meta_is(ino)) {
		pf_meta_attr(fs, ino, &st);
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
	pf_itable_told(fs->itable, in, &st);
	fuse_reply_attr(req, &st, fs->opts->attr_timeout);
}

static void lo_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in = pf_itable_get(fs->itable, ino);
	char buf[PATH_MAX + 1];
	int ret;

	if (!in) {
		fuse_reply_err(req, pf_meta_is(ino) ? EINVAL : ESTALE);
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

		pf_meta_attr(fs, PF_META_STATS_INO, &st);
		ret = dir_collect(d, PF_META_STATS_NAME, &st);
		if (ret < 0)
			goto err;
		pf_fuse_fh_track(fs, &d->fh, dir_fh_free);
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
	pf_fuse_fh_track(fs, &d->fh, dir_fh_free);
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
				pf_itable_told(fs->itable, in, &e.attr);
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
	pf_fuse_fh_release(fs_of(req), (struct pf_fh *)(uintptr_t)fi->fh);
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
	/* the ctime too: a rewrite that restores the mtime has a new one */
	return a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
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

static void lo_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_inode *in;
	struct pf_efile *ef;
	struct stat st;
	int ret;

	if (ino == PF_META_PLAN_INO) {
		pf_meta_open_plan(req, fi);
		return;
	}
	if (ino == PF_META_WARM_INO) {
		pf_meta_open_warm(req, fi);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (ino == PF_META_STATS_INO) {
		pf_meta_open_stats(req, fi);
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
	if (pf_fuse_push_from_self(req)) {
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
	 * another version): the size pinned now is what getattr says; the
	 * kernel has it already when it was told no other (a round trip
	 * less a file: no GETATTR after the open) */
	if (ret == 1 || (strcmp(fs->be->ops->name, "posix") != 0 &&
			 !pf_itable_told_same(fs->itable, in, &st))) {
		/*
		 * The kernel still has the old size (attributes are cached
		 * for long): expire them, and the next read asks for them
		 * (auto_inval_data), so no read is cut at a stale size or
		 * padded with zeros past the new end.
		 */
		int r;

		pf_itable_told_reset(fs->itable, in);
		r = fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);

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
		pf_meta_read_stats(req, size, off, fi);
		return;
	}
	if (ino == PF_META_WARM_INO) {
		pf_meta_read_warm(req, size, off, fi);
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
	if (ino == PF_META_STATS_INO || ino == PF_META_PLAN_INO ||
	    ino == PF_META_WARM_INO) {
		pf_meta_release(req, ino, fi);
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
	if ((ino == PF_META_PLAN_INO || ino == PF_META_WARM_INO) &&
	    to_set == FUSE_SET_ATTR_SIZE) {
		struct stat st;

		/* open(O_TRUNC) of the plan file: nothing to cut */
		pf_meta_attr(fs_of(req), ino, &st);
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
	.write = pf_meta_write,
	.create = lo_erofs_create,
	.setxattr = lo_erofs_setxattr,
	.removexattr = lo_erofs_removexattr,
	.fallocate = lo_erofs_fallocate,
};
