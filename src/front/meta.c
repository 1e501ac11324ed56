/*
 * meta.c - the virtual directory /.prefetchfs at the mount's root: the
 * stats file (a JSON snapshot of the engine's statistics, read by
 * prefetchfs-stat), the plan file (declared read order, written by the
 * mount's owner: see pf_hint.h and pf_engine_hint_*) and the warm file
 * (files to read into the cache tiers, written by the mount's owner, its
 * progress read back: prefetchfs-warm, pf_engine_preload_*).  The
 * directory is
 * found by lookup but not listed by readdir (fuse_ll.c hides a source
 * entry of its name).  Runs on the FUSE worker threads.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "front_int.h"

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
 * The caller of @req: its uid, gid and groups (the first PF_CRED_GROUPS:
 * with more, a plan may be denied what another group would allow), and
 * whether it is the mount's owner (or root).
 */
static void req_cred(fuse_req_t req, struct pf_engine_cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[PF_CRED_GROUPS];
	int n = fuse_req_getgroups(req, PF_CRED_GROUPS, groups);

	memset(c, 0, sizeof(*c));
	c->uid = (uint32_t)ctx->uid;
	c->gid = (uint32_t)ctx->gid;
	for (int i = 0; i < n && i < PF_CRED_GROUPS; i++)
		c->groups[c->ngroups++] = (uint32_t)groups[i];
	c->owner = ctx->uid == getuid() || ctx->uid == 0;
}

/*
 * Attributes of the virtual entries.  The stats file gets the size and
 * time of a snapshot taken now (an open takes its own: it is served with
 * direct_io, so readers read until EOF whatever the size said).
 */
void pf_meta_attr(struct pf_fs *fs, fuse_ino_t ino, struct stat *st)
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
	} else if (ino == PF_META_WARM_INO) {
		st->st_mode = S_IFREG | 0600 | (others ? 0066 : 0);
		st->st_nlink = 1;
	} else {
		char *buf = pf_engine_stats_json(fs->engine, fs->backend_desc);

		st->st_mode = S_IFREG | 0400 | (others & 0044);
		st->st_nlink = 1;
		st->st_size = buf ? (off_t)strlen(buf) : 0;
		free(buf);
	}
}

bool pf_meta_is(fuse_ino_t ino)
{
	return ino == PF_META_DIR_INO || ino == PF_META_STATS_INO ||
	       ino == PF_META_PLAN_INO || ino == PF_META_WARM_INO;
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

/*
 * A lookup of the meta directory at the root or of a name in it: answers
 * it and returns true; false for any other lookup, not answered.
 */
bool pf_meta_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pf_fs *fs = fs_of(req);
	struct stat st;

	if (parent == PF_ROOT_INO && strcmp(name, PF_META_DIR_NAME) == 0) {
		pf_meta_attr(fs, PF_META_DIR_INO, &st);
		pf_fuse_reply_entry(req, fs->opts, PF_META_DIR_INO, &st);
		return true;
	}
	if (parent == PF_META_DIR_INO) {
		fuse_ino_t mi = PF_META_STATS_INO;

		if (strcmp(name, PF_META_PLAN_NAME) == 0) {
			mi = PF_META_PLAN_INO;
		} else if (strcmp(name, PF_META_WARM_NAME) == 0) {
			mi = PF_META_WARM_INO;
		} else if (strcmp(name, PF_META_STATS_NAME) != 0) {
			fuse_reply_err(req, ENOENT);
			return true;
		}
		struct fuse_entry_param e;

		/* timeouts 0: the kernel asks again each time */
		memset(&e, 0, sizeof(e));
		e.ino = mi;
		pf_meta_attr(fs, mi, &e.attr);
		fuse_reply_entry(req, &e);
		return true;
	}
	return false;
}

/*
 * The plan file: each open for writing is one plan (pf_engine_hint_*).
 * Only the mount's owner may write plans unless the mount is shared: the
 * kernel checks the mode only with default_permissions, so the caller's
 * uid is checked here too.  The plan keeps its writer's credentials: it
 * follows no path its writer could not read, and another user's plans
 * are capped (pf_engine.h).
 */
/*
 * The writer of a control file (plan, warm): opened for writing, by the
 * mount's owner or, on a shared mount, anyone; its credentials in @cred.
 * Replies EACCES and returns false otherwise.
 */
static bool meta_writer(fuse_req_t req, const struct fuse_file_info *fi,
			struct pf_engine_cred *cred)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if ((fi->flags & O_ACCMODE) == O_RDONLY ||
	    (ctx->uid != getuid() && !shared(fs_of(req)))) {
		fuse_reply_err(req, EACCES);
		return false;
	}
	req_cred(req, cred);
	return true;
}

void pf_meta_open_plan(fuse_req_t req, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_engine_cred cred;
	struct pf_engine_hint *h;
	int ret;

	if (!meta_writer(req, fi, &cred))
		return;
	ret = pf_engine_hint_open(fs->engine, &cred, &h);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;	/* writes reach us as written */
	fuse_reply_open(req, fi);
}

/*
 * The warm file: each open is one warm-up (pf_engine_preload_*), opened
 * for writing the paths and reading the progress back; the same owners as
 * the plan file.
 */
void pf_meta_open_warm(fuse_req_t req, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct pf_engine_cred cred;
	struct pf_engine_preload *p;
	int ret;

	/* a warm-up reads only what its writer may read, as a plan */
	if (!meta_writer(req, fi, &cred))
		return;
	ret = pf_engine_preload_open(fs->engine, &cred, &p);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uintptr_t)p;
	fi->direct_io = 1;	/* writes and reads reach us as made */
	fuse_reply_open(req, fi);
}

/* A read of the warm file: the warm-up's progress, one JSON line. */
void pf_meta_read_warm(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	char buf[8192];
	int n = pf_engine_preload_status(
		fs->engine, (struct pf_engine_preload *)(uintptr_t)fi->fh, buf,
		sizeof(buf));
	size_t o;

	if (n < 0) {
		fuse_reply_err(req, -n);
		return;
	}
	o = (size_t)off < (size_t)n ? (size_t)off : (size_t)n;
	fuse_reply_buf(req, buf + o, (size_t)n - o < size ? (size_t)n - o
							   : size);
}

/* A write to the plan file or the warm file. */
void pf_meta_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		   size_t size, off_t off, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	int ret;

	if (ino == PF_META_WARM_INO) {
		ret = pf_engine_preload_write(
			fs->engine,
			(struct pf_engine_preload *)(uintptr_t)fi->fh, buf,
			size);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, (size_t)ret);
		return;
	}
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

/*
 * An open of the stats file: a snapshot of the statistics, read whole, as
 * the opener may see them (another user than the owner: the totals, its
 * own plans, no path).
 */
void pf_meta_open_stats(fuse_req_t req, struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);
	struct stats_fh *sf = calloc(1, sizeof(*sf));
	struct pf_engine_cred cred;

	req_cred(req, &cred);
	if (sf)
		sf->buf = pf_engine_stats_json_for(fs->engine,
						   fs->backend_desc, &cred);
	if (!sf || !sf->buf) {
		free(sf);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	sf->len = strlen(sf->buf);
	pf_fuse_fh_track(fs, &sf->fh, stats_fh_free);
	fi->fh = (uintptr_t)sf;
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

void pf_meta_read_stats(fuse_req_t req, size_t size, off_t off,
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

/* A release of the stats, plan or warm file's handle. */
void pf_meta_release(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	struct pf_fs *fs = fs_of(req);

	if (ino == PF_META_STATS_INO)
		pf_fuse_fh_release(fs, (struct pf_fh *)(uintptr_t)fi->fh);
	else if (ino == PF_META_WARM_INO)
		pf_engine_preload_close(
			fs->engine,
			(struct pf_engine_preload *)(uintptr_t)fi->fh);
	else
		pf_engine_hint_close(fs->engine,
				     (struct pf_engine_hint *)(uintptr_t)fi->fh);
}
