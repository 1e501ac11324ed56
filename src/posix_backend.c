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
 * Both engines resubmit short reads and EINTR/EAGAIN for the remainder, and
 * after the last read of a bio check that the file still has the size and
 * mtime pinned at open: a bio whose bytes may mix two versions of a file
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
 * pf_bfile owns its fd and is freed by close().  Each io_uring slot owns a
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

#define DEFAULT_QUEUE_DEPTH	64
#define DEFAULT_FALLBACK_THREADS 4
/* io_uring rings hold at most 32768 entries; both limits are sanity caps */
#define MAX_QUEUE_DEPTH		4096
#define MAX_FALLBACK_THREADS	256
/* iovecs a private copy holds without a heap allocation */
#define INLINE_IOVS		8
/* CQEs copied out of the ring per batch */
#define CQE_BATCH		32
/* an IORING_OP_READ length is 32 bits; larger reads go in pieces */
#define MAX_READ_CHUNK		(1u << 30)

struct pf_bfile {
	int fd;
	uint64_t size;		/* pinned at open */
	struct timespec mtime;	/* pinned at open */
	atomic_bool warned;	/* "changed during read" logged already */
	char path[];		/* for log messages */
};

/* A private, growable iovec array. */
struct iov_scratch {
	struct iovec *heap;
	int cap;		/* entries in heap */
	struct iovec inl[INLINE_IOVS];
};

/* One read in flight at the ring. */
struct ur_slot {
	struct pf_bio *bio;
	uint64_t total;		/* bytes the bio's iovec holds */
	struct ur_slot *next_free;
	struct iov_scratch scratch;
};

struct ur_engine {
	struct io_uring ring;
	bool ring_ready;
	int efd;
	pthread_t thread;
	bool thread_started;
	struct ur_slot *slots;	/* depth of them */
	struct ur_slot *free;
	unsigned nfree;
	unsigned inflight;
	bool err_logged;
};

struct pr_worker {
	struct posix_backend *pb;
	pthread_t thread;
	struct iov_scratch scratch;
};

struct posix_backend {
	struct pf_backend be;	/* first: ops see a struct pf_backend */
	int rootfd;
	/* openat2() works here; cleared for good the first time it fails
	 * with ENOSYS */
	atomic_bool has_openat2;
	bool uring;		/* engine: io_uring, else pread */
	unsigned depth;

	pthread_mutex_t lock;	/* guards qhead, qtail, stopping */
	pthread_cond_t cond;	/* pread workers wait for bios here */
	bool lock_ready;
	bool cond_ready;
	struct pf_bio *qhead;
	struct pf_bio *qtail;
	bool stopping;

	struct ur_engine ur;

	struct pr_worker *workers;
	unsigned nworkers;	/* started */
};

/*
 * Set on the ring thread: a bio submitted from a done() callback needs no
 * eventfd wake-up, the ring thread looks at the queue before it sleeps.
 */
static _Thread_local const struct posix_backend *tl_ring_owner;

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
	struct pf_bfile *f;
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
	atomic_init(&f->warned, false);
	memcpy(f->path, path, len + 1);
	fd = -1;		/* the bfile owns it now */
	*out = f;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static void posix_close(struct pf_backend *be, struct pf_bfile *f)
{
	(void)be;
	if (!f)
		return;
	close(f->fd);
	free(f);
}

/* ------------------------------------------------------------------ */
/* helpers shared by both engines */

/* Bytes in @iov, or -EINVAL if they do not fit an int64_t. */
static int64_t iov_total(const struct iovec *iov, int cnt)
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
static struct iovec *scratch_get(struct iov_scratch *sc, int n)
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
static int iov_skip(const struct iovec *iov, int cnt, uint64_t skip,
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
static int64_t pin_check(const struct pf_bio *bio, uint64_t total,
			 int64_t res)
{
	struct pf_bfile *f = bio->file;
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
static struct pf_bio *queue_take(struct posix_backend *pb, unsigned max)
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

static void cancel_chain(struct pf_bio *b)
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
static int spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all;
	sigset_t old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* ------------------------------------------------------------------ */
/*
 * io_uring engine.  All but ur_wake() and ur_init() runs on the ring thread.
 *
 * The ring thread never sleeps in io_uring_enter(): the kernel signals an
 * eventfd registered with the ring for every CQE, submitters signal the
 * same eventfd, and the thread sleeps in read() on it.  One wait covers
 * both events and needs no SQE of its own; and it is a plain blocking
 * syscall, which valgrind runs without its global lock, whereas a thread
 * waiting in io_uring_enter() under valgrind stops every other thread.
 */

static struct io_uring_sqe *ur_get_sqe(struct ur_engine *ur)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ur->ring);

	/*
	 * The SQ has an entry for each slot, so it cannot be full; should
	 * it be, push what is in it to the kernel.
	 */
	if (!sqe) {
		io_uring_submit(&ur->ring);
		sqe = io_uring_get_sqe(&ur->ring);
	}
	return sqe;
}

/* Queues the read of what is left of @s's bio. */
static int ur_issue(struct posix_backend *pb, struct ur_slot *s)
{
	struct pf_bio *bio = s->bio;
	uint64_t off = bio->off + bio->bdone;
	const struct iovec *iov = bio->iov;
	unsigned cnt = (unsigned)bio->iovcnt;
	struct io_uring_sqe *sqe;

	/* a resubmitted multi-iovec read needs its own, advanced copy */
	if (cnt > 1 && bio->bdone) {
		struct iovec *left = scratch_get(&s->scratch, bio->iovcnt);

		if (!left)
			return -ENOMEM;
		cnt = (unsigned)iov_skip(bio->iov, bio->iovcnt, bio->bdone,
					 left);
		iov = left;
	}
	sqe = ur_get_sqe(&pb->ur);
	if (!sqe)
		return -EBUSY;
	if (bio->iovcnt == 1) {
		uint64_t left = iov[0].iov_len - bio->bdone;
		unsigned len = left < MAX_READ_CHUNK ? (unsigned)left
						     : MAX_READ_CHUNK;

		io_uring_prep_read(sqe, bio->file->fd,
				   (char *)iov[0].iov_base + bio->bdone, len,
				   off);
	} else {
		io_uring_prep_readv(sqe, bio->file->fd, iov, cnt, off);
	}
	io_uring_sqe_set_data(sqe, s);
	return 0;
}

/* Completes @s's bio with @res (bytes read so far or -errno). */
static void ur_finish(struct posix_backend *pb, struct ur_slot *s,
		      int64_t res)
{
	struct ur_engine *ur = &pb->ur;
	struct pf_bio *bio = s->bio;

	res = pin_check(bio, s->total, res);
	s->bio = NULL;
	s->next_free = ur->free;
	ur->free = s;
	ur->nfree++;
	ur->inflight--;
	/* last: done() may free the bio, and close its file */
	bio->done(bio, res);
}

static void ur_start(struct posix_backend *pb, struct pf_bio *bio)
{
	struct ur_engine *ur = &pb->ur;
	struct ur_slot *s = ur->free;
	int ret;

	ur->free = s->next_free;
	ur->nfree--;
	ur->inflight++;
	s->bio = bio;
	/* checked by submit() */
	s->total = (uint64_t)iov_total(bio->iov, bio->iovcnt);
	ret = ur_issue(pb, s);
	if (ret < 0)
		ur_finish(pb, s, ret);
}

static void ur_cqe(struct posix_backend *pb, struct ur_slot *s, int res)
{
	struct pf_bio *bio = s->bio;
	int ret;

	if (res == -EAGAIN || res == -EINTR)
		goto again;
	if (res < 0) {
		ur_finish(pb, s, res);
		return;
	}
	/* 0 before the iovec is full is the end of the file */
	bio->bdone += (uint64_t)res;
	if (res == 0 || bio->bdone >= s->total) {
		ur_finish(pb, s, (int64_t)bio->bdone);
		return;
	}
again:
	ret = ur_issue(pb, s);
	if (ret < 0)
		ur_finish(pb, s, ret);
}

/* Handles every CQE ready, in batches; returns how many there were. */
static unsigned ur_reap(struct posix_backend *pb)
{
	struct {
		uint64_t ud;
		int res;
	} batch[CQE_BATCH];
	struct io_uring_cqe *cqe;
	unsigned total = 0;
	unsigned head;
	unsigned n;

	do {
		n = 0;
		io_uring_for_each_cqe(&pb->ur.ring, head, cqe) {
			batch[n].ud = cqe->user_data;
			batch[n].res = cqe->res;
			n++;
			if (n == CQE_BATCH)
				break;
		}
		/* hand the CQ slots back before running callbacks */
		io_uring_cq_advance(&pb->ur.ring, n);
		total += n;
		for (unsigned i = 0; i < n; i++)
			ur_cqe(pb, (struct ur_slot *)(uintptr_t)batch[i].ud,
			       batch[i].res);
	} while (n == CQE_BATCH);
	return total;
}

/*
 * Moves queued bios into free slots (or cancels them all once stopping);
 * returns whether the backend is stopping.
 */
static bool ur_fill(struct posix_backend *pb)
{
	struct ur_engine *ur = &pb->ur;
	struct pf_bio *chain;
	bool stopping;

	pthread_mutex_lock(&pb->lock);
	stopping = pb->stopping;
	chain = queue_take(pb, stopping ? UINT_MAX : ur->nfree);
	pthread_mutex_unlock(&pb->lock);

	if (stopping) {
		cancel_chain(chain);
		return true;
	}
	while (chain) {
		struct pf_bio *next = chain->bnext;

		chain->bnext = NULL;
		ur_start(pb, chain);
		chain = next;
	}
	return false;
}

/* After a failed submission or wait: say so once, retry in a moment. */
static void ur_backoff(struct posix_backend *pb, const char *what, int err)
{
	const struct timespec ms = { .tv_sec = 0, .tv_nsec = 1000000 };

	/* EAGAIN/EBUSY: the kernel is short of resources for a moment */
	if (err != -EAGAIN && err != -EBUSY && !pb->ur.err_logged) {
		pb->ur.err_logged = true;
		pf_err("io_uring %s: %s", what, strerror(-err));
	}
	nanosleep(&ms, NULL);
}

/* Returns false if SQEs are left unsubmitted. */
static bool ur_submit(struct posix_backend *pb)
{
	struct io_uring *ring = &pb->ur.ring;
	int ret;

	do {
		ret = io_uring_submit(ring);
	} while (ret == -EINTR);
	if (ret < 0) {
		ur_backoff(pb, "submit", ret);
		return false;
	}
	/* a partial submission leaves the rest in the SQ, for next time */
	return io_uring_sq_ready(ring) == 0;
}

/*
 * Sleeps until a CQE or a submitter signals the eventfd - unless a bio is
 * queued and a slot free, which happens when a done() callback on this
 * thread submitted it (without a wake-up) or freed the slot.
 */
static void ur_sleep(struct posix_backend *pb)
{
	struct ur_engine *ur = &pb->ur;
	uint64_t v;
	bool ready;

	pthread_mutex_lock(&pb->lock);
	ready = pb->qhead && ur->nfree;
	pthread_mutex_unlock(&pb->lock);
	if (ready)
		return;
	/* resets the counter: every event so far is looked at next */
	if (read(ur->efd, &v, sizeof(v)) < 0 && errno != EINTR)
		ur_backoff(pb, "eventfd read", -errno);
}

static void *ur_main(void *arg)
{
	struct posix_backend *pb = arg;
	struct ur_engine *ur = &pb->ur;

	tl_ring_owner = pb;
	for (;;) {
		bool stopping = ur_fill(pb);
		bool submitted;

		if (stopping && ur->inflight == 0)
			break;
		submitted = ur_submit(pb);
		/* never sleep on SQEs the kernel has not taken */
		if (ur_reap(pb) == 0 && submitted)
			ur_sleep(pb);
	}
	return NULL;
}

static void ur_wake(struct posix_backend *pb)
{
	uint64_t one = 1;

	while (write(pb->ur.efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/*
 * Sets up the ring and its thread, or nothing.  io_uring is unavailable
 * when the ring or its eventfd cannot be set up: that error is also stored
 * in *setup_err, so that the caller falls back to pread; other failures
 * are plain errors.
 */
static int ur_init(struct posix_backend *pb, int *setup_err)
{
	struct ur_engine *ur = &pb->ur;
	int ret;

	*setup_err = 0;
	ret = io_uring_queue_init(pb->depth, &ur->ring, 0);
	if (ret < 0) {
		*setup_err = ret;
		goto out;
	}
	ur->ring_ready = true;
	ur->efd = eventfd(0, EFD_CLOEXEC);
	if (ur->efd < 0) {
		ret = -errno;
		goto out;
	}
	ret = io_uring_register_eventfd(&ur->ring, ur->efd);
	if (ret < 0) {
		*setup_err = ret;
		goto out;
	}
	ur->slots = calloc(pb->depth, sizeof(*ur->slots));
	if (!ur->slots) {
		ret = -ENOMEM;
		goto out;
	}
	for (unsigned i = pb->depth; i-- > 0;) {
		ur->slots[i].next_free = ur->free;
		ur->free = &ur->slots[i];
	}
	ur->nfree = pb->depth;
	ret = spawn(&ur->thread, ur_main, pb);
	if (ret < 0)
		goto out;
	ur->thread_started = true;
	return 0;
out:
	free(ur->slots);
	ur->slots = NULL;
	ur->free = NULL;
	if (ur->efd >= 0)
		close(ur->efd);
	ur->efd = -1;
	if (ur->ring_ready)
		io_uring_queue_exit(&ur->ring);
	ur->ring_ready = false;
	return ret;
}

/* ------------------------------------------------------------------ */
/* pread engine */

static void pr_read(struct pr_worker *w, struct pf_bio *bio)
{
	uint64_t total = (uint64_t)iov_total(bio->iov, bio->iovcnt);
	const struct iovec *iov = bio->iov;
	int cnt = bio->iovcnt;
	int64_t res = 0;

	while (bio->bdone < total) {
		ssize_t n;

		if (bio->bdone) {
			struct iovec *left;

			left = scratch_get(&w->scratch, bio->iovcnt);
			if (!left) {
				res = -ENOMEM;
				break;
			}
			cnt = iov_skip(bio->iov, bio->iovcnt, bio->bdone,
				       left);
			iov = left;
		}
		n = preadv(bio->file->fd, iov, cnt,
			   (off_t)(bio->off + bio->bdone));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			res = -errno;
			break;
		}
		/* 0 before the iovec is full is the end of the file */
		if (n == 0)
			break;
		bio->bdone += (uint64_t)n;
	}
	if (res == 0)
		res = (int64_t)bio->bdone;
	res = pin_check(bio, total, res);
	bio->done(bio, res);
}

static void *pr_main(void *arg)
{
	struct pr_worker *w = arg;
	struct posix_backend *pb = w->pb;

	for (;;) {
		struct pf_bio *bio;
		bool stopping;

		pthread_mutex_lock(&pb->lock);
		while (!pb->qhead && !pb->stopping)
			pthread_cond_wait(&pb->cond, &pb->lock);
		bio = queue_take(pb, 1);
		stopping = pb->stopping;
		pthread_mutex_unlock(&pb->lock);

		if (!bio)
			break;
		if (stopping)
			bio->done(bio, -ECANCELED);
		else
			pr_read(w, bio);
	}
	return NULL;
}

static int pr_init(struct posix_backend *pb, unsigned nthreads)
{
	int ret = 0;

	pb->workers = calloc(nthreads, sizeof(*pb->workers));
	if (!pb->workers)
		return -ENOMEM;
	for (unsigned i = 0; i < nthreads; i++) {
		struct pr_worker *w = &pb->workers[i];

		w->pb = pb;
		ret = spawn(&w->thread, pr_main, w);
		if (ret < 0)
			break;
		pb->nworkers++;
	}
	/* the workers already started are joined by posix_stop() */
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
	total = iov_total(bio->iov, bio->iovcnt);
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

	if (pb->uring && wake && tl_ring_owner != pb)
		ur_wake(pb);
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
		ur_wake(pb);
		pthread_join(pb->ur.thread, NULL);
		pb->ur.thread_started = false;
	}
	for (unsigned i = 0; i < pb->nworkers; i++)
		pthread_join(pb->workers[i].thread, NULL);

	/* only if no engine thread ever ran: submit() refuses bios now */
	pthread_mutex_lock(&pb->lock);
	left = queue_take(pb, UINT_MAX);
	pthread_mutex_unlock(&pb->lock);
	cancel_chain(left);
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
		ret = ur_init(pb, &setup_err);
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
		ret = pr_init(pb, nthreads);
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
