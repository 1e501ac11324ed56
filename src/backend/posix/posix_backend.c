/*
 * posix_backend.c - the dataset is a directory of the local system (a local
 * disk, or NFS, Lustre, ... mounted here).
 *
 * Metadata (getattr, readdir, readlink, statfs, open) is served by *at()
 * system calls relative to one O_PATH descriptor of the root, on the
 * caller's thread, and never resolves a path out of the root (see
 * "Resolution beneath the root" below).  Data reads are asynchronous:
 * submit() only queues the bio, and an engine thread reads it and calls
 * bio->done():
 *
 *  - io_uring: one ring of queue_depth reads, owned by one thread;
 *  - pread: when io_uring cannot be set up (old kernel, seccomp, the
 *    io_uring_disabled sysctl) or force_fallback is set, a pool of
 *    fallback_threads threads doing preadv().
 *
 * This file has the resolution beneath the root, the metadata ops, what
 * both engines share, submit() and the life cycle; posix_uring.c the
 * io_uring engine, posix_pread.c the pread engine; posix_int.h what
 * they share.
 *
 * Both engines resubmit short reads and EINTR/EAGAIN for the remainder, and
 * after the last read of a bio check that the file still has the size and
 * mtime and ctime pinned at open: a bio whose bytes may mix two versions
 * completes with -EIO instead.
 *
 * DESIGN
 * Threads: every op may be called from any thread.  The only shared mutable
 * state is the submit queue (a singly linked FIFO through bio->bnext) and
 * the stopping flag, both under pb->lock, which is never held across I/O or
 * a done() call.  With io_uring, the ring, its slots and the slot freelist
 * belong to the ring thread alone.  It sleeps in read() on an eventfd that
 * the ring signals for every CQE (io_uring_register_eventfd) and that
 * submitters signal when they make the queue non-empty (otherwise the ring
 * thread has a wake-up or a completion coming and will look at the queue
 * anyway).  Bios beyond the free slots stay queued until completions free
 * slots.  pread workers sleep on pb->cond.
 *
 * Ownership: the submitter owns a bio until done(), which is called exactly
 * once and after which the backend never touches the bio or its file (done()
 * may free the bio, and close the file if it was its last bio).  A struct
 * posix_file (the engine's pf_bfile) owns its fd and is freed by close().
 * Each io_uring slot owns a
 * private iovec array used only when a short read of a multi-iovec bio is
 * resubmitted (bio->iov is the submitter's and const), and so does each
 * pread worker; it grows on demand and lives as long as the backend, so
 * steady state reads do not allocate.
 * destroy() makes the engine threads cancel (-ECANCELED) every bio still
 * queued, lets reads in flight finish with their real result, joins the
 * threads and frees everything; submit() during destroy fails -ESHUTDOWN.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "pf_backend.h"
#include "pf_log.h"
#include "posix_int.h"

_Thread_local const struct posix_backend *pf_posix_tl_ring_owner;


static struct posix_backend *to_pb(struct pf_backend *be)
{
	return (struct posix_backend *)be;
}

/* ------------------------------------------------------------------ */
/* paths and metadata */

/*
 * Paths come from the FUSE layer as names of looked-up entries and never
 * hold "..", but a path that could leave the root is refused all the same.
 */
static int check_path(const char *path)
{
	const char *p = path;

	if (!path || path[0] == '/')
		return -EINVAL;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

/*
 * Resolution beneath the root.  A path names entries the kernel looked up
 * as directories, but the source may change between that lookup and the
 * call: a directory on the path replaced by a symlink to /etc or to ..
 * must not take the daemon (often root, often serving other users with
 * allow_other) out of the source.  So no call here resolves a path with
 * plain *at(): the directory part is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS), which fails with EXDEV rather than leave the
 * root (a symlink that stays inside is harmless and followed), and the last
 * component is never followed (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, readlinkat
 * on the parent): a symlink of the dataset is served as a symlink, as
 * lstat() shows it, whatever it points to.  Where openat2() does not exist
 * (Linux < 5.6, or a seccomp filter that refuses it) the directory part is
 * walked one component at a time with O_NOFOLLOW, so that no symlink on it
 * is followed at all.
 */

/* *at() calls name the directory fd itself with "." rather than "" */
static const char *rel(const char *path)
{
	return path[0] ? path : ".";
}

/* openat2(RESOLVE_BENEATH) tells a path that leaves the root by EXDEV */
static int beneath_err(int err)
{
	return err == EXDEV ? -ELOOP : -err;
}

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef RESOLVE_BENEATH
#define RESOLVE_NO_MAGICLINKS	0x02
#define RESOLVE_BENEATH		0x08
#endif

/* struct open_how of <linux/openat2.h> (not in every libc's headers) */
struct pf_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

/* openat2() beneath @dirfd; -ENOSYS where the kernel has none. */
static int openat2_beneath(int dirfd, const char *path, int flags)
{
	struct pf_open_how how = {
		.flags = (uint64_t)(unsigned)flags,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	/* EAGAIN: a rename raced with a ".." on the way; try again */
	for (int tries = 0; tries < 64; tries++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN && errno != EINTR)
			break;
	}
	return beneath_err(errno);
}

/*
 * Whether openat2() resolves beneath @rootfd here: a seccomp filter may
 * refuse it with EPERM rather than ENOSYS, and an old kernel may not know
 * a resolve flag (EINVAL, E2BIG); opening "." itself can fail for none of
 * the ordinary reasons.
 */
static bool openat2_works(int rootfd)
{
	int fd = openat2_beneath(rootfd, ".", O_PATH | O_DIRECTORY |
				 O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * The fallback: @path (relative, no "..") from @dirfd one component at a
 * time; every component but the last must be a directory and no symlink.
 * The last is opened with @flags | O_NOFOLLOW.
 */
static int walk_beneath(int dirfd, const char *path, int flags)
{
	int dfd = dirfd;
	const char *p = path;
	char name[NAME_MAX + 1];
	int fd;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len;

		if (!slash)
			break;
		len = (size_t)(slash - p);
		if (len > NAME_MAX) {
			fd = -ENAMETOOLONG;
			goto out;
		}
		if (len > 0) {	/* "a//b" */
			memcpy(name, p, len);
			name[len] = '\0';
			fd = openat(dfd, name, O_PATH | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				fd = -errno;
				goto out;
			}
			if (dfd != dirfd)
				close(dfd);
			dfd = fd;
		}
		p = slash + 1;
	}
	fd = openat(dfd, *p ? p : ".", flags | O_NOFOLLOW);
	if (fd < 0)
		fd = -errno;
out:
	if (dfd != dirfd)
		close(dfd);
	return fd;
}

/*
 * Opens @path beneath the root with @flags (O_NOFOLLOW is added: the last
 * component is never a symlink followed).  Returns the fd or -errno.
 */
static int open_beneath(struct posix_backend *pb, const char *path, int flags)
{
	int fd;

	flags |= O_NOFOLLOW | O_CLOEXEC;
	/* one component: nothing on the way to follow */
	if (!strchr(path, '/')) {
		fd = openat(pb->rootfd, rel(path), flags);
		return fd < 0 ? -errno : fd;
	}
	if (atomic_load_explicit(&pb->has_openat2, memory_order_relaxed)) {
		fd = openat2_beneath(pb->rootfd, path, flags);
		if (fd != -ENOSYS)
			return fd;
		/* a seccomp filter may refuse it only later: remember */
		atomic_store(&pb->has_openat2, false);
	}
	return walk_beneath(pb->rootfd, path, flags);
}

/*
 * The directory that holds the last component of @path, opened beneath
 * the root (O_PATH), and that component.  *dfd is pb->rootfd (not to be
 * closed) for a path of one component.  @path is not "".
 */
static int open_parent(struct posix_backend *pb, const char *path, int *dfd,
		       const char **name)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash) {
		*dfd = pb->rootfd;
		*name = path;
		return 0;
	}
	if (slash[1] == '\0')	/* "a/": no name to look at */
		return -EINVAL;
	dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open_beneath(pb, dir, O_PATH | O_DIRECTORY);
	free(dir);
	if (fd < 0)
		return fd;
	*dfd = fd;
	*name = slash + 1;
	return 0;
}

static void close_parent(struct posix_backend *pb, int dfd)
{
	if (dfd != pb->rootfd)
		close(dfd);
}

static int posix_getattr(struct pf_backend *be, const char *path,
			 struct stat *st)
{
	struct posix_backend *pb = to_pb(be);
	const char *name;
	int dfd;
	int ret;

	ret = check_path(path);
	if (ret < 0)
		return ret;
	if (!path[0])
		return fstat(pb->rootfd, st) < 0 ? -errno : 0;
	ret = open_parent(pb, path, &dfd, &name);
	if (ret < 0)
		return ret;
	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		ret = -errno;
	close_parent(pb, dfd);
	return ret;
}

static int posix_readdir(struct pf_backend *be, const char *path,
			 pf_dirent_fn fn, void *arg)
{
	struct posix_backend *pb = to_pb(be);
	DIR *dir = NULL;
	int fd = -1;
	int ret;

	ret = check_path(path);
	if (ret < 0)
		goto out;
	fd = open_beneath(pb, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		ret = fd;
		fd = -1;
		goto out;
	}
	dir = fdopendir(fd);
	if (!dir) {
		ret = -errno;
		goto out;
	}
	fd = -1;		/* closedir() closes it now */
	for (;;) {
		struct dirent *de;
		struct stat st;

		/* readdir() reports errors only through errno */
		errno = 0;
		de = readdir(dir);
		if (!de) {
			ret = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) < 0) {
			/* removed between readdir() and fstatat() */
			if (errno == ENOENT)
				continue;
			ret = -errno;
			break;
		}
		if (fn(arg, de->d_name, &st)) {
			ret = 0;
			break;
		}
	}
out:
	if (dir)
		closedir(dir);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int posix_readlink(struct pf_backend *be, const char *path,
			  char *buf, size_t size)
{
	struct posix_backend *pb = to_pb(be);
	const char *name;
	ssize_t n;
	int dfd;
	int ret;

	ret = check_path(path);
	if (ret < 0)
		return ret;
	if (size == 0)
		return -ENAMETOOLONG;
	if (!path[0])
		return -EINVAL;		/* the root is a directory */
	ret = open_parent(pb, path, &dfd, &name);
	if (ret < 0)
		return ret;
	n = readlinkat(dfd, name, buf, size);
	if (n < 0)
		ret = -errno;
	close_parent(pb, dfd);
	if (ret < 0)
		return ret;
	/* readlinkat() truncates silently: a full buffer may be a cut */
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

static int posix_statfs(struct pf_backend *be, struct statvfs *sv)
{
	struct posix_backend *pb = to_pb(be);

	if (fstatvfs(pb->rootfd, sv) < 0)
		return -errno;
	return 0;
}

static int posix_open(struct pf_backend *be, const char *path,
		      struct pf_bfile **out, struct stat *st)
{
	struct posix_backend *pb = to_pb(be);
	struct posix_file *f;
	size_t len;
	int fd = -1;
	int flags;
	int ret;

	*out = NULL;
	ret = check_path(path);
	if (ret < 0)
		goto out;
	/*
	 * O_NONBLOCK so that a FIFO in the dataset cannot hang the open; it
	 * is cleared again below, because io_uring fails reads of an
	 * O_NONBLOCK file that miss the page cache with -EAGAIN instead of
	 * waiting for the disk.
	 */
	fd = open_beneath(pb, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		ret = fd;
		fd = -1;
		goto out;
	}
	if (fstat(fd, st) < 0) {
		ret = -errno;
		goto out;
	}
	if (S_ISDIR(st->st_mode)) {
		ret = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st->st_mode)) {
		ret = -EINVAL;
		goto out;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		ret = -errno;
		goto out;
	}
	len = strlen(path);
	f = malloc(sizeof(*f) + len + 1);
	if (!f) {
		ret = -ENOMEM;
		goto out;
	}
	f->fd = fd;
	f->size = (uint64_t)st->st_size;
	f->mtime = st->st_mtim;
	f->ctime = st->st_ctim;
	atomic_init(&f->warned, false);
	memcpy(f->path, path, len + 1);
	fd = -1;		/* the file owns it now */
	*out = (struct pf_bfile *)f;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static void posix_close(struct pf_backend *be, struct pf_bfile *bf)
{
	struct posix_file *f = to_pfile(bf);

	(void)be;
	if (!f)
		return;
	close(f->fd);
	free(f);
}

/* ------------------------------------------------------------------ */
/* helpers shared by both engines */

/* Bytes in @iov, or -EINVAL if they do not fit an int64_t. */
int64_t pf_posix_iov_total(const struct iovec *iov, int cnt)
{
	uint64_t total = 0;

	for (int i = 0; i < cnt; i++) {
		if (iov[i].iov_len > (uint64_t)INT64_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	return (int64_t)total;
}

/*
 * Room for @n iovecs in @sc, or NULL.  Grows and keeps the heap array, so
 * only the first resubmission of an unusually long iovec allocates.
 */
struct iovec *pf_posix_scratch_get(struct iov_scratch *sc, int n)
{
	struct iovec *p;

	if (n <= INLINE_IOVS)
		return sc->inl;
	if (n <= sc->cap)
		return sc->heap;
	p = realloc(sc->heap, (size_t)n * sizeof(*p));
	if (!p)
		return NULL;
	sc->heap = p;
	sc->cap = n;
	return p;
}

/*
 * Writes to @dst what is left of @iov[0..cnt-1] after its first @skip
 * bytes; returns the number of entries written.
 */
int pf_posix_iov_skip(const struct iovec *iov, int cnt, uint64_t skip,
	     struct iovec *dst)
{
	int i = 0;
	int n = 0;

	while (i < cnt && skip >= iov[i].iov_len) {
		skip -= iov[i].iov_len;
		i++;
	}
	for (; i < cnt; i++) {
		dst[n].iov_base = (char *)iov[i].iov_base + skip;
		dst[n].iov_len = iov[i].iov_len - skip;
		skip = 0;
		n++;
	}
	return n;
}

/*
 * The final result of @bio, given @res, what its reads added up to (bytes
 * or -errno).  The bytes are only good if the file still is the version
 * pinned at open, and then a read stops short only at the pinned size.
 */
int64_t pf_posix_pin_check(const struct pf_bio *bio, uint64_t total,
		  int64_t res)
{
	struct posix_file *f = to_pfile(bio->file);
	uint64_t expect = 0;
	struct stat st;

	if (res < 0)
		return res;
	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (bio->off < f->size)
		expect = f->size - bio->off < total ? f->size - bio->off
						    : total;
	if ((uint64_t)st.st_size != f->size ||
	    st.st_mtim.tv_sec != f->mtime.tv_sec ||
	    st.st_mtim.tv_nsec != f->mtime.tv_nsec ||
	    st.st_ctim.tv_sec != f->ctime.tv_sec ||
	    st.st_ctim.tv_nsec != f->ctime.tv_nsec ||
	    (uint64_t)res != expect) {
		if (!atomic_exchange(&f->warned, true))
			pf_warn("%s changed during read; returning EIO",
				f->path);
		return -EIO;
	}
	return res;
}

/*
 * Detaches up to @max bios from the head of the queue, as a bnext chain.
 * Called with pb->lock held.
 */
struct pf_bio *pf_posix_queue_take(struct posix_backend *pb, unsigned max)
{
	struct pf_bio *head = pb->qhead;
	struct pf_bio *last = NULL;
	struct pf_bio *b = head;

	if (max == 0)
		return NULL;
	while (b && max) {
		last = b;
		b = b->bnext;
		max--;
	}
	if (!last)
		return NULL;
	pb->qhead = b;
	if (!b)
		pb->qtail = NULL;
	last->bnext = NULL;
	return head;
}

void pf_posix_cancel_chain(struct pf_bio *b)
{
	while (b) {
		struct pf_bio *next = b->bnext;

		b->done(b, -ECANCELED);
		b = next;
	}
}

/*
 * Engine threads must not take the daemon's signals: they are created with
 * every signal blocked.
 */
int pf_posix_spawn(
	pthread_t *t, const char *name, void *(*fn)(void *), void *arg)
{
	sigset_t all;
	sigset_t old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret == 0)
		pthread_setname_np(*t, name);
	return ret;
}

/* ------------------------------------------------------------------ */
/* submit, life cycle */

static int posix_submit(struct pf_backend *be, struct pf_bio *bio)
{
	struct posix_backend *pb = to_pb(be);
	int64_t total;
	bool wake;

	if (!bio || !bio->file || !bio->done || !bio->iov ||
	    bio->iovcnt < 1 || bio->iovcnt > IOV_MAX)
		return -EINVAL;
	total = pf_posix_iov_total(bio->iov, bio->iovcnt);
	if (total < 0 || bio->off > (uint64_t)(INT64_MAX - total))
		return -EINVAL;
	bio->bdone = 0;
	bio->bnext = NULL;

	pthread_mutex_lock(&pb->lock);
	if (pb->stopping) {
		pthread_mutex_unlock(&pb->lock);
		return -ESHUTDOWN;
	}
	wake = !pb->qhead;
	if (pb->qtail)
		pb->qtail->bnext = bio;
	else
		pb->qhead = bio;
	pb->qtail = bio;
	if (!pb->uring)
		pthread_cond_signal(&pb->cond);
	pthread_mutex_unlock(&pb->lock);

	if (pb->uring && wake && pf_posix_tl_ring_owner != pb)
		pf_posix_uring_wake(pb);
	return 0;
}

/* Stops the engine threads; every queued bio is completed when it returns. */
static void posix_stop(struct posix_backend *pb)
{
	struct pf_bio *left;

	if (!pb->lock_ready || !pb->cond_ready)
		return;
	pthread_mutex_lock(&pb->lock);
	pb->stopping = true;
	pthread_cond_broadcast(&pb->cond);
	pthread_mutex_unlock(&pb->lock);

	if (pb->ur.thread_started) {
		pf_posix_uring_wake(pb);
		pthread_join(pb->ur.thread, NULL);
		pb->ur.thread_started = false;
	}
	for (unsigned i = 0; i < pb->nworkers; i++)
		pthread_join(pb->workers[i].thread, NULL);

	/* only if no engine thread ever ran: submit() refuses bios now */
	pthread_mutex_lock(&pb->lock);
	left = pf_posix_queue_take(pb, UINT_MAX);
	pthread_mutex_unlock(&pb->lock);
	pf_posix_cancel_chain(left);
}

/* Frees whatever of @pb was set up; its threads are stopped. */
static void posix_free(struct posix_backend *pb)
{
	struct ur_engine *ur = &pb->ur;

	if (pb->workers) {
		for (unsigned i = 0; i < pb->nworkers; i++)
			free(pb->workers[i].scratch.heap);
		free(pb->workers);
	}
	if (ur->slots) {
		for (unsigned i = 0; i < pb->depth; i++)
			free(ur->slots[i].scratch.heap);
		free(ur->slots);
	}
	if (ur->efd >= 0)
		close(ur->efd);
	if (ur->ring_ready)
		io_uring_queue_exit(&ur->ring);
	if (pb->cond_ready)
		pthread_cond_destroy(&pb->cond);
	if (pb->lock_ready)
		pthread_mutex_destroy(&pb->lock);
	if (pb->rootfd >= 0)
		close(pb->rootfd);
	free(pb);
}

static void posix_destroy(struct pf_backend *be)
{
	struct posix_backend *pb = to_pb(be);

	posix_stop(pb);
	posix_free(pb);
}

static const struct pf_backend_ops posix_ops = {
	.name = "posix",
	.getattr = posix_getattr,
	.readdir = posix_readdir,
	.readlink = posix_readlink,
	.open = posix_open,
	.close = posix_close,
	.submit = posix_submit,
	.statfs = posix_statfs,
	.destroy = posix_destroy,
};

int pf_posix_backend_new(const char *root, const struct pf_posix_cfg *cfg,
			 struct pf_backend **out)
{
	static const struct pf_posix_cfg defaults;
	struct posix_backend *pb;
	unsigned nthreads;
	int setup_err = 0;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!root)
		return -EINVAL;
	if (!cfg)
		cfg = &defaults;
	pb = calloc(1, sizeof(*pb));
	if (!pb)
		return -ENOMEM;
	pb->be.ops = &posix_ops;
	pb->rootfd = -1;
	pb->ur.efd = -1;
	/* both are upper bounds, derived from other settings: clamp them */
	pb->depth = cfg->queue_depth ? cfg->queue_depth : DEFAULT_QUEUE_DEPTH;
	if (pb->depth > MAX_QUEUE_DEPTH)
		pb->depth = MAX_QUEUE_DEPTH;
	nthreads = cfg->fallback_threads ? cfg->fallback_threads
					 : DEFAULT_FALLBACK_THREADS;
	if (nthreads > MAX_FALLBACK_THREADS)
		nthreads = MAX_FALLBACK_THREADS;

	pb->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pb->rootfd < 0) {
		ret = -errno;
		goto out;
	}
	atomic_init(&pb->has_openat2, openat2_works(pb->rootfd));
	if (!atomic_load(&pb->has_openat2))
		pf_info("openat2 unavailable: paths in %s are resolved one component at a time, through no symlink",
			root);
	ret = -pthread_mutex_init(&pb->lock, NULL);
	if (ret < 0)
		goto out;
	pb->lock_ready = true;
	ret = -pthread_cond_init(&pb->cond, NULL);
	if (ret < 0)
		goto out;
	pb->cond_ready = true;

	if (cfg->force_fallback) {
		pf_info("io_uring disabled by configuration: using %u pread threads",
			nthreads);
	} else {
		pb->uring = true;
		ret = pf_posix_uring_init(pb, &setup_err);
		if (ret < 0 && !setup_err)
			goto out;
		if (setup_err) {
			char note[PF_LOG_NOTE_MAX];

			pb->uring = false;
			snprintf(note, sizeof(note), "io_uring unavailable "
				 "(%s): using %u pread threads",
				 strerror(-setup_err), nthreads);
			pf_log_note(note);
		}
	}
	if (!pb->uring) {
		ret = pf_posix_pread_init(pb, nthreads);
		if (ret < 0)
			goto out;
	}
	*out = &pb->be;
	ret = 0;
out:
	if (ret < 0)
		posix_destroy(&pb->be);
	return ret;
}

const char *pf_posix_backend_engine(const struct pf_backend *be)
{
	const struct posix_backend *pb = (const struct posix_backend *)be;

	if (!be || be->ops != &posix_ops)
		return "none";
	return pb->uring ? "io_uring" : "pread";
}
