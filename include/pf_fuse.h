/*
 * pf_fuse.h - the FUSE front end: libfuse3 low-level operations over the
 * inode table and the engine.  Not part of the core library.
 */
#ifndef PF_FUSE_H
#define PF_FUSE_H

#include <pthread.h>
#include <fuse_lowlevel.h>

#include "pf_backend.h"
#include "pf_engine.h"
#include "pf_inode.h"
#include "pf_list.h"
#include "pf_opts.h"

struct pf_fs {
	const struct pf_opts *opts;
	struct pf_backend *be;
	struct pf_engine *engine;
	struct pf_itable *itable;
	const char *backend_desc;	/* for the stats file */
	struct fuse_session *se;	/* set before the loop runs */
	const char *mountpoint;		/* absolute: the pusher opens files
					 * through it (push by read-ahead) */
	/* set by the init callback; the read-ahead thread waits for it */
	pthread_mutex_t init_lock;
	pthread_cond_t init_cond;
	int initialized;
	/* open handles of directories and of the stats file (fuse_ll.c),
	 * so that those still open when the session ends are freed too */
	pthread_mutex_t handles_lock;
	struct list handles;
};

/*
 * Free what the handles the kernel never released hold (a reader that had
 * a directory or the stats file open when the daemon was told to stop;
 * the engine frees the rest): call once the session is destroyed, when no
 * request can come.
 */
void pf_fuse_free_handles(struct pf_fs *fs);

/*
 * The engine's push function: @arg is the struct pf_fs; puts the bytes in
 * the kernel's page cache of inode @ino (file @path): by the kernel's
 * read-ahead of the file opened through a clone of the mount, whose READs
 * are answered from the blocks (-o push_by=readahead, where the daemon may
 * clone a mount), else by notify_store.
 */
void pf_fuse_push(void *arg, uint64_t ino, const char *path, uint64_t off,
		  const struct iovec *iov, int iovcnt);

/*
 * Shutdown on SIGTERM, SIGINT and SIGHUP.  A push (notify_store) may wait
 * for a page the kernel has locked for a READ still in its queue; once the
 * session loop has ended nobody would answer that READ, so the pusher must
 * be stopped while the loop still runs.  Hence no signal handler does the
 * work: pf_fuse_block_signals() blocks the three signals in the calling
 * thread before any other thread exists (every thread inherits the mask);
 * pf_fuse_signals_start() starts a thread that waits for them, stops the
 * engine's pusher, ends the session loop and wakes the thread running it
 * (the caller).  pf_fuse_signals_stop() ends that thread; call it once the
 * loop has returned, before the engine is stopped.  One per process.
 */
int pf_fuse_block_signals(void);
int pf_fuse_signals_start(struct pf_fs *fs);
void pf_fuse_signals_stop(void);
/*
 * A thread that calls @fn(@arg) once when session @se has ended (the
 * mount gone, or a signal), within 20 ms, while the session loop may still
 * be joining workers busy with a slow source: a cache_dir's lock then says
 * "exiting" at once, and a mount of it right after the unmount waits for
 * this daemon instead of being refused.  pf_fuse_exit_watch_stop() joins
 * it, after the loop returned.
 */
int pf_fuse_exit_watch_start(struct fuse_session *se, void (*fn)(void *arg),
			     void *arg);
void pf_fuse_exit_watch_stop(void);

/* The low-level operations; userdata is a struct pf_fs. */
extern const struct fuse_lowlevel_ops pf_fuse_ops;

#endif
