/*
 * front_int.h - what the daemon's files share (FRONT_SRCS: not installed,
 * not in the core library): fuse_ll.c holds the FUSE operations and the
 * handles of directories and of the stats file, meta.c the /.prefetchfs
 * directory (stats and plan files), fuse_push.c the push transport,
 * fuse_signals.c the shutdown on signals (backend_stack.h: the backends
 * main.c mounts).  Include after defining FUSE_USE_VERSION.
 */
#ifndef PF_FRONT_INT_H
#define PF_FRONT_INT_H

#include <stdbool.h>
#include <sys/stat.h>

#include "pf_fuse.h"

static inline struct pf_fs *fs_of(fuse_req_t req)
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

/* fuse_ll.c: puts @fh on fs->handles, freed by @free_fn at its release */
void pf_fuse_fh_track(struct pf_fs *fs, struct pf_fh *fh,
		      void (*free_fn)(struct pf_fh *));
void pf_fuse_fh_release(struct pf_fs *fs, struct pf_fh *fh);
/* fuse_ll.c: a lookup's reply with the mount's timeouts */
void pf_fuse_reply_entry(fuse_req_t req, const struct pf_opts *o,
			 fuse_ino_t ino, const struct stat *st);

/* The pusher's thread: its opens and READs are its own read-ahead
 * (pf_fuse_push()); such an open's handle is SELF_FH. */
#define SELF_FH ((uint64_t)1)
/* fuse_push.c: @req comes from the pusher's thread */
bool pf_fuse_push_from_self(fuse_req_t req);

/*
 * meta.c: the virtual directory /.prefetchfs and its files (inodes
 * PF_META_*_INO: stats, plan, warm).  pf_meta_lookup() answers a lookup of the directory or
 * of a name in it and returns true, else returns false without answering.
 * The others answer their request; pf_meta_release() does not (the caller
 * replies).
 */
bool pf_meta_is(fuse_ino_t ino);
void pf_meta_attr(struct pf_fs *fs, fuse_ino_t ino, struct stat *st);
bool pf_meta_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void pf_meta_open_plan(fuse_req_t req, struct fuse_file_info *fi);
void pf_meta_open_warm(fuse_req_t req, struct fuse_file_info *fi);
void pf_meta_read_warm(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi);
/* a write to the plan or the warm file */
void pf_meta_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		   size_t size, off_t off, struct fuse_file_info *fi);
void pf_meta_open_stats(fuse_req_t req, struct fuse_file_info *fi);
void pf_meta_read_stats(fuse_req_t req, size_t size, off_t off,
			struct fuse_file_info *fi);
void pf_meta_release(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi);

#endif
