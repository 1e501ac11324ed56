/*
 * pf_backend.h - where the dataset's bytes come from.
 *
 * A backend is a const ops table plus an instance pointer (struct
 * pf_backend).  Metadata calls (getattr, readdir, readlink, open, statfs)
 * are synchronous and may block the calling thread; they are rare for an
 * immutable dataset and the kernel caches their results.  Data reads are
 * asynchronous: pf_backend_submit() queues a struct pf_bio and returns at
 * once; the backend's own thread performs the read and calls bio->done()
 * exactly once.  FUSE worker threads therefore never wait for data.
 *
 * Paths are relative to the dataset root, never start with '/', and ""
 * names the root itself.
 *
 * Errors: every call returns >= 0 on success and -errno on failure.
 */
#ifndef PF_BACKEND_H
#define PF_BACKEND_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

struct pf_backend;
struct pf_bio;

/*
 * An open file of a backend, as its callers hold it: an opaque handle,
 * declared here and defined nowhere.  Each backend allocates a struct of
 * its own (posix_file, obj_file, dc_file, sc_file) and hands it out as a
 * struct pf_bfile pointer, converting back in its ops (as curl's
 * connection filters keep their own context behind one generic type).  Only the
 * backend that opened a handle may look inside it.
 */
struct pf_bfile;

/*
 * Called once per readdir entry ("." and ".." are not reported).  @st holds
 * at least st_mode and st_size (and st_mtim where the backend knows it).
 * Return non-zero to stop the listing early.
 */
typedef int (*pf_dirent_fn)(void *arg, const char *name,
			    const struct stat *st);

/*
 * A data read.  The submitter owns the bio and everything it points to until
 * done() is called; done() runs on the backend's thread and may free it.
 *
 * Result passed to done(): the number of bytes read into iov (less than the
 * iov total only when the end of the file was reached), or -errno.  Short
 * reads from the kernel are resubmitted by the backend, never reported.
 * -ETIMEDOUT: the source gave no complete answer within the request's
 * total deadline (http, s3: request_timeout), retries included.
 */
struct pf_bio {
	struct pf_bfile *file;
	uint64_t off;
	const struct iovec *iov;
	int iovcnt;
	void (*done)(struct pf_bio *bio, int64_t res);
	/*
	 * Optional (NULL: not wanted): called at most once, before done(), on
	 * the backend's thread, when the read's first bytes arrive, by the
	 * backends whose reads wait for a first byte (http, s3).  Others
	 * never call it.
	 */
	void (*started)(struct pf_bio *bio);
	void *priv;		/* the submitter's */
	unsigned flags;		/* PF_BIO_*; a decorator passes them on */
	/* backend scratch: progress of a resubmitted short read */
	uint64_t bdone;
	struct pf_bio *bnext;
};

/*
 * The read is the engine's background fill of a tree: no reader waits for
 * it, so a shared tier may wait longer for a node that reads it anyway.
 */
#define PF_BIO_FILL 0x1
/*
 * The read is for the backend's own cache tier (the fill of a file or
 * tree bigger than memory through a disk cache): a caching decorator
 * reads it after the reads of readers, and calls done() only once the
 * bytes are in its cache, so that the submitter may drop them at once.
 * A backend that caches nothing ignores it.
 */
#define PF_BIO_CACHE 0x2

struct pf_backend_ops {
	const char *name;	/* "posix", "http", "s3" */
	/* lstat() semantics: a symlink is reported as S_IFLNK */
	int (*getattr)(struct pf_backend *be, const char *path,
		       struct stat *st);
	int (*readdir)(struct pf_backend *be, const char *path,
		       pf_dirent_fn fn, void *arg);
	/* Writes a NUL-terminated target; -ENAMETOOLONG if it does not fit */
	int (*readlink)(struct pf_backend *be, const char *path, char *buf,
			size_t size);
	/*
	 * Opens @path for reading and pins its version: *st receives the size
	 * and mtime the bytes of every later read must belong to.  A read
	 * that finds the file changed fails with -EIO (and is logged).
	 */
	int (*open)(struct pf_backend *be, const char *path,
		    struct pf_bfile **out, struct stat *st);
	/* Only after every bio on @f has completed. */
	void (*close)(struct pf_backend *be, struct pf_bfile *f);
	/* Queues @bio; returns 0, or -errno without calling bio->done(). */
	int (*submit)(struct pf_backend *be, struct pf_bio *bio);
	int (*statfs)(struct pf_backend *be, struct statvfs *sv);
	/* Completes or cancels (-ECANCELED) every queued bio, then frees. */
	void (*destroy)(struct pf_backend *be);
	/*
	 * Optional: shutdown, before the engine quiesces.  Completes every
	 * bio queued or in flight with -ECANCELED at once, rather than when
	 * a slow or hung server answers; later submits fail -ESHUTDOWN.
	 * destroy() still follows.
	 */
	void (*cancel)(struct pf_backend *be);
	/*
	 * Optional: the backend's own counters for the stats file, as one
	 * JSON object written NUL-terminated into buf (truncation is the
	 * backend's to avoid: size is at least 4096).  Any thread.
	 */
	void (*stats_json)(struct pf_backend *be, char *buf, size_t size);
	/*
	 * Optional: bytes the backend can keep cached itself (a disk cache
	 * tier in front of the store).  The engine's background fill of a
	 * shuffled tree uses it as its budget when larger than max_memory.
	 * Any thread, must not block.
	 */
	uint64_t (*capacity)(struct pf_backend *be);
	/*
	 * Optional: whether the backend holds all of bytes [0, @size) of
	 * open file @f cached itself (a disk cache tier), so that the fill
	 * need not read it.  Touches nothing (no hit, no eviction clock).
	 * Any thread, must not block.
	 */
	bool (*holds)(struct pf_backend *be, struct pf_bfile *f,
		      uint64_t size);
	/*
	 * Optional: how many bytes of open file @f from @off on, in one run,
	 * the backend holds cached itself (*@held set) or does not (*@held
	 * cleared), looking at [@off, @off + @len): at least one byte when
	 * @len is not 0.  The run ends where the tier's blocks do (or at the
	 * end of the file), so it may reach past @off + @len: a read of less
	 * than a block is read as the whole block.  The fill through a disk
	 * tier reads only what it lacks, a block at a time at least.
	 * Touches nothing.  Any thread, must not block.
	 */
	uint64_t (*held_run)(struct pf_backend *be, struct pf_bfile *f,
			     uint64_t off, uint64_t len, bool *held);
	/*
	 * Optional: the blocks of open file @f that [@off, @off + @len)
	 * meets and that the backend holds cached itself are the engine's
	 * background fill's from now on (it found them there and reads them
	 * no more): a disk tier keeps them as it keeps what the fill wrote,
	 * over readers' misses.  Any thread, must not block.
	 */
	void (*keep)(struct pf_backend *be, struct pf_bfile *f, uint64_t off,
		     uint64_t len);
	/*
	 * Optional: whether every byte of [@off, @off + @len) of open file @f
	 * is another node's to bring into a tier the nodes share (a shared
	 * cache's placement puts it on a peer's server, which is up and whose
	 * node fills): the background fill reads such files after its own,
	 * when the peers' fills have put them in the tier.  False when it
	 * cannot tell.  Touches nothing.  Any thread, must not block.
	 */
	bool (*peer_fills)(struct pf_backend *be, struct pf_bfile *f,
			   uint64_t off, uint64_t len);
};

struct pf_backend {
	const struct pf_backend_ops *ops;
};

/*
 * POSIX directory backend.  Reads go through one io_uring owned by one
 * thread; when io_uring cannot be set up it falls back to a pool of
 * @fallback_threads pread threads and logs that once.  @queue_depth bounds
 * the reads in flight at the kernel.  force_fallback is for tests.
 */
struct pf_posix_cfg {
	unsigned queue_depth;
	unsigned fallback_threads;
	int force_fallback;
};

int pf_posix_backend_new(const char *root, const struct pf_posix_cfg *cfg,
			 struct pf_backend **out);
/* Which engine a POSIX backend ended up with: "io_uring" or "pread". */
const char *pf_posix_backend_engine(const struct pf_backend *be);

static inline int pf_backend_submit(struct pf_backend *be, struct pf_bio *bio)
{
	return be->ops->submit(be, bio);
}

#endif
