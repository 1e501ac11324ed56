/*
 * fuse_push.c - the push transport: puts the engine's read-ahead into the
 * kernel's page cache (pf_fuse_push(), the engine's push function, called
 * on the engine's pusher thread), by the kernel's read-ahead of the file
 * or by notify_store.  The READs the pusher's read-ahead sends come back
 * to fuse_ll.c, which knows them by pf_fuse_push_from_self().
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "front_int.h"
#include "pf_clock.h"
#include "pf_log.h"
#include "pf_trace.h"

/* the pusher's thread (pf_fuse_push() sets it on its first call) */
static _Atomic pid_t self_tid;

bool pf_fuse_push_from_self(fuse_req_t req)
{
	pid_t t = self_tid;

	return t && fuse_req_ctx(req)->pid == t;
}

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
