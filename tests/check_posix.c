/*
 * check_posix.c - the POSIX directory backend.
 *
 * Metadata calls run against a scratch tree (empty file, symlink, names with
 * spaces and UTF-8, nested and empty directories).  Data reads run once per
 * engine configuration (io_uring with the default and a tiny queue depth,
 * pread with the default and a single thread) through the same test bodies,
 * and are compared byte for byte with pread() of the same file.  Every test
 * makes its own temporary directory and removes it.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pf_backend.h"
#include "tmptree.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#define UTF8_NAME "ünïcödé-日本.bin"
#define SPACE_NAME "with space.dat"
#define DEEP_SIZE 5000
#define MAX_SEGS 6
#define SENTINEL 0xa5

/* per test case (removes what failed tests leave), and per test */
static char basedir[PATH_MAX];
static char tmpdir[PATH_MAX];

/* unchecked: runs in Check's own process, before the forks */
static void case_setup(void)
{
	strcpy(basedir, "/tmp/check_posix.XXXXXX");
	if (!mkdtemp(basedir)) {
		perror("mkdtemp");
		abort();
	}
}

static void case_teardown(void)
{
	rm_tree(basedir);
}

static void setup(void)
{
	int n = snprintf(tmpdir, sizeof(tmpdir), "%s/t.XXXXXX", basedir);

	ck_assert_int_lt(n, (int)sizeof(tmpdir));
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	rm_tree(tmpdir);
}

static void path_of(char *buf, size_t size, const char *rel)
{
	int n = snprintf(buf, size, "%s/%s", tmpdir, rel);

	ck_assert_int_lt(n, (int)size);
}

/* Byte @off of a file written with @seed: not periodic at any small size. */
static unsigned char pat(uint64_t off, unsigned seed)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ull + seed;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (unsigned char)x;
}

static void write_file(const char *rel, uint64_t size, unsigned seed)
{
	char path[PATH_MAX];
	unsigned char buf[65536];
	uint64_t off = 0;
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	while (off < size) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = pat(off + i, seed);
		ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
		off += n;
	}
	ck_assert_int_eq(close(fd), 0);
}

static void make_dir(const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

static void make_link(const char *target, const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	ck_assert_int_eq(symlink(target, path), 0);
}

static void lstat_rel(const char *rel, struct stat *st)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	ck_assert_int_eq(lstat(path, st), 0);
}

/* The names the tree's root holds. */
static const char *const root_names[] = {
	"...", "..x", "dir", "empty", "link", "plain.txt", UTF8_NAME,
	SPACE_NAME,
};
#define NROOT (sizeof(root_names) / sizeof(root_names[0]))

static void make_tree(void)
{
	char path[PATH_MAX];
	FILE *f;

	path_of(path, sizeof(path), "plain.txt");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("hello, world\n", f);
	ck_assert_int_eq(fclose(f), 0);
	write_file("empty", 0, 0);
	make_link("plain.txt", "link");
	write_file(SPACE_NAME, 100, 1);
	write_file(UTF8_NAME, 200, 2);
	/* legal names that merely start with dots */
	write_file("...", 3, 3);
	write_file("..x", 4, 4);
	make_dir("dir");
	make_dir("dir/sub");
	make_dir("dir/emptydir");
	write_file("dir/sub/deep.bin", DEEP_SIZE, 5);
}

/* Descriptors this process has open: a backend must give back all its own. */
static unsigned count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static struct pf_backend *new_backend(const struct pf_posix_cfg *cfg)
{
	struct pf_backend *be = NULL;

	ck_assert_int_eq(pf_posix_backend_new(tmpdir, cfg, &be), 0);
	ck_assert_ptr_nonnull(be);
	ck_assert_str_eq(be->ops->name, "posix");
	return be;
}

/* ------------------------------------------------------------------ */
/* engine configurations: every read test runs once per entry */

static const struct {
	struct pf_posix_cfg cfg;
	bool uring;
} engines[] = {
	{ { .queue_depth = 0 }, true },
	{ { .queue_depth = 4 }, true },
	{ { .force_fallback = 1 }, false },
	{ { .force_fallback = 1, .fallback_threads = 1 }, false },
};
#define NENGINES ((int)(sizeof(engines) / sizeof(engines[0])))

/* Can this process set up an io_uring at all (valgrind, seccomp, ...)? */
static bool uring_usable(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(4, &ring, 0) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static struct pf_backend *engine_backend(int i)
{
	return new_backend(&engines[i].cfg);
}

/* ------------------------------------------------------------------ */
/* asynchronous reads */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned done;
};

struct tbio {
	struct pf_bio bio;	/* first: done() gets it back */
	struct iovec iov[MAX_SEGS];
	struct waiter *w;
	atomic_int calls;
	int64_t res;
	uint64_t len;		/* bytes the iovec holds */
	unsigned char *buf;	/* all segments, back to back */
};

static void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->done = 0;
}

static void waiter_wait(struct waiter *w, unsigned n)
{
	pthread_mutex_lock(&w->lock);
	while (w->done < n)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static unsigned waiter_count(struct waiter *w)
{
	unsigned n;

	pthread_mutex_lock(&w->lock);
	n = w->done;
	pthread_mutex_unlock(&w->lock);
	return n;
}

static void waiter_fini(struct waiter *w)
{
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

static void tbio_done(struct pf_bio *bio, int64_t res)
{
	struct tbio *t = (struct tbio *)bio;
	struct waiter *w = t->w;

	t->res = res;
	atomic_fetch_add(&t->calls, 1);
	pthread_mutex_lock(&w->lock);
	w->done++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/*
 * Sets @t up to read @nseg segments of the given lengths at @off into one
 * buffer filled with SENTINEL.
 */
static void tbio_init(struct tbio *t, struct pf_bfile *f, struct waiter *w,
		      uint64_t off, const size_t *seg, int nseg)
{
	size_t pos = 0;

	memset(t, 0, sizeof(*t));
	t->len = 0;
	for (int i = 0; i < nseg; i++)
		t->len += seg[i];
	/* +1: malloc(0) may return NULL */
	t->buf = malloc(t->len + 1);
	ck_assert_ptr_nonnull(t->buf);
	memset(t->buf, SENTINEL, t->len + 1);
	for (int i = 0; i < nseg; i++) {
		t->iov[i].iov_base = t->buf + pos;
		t->iov[i].iov_len = seg[i];
		pos += seg[i];
	}
	t->w = w;
	atomic_init(&t->calls, 0);
	t->res = INT64_MIN;
	t->bio.file = f;
	t->bio.off = off;
	t->bio.iov = t->iov;
	t->bio.iovcnt = nseg;
	t->bio.done = tbio_done;
}

static void tbio_fini(struct tbio *t)
{
	free(t->buf);
	t->buf = NULL;
}

/* What a read of @len bytes at @off of a @size byte file must return. */
static int64_t expect_len(uint64_t size, uint64_t off, uint64_t len)
{
	if (off >= size)
		return 0;
	return (int64_t)(size - off < len ? size - off : len);
}

/*
 * Checks a completed read of the file at @fd (a plain descriptor, for
 * pread()) of @size bytes: exactly one done() call, the expected count,
 * the bytes pread() gives, and the rest of the buffer untouched.
 */
static void tbio_check(const struct tbio *t, int fd, uint64_t size,
		       unsigned idx)
{
	int64_t want = expect_len(size, t->bio.off, t->len);
	unsigned char *ref;

	ck_assert_msg(atomic_load(&t->calls) == 1,
		      "bio %u: done() called %d times", idx,
		      atomic_load(&t->calls));
	ck_assert_msg(t->res == want,
		      "bio %u (off %llu len %llu segs %d): res %lld, want %lld",
		      idx, (unsigned long long)t->bio.off,
		      (unsigned long long)t->len, t->bio.iovcnt,
		      (long long)t->res, (long long)want);
	ref = malloc((size_t)want + 1);
	ck_assert_ptr_nonnull(ref);
	ck_assert_int_eq(pread(fd, ref, (size_t)want, (off_t)t->bio.off),
			 want);
	/* one assertion per bio: each ck_assert costs a message to Check */
	if (memcmp(t->buf, ref, (size_t)want) != 0) {
		int64_t i = 0;

		while (t->buf[i] == ref[i])
			i++;
		ck_abort_msg("bio %u: byte %lld differs (%#x, want %#x)", idx,
			     (long long)i, t->buf[i], ref[i]);
	}
	for (uint64_t i = (uint64_t)want; i <= t->len; i++) {
		if (t->buf[i] != SENTINEL)
			ck_abort_msg("bio %u: byte %llu written past the end",
				     idx, (unsigned long long)i);
	}
	free(ref);
}

static int open_plain(const char *rel)
{
	char path[PATH_MAX];
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Reads [off, off+len) as one bio and checks it; returns the result. */
static int64_t read_one(struct pf_backend *be, struct pf_bfile *f, int fd,
			uint64_t size, uint64_t off, const size_t *seg,
			int nseg)
{
	struct waiter w;
	struct tbio t;
	int64_t res;

	waiter_init(&w);
	tbio_init(&t, f, &w, off, seg, nseg);
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), 0);
	waiter_wait(&w, 1);
	tbio_check(&t, fd, size, 0);
	res = t.res;
	tbio_fini(&t);
	waiter_fini(&w);
	return res;
}

/* A read whose result is an error: returns it, checks nothing was read. */
static int64_t read_err(struct pf_backend *be, struct pf_bfile *f,
			uint64_t off, size_t len)
{
	struct waiter w;
	struct tbio t;
	int64_t res;

	waiter_init(&w);
	tbio_init(&t, f, &w, off, &len, 1);
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), 0);
	waiter_wait(&w, 1);
	ck_assert_int_eq(atomic_load(&t.calls), 1);
	res = t.res;
	tbio_fini(&t);
	waiter_fini(&w);
	return res;
}

/* xorshift64*: reproducible random offsets and lengths */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/*
 * A random read of up to @maxlen bytes somewhere in (or a little past) a
 * @size byte file; a third are split over 2..MAX_SEGS segments, some of
 * them empty.
 */
static void tbio_random(struct tbio *t, struct pf_bfile *f, struct waiter *w,
			uint64_t size, uint64_t maxlen, uint64_t *seed)
{
	size_t seg[MAX_SEGS];
	uint64_t off = rnd(seed) % (size + 65536);
	int nseg = rnd(seed) % 3 == 0 ? 2 + (int)(rnd(seed) % (MAX_SEGS - 1))
				       : 1;

	for (int i = 0; i < nseg; i++) {
		seg[i] = (size_t)(rnd(seed) % (maxlen / (uint64_t)nseg + 1));
		if (nseg == 1 && seg[i] == 0)
			seg[i] = 1;
	}
	tbio_init(t, f, w, off, seg, nseg);
}

/* ------------------------------------------------------------------ */
/* constructor, metadata */

START_TEST(test_new_errors)
{
	struct pf_posix_cfg big = { .queue_depth = 1u << 20 };
	struct pf_posix_cfg many = { .fallback_threads = 1u << 20,
				     .force_fallback = 1 };
	struct pf_backend *be = (struct pf_backend *)&be;
	char path[PATH_MAX];

	path_of(path, sizeof(path), "missing");
	ck_assert_int_eq(pf_posix_backend_new(path, NULL, &be), -ENOENT);
	ck_assert_ptr_null(be);

	write_file("file", 10, 0);
	path_of(path, sizeof(path), "file");
	be = (struct pf_backend *)&be;
	ck_assert_int_eq(pf_posix_backend_new(path, NULL, &be), -ENOTDIR);
	ck_assert_ptr_null(be);

	ck_assert_int_eq(pf_posix_backend_new(NULL, NULL, &be), -EINVAL);
	ck_assert_ptr_null(be);

	/* NULL cfg means defaults; oversized bounds are clamped */
	ck_assert_int_eq(pf_posix_backend_new(tmpdir, NULL, &be), 0);
	ck_assert_ptr_nonnull(be);
	be->ops->destroy(be);
	ck_assert_int_eq(pf_posix_backend_new(tmpdir, &big, &be), 0);
	ck_assert_ptr_nonnull(be);
	be->ops->destroy(be);
	ck_assert_int_eq(pf_posix_backend_new(tmpdir, &many, &be), 0);
	ck_assert_str_eq(pf_posix_backend_engine(be), "pread");
	be->ops->destroy(be);
}
END_TEST

static void check_attr(struct pf_backend *be, const char *rel)
{
	struct stat got;
	struct stat want;

	ck_assert_int_eq(be->ops->getattr(be, rel, &got), 0);
	lstat_rel(rel, &want);
	ck_assert_msg(got.st_mode == want.st_mode, "%s: mode %o want %o",
		      rel, got.st_mode, want.st_mode);
	ck_assert_int_eq(got.st_size, want.st_size);
	ck_assert_int_eq(got.st_ino, want.st_ino);
	ck_assert_int_eq(got.st_mtim.tv_sec, want.st_mtim.tv_sec);
	ck_assert_int_eq(got.st_mtim.tv_nsec, want.st_mtim.tv_nsec);
}

START_TEST(test_getattr)
{
	struct pf_backend *be;
	struct stat st;

	make_tree();
	be = new_backend(NULL);

	ck_assert_int_eq(be->ops->getattr(be, "", &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(be->ops->getattr(be, "plain.txt", &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, 13);
	ck_assert_int_eq(be->ops->getattr(be, "empty", &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, 0);
	/* lstat semantics: the link itself, its size the target's length */
	ck_assert_int_eq(be->ops->getattr(be, "link", &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, (off_t)strlen("plain.txt"));
	ck_assert_int_eq(be->ops->getattr(be, "dir/sub/deep.bin", &st), 0);
	ck_assert_int_eq(st.st_size, DEEP_SIZE);
	ck_assert_int_eq(be->ops->getattr(be, "dir/emptydir", &st), 0);
	ck_assert(S_ISDIR(st.st_mode));

	check_attr(be, "plain.txt");
	check_attr(be, "link");
	check_attr(be, SPACE_NAME);
	check_attr(be, UTF8_NAME);
	check_attr(be, "...");
	check_attr(be, "..x");
	check_attr(be, "dir");
	check_attr(be, "dir/sub");
	check_attr(be, "dir/sub/deep.bin");

	ck_assert_int_eq(be->ops->getattr(be, "missing", &st), -ENOENT);
	ck_assert_int_eq(be->ops->getattr(be, "dir/missing", &st), -ENOENT);
	ck_assert_int_eq(be->ops->getattr(be, "plain.txt/x", &st), -ENOTDIR);
	/* nothing outside the root */
	ck_assert_int_eq(be->ops->getattr(be, "/etc", &st), -EINVAL);
	ck_assert_int_eq(be->ops->getattr(be, "..", &st), -EINVAL);
	ck_assert_int_eq(be->ops->getattr(be, "../x", &st), -EINVAL);
	ck_assert_int_eq(be->ops->getattr(be, "dir/..", &st), -EINVAL);
	ck_assert_int_eq(be->ops->getattr(be, "dir/../plain.txt", &st),
			 -EINVAL);
	be->ops->destroy(be);
}
END_TEST

#define MAX_LISTED 32

struct listing {
	unsigned n;
	unsigned stop_after;	/* 0: never stop */
	char *names[MAX_LISTED];
	struct stat st[MAX_LISTED];
};

static int collect(void *arg, const char *name, const struct stat *st)
{
	struct listing *l = arg;

	ck_assert_uint_lt(l->n, MAX_LISTED);
	l->names[l->n] = strdup(name);
	ck_assert_ptr_nonnull(l->names[l->n]);
	l->st[l->n] = *st;
	l->n++;
	return l->stop_after && l->n >= l->stop_after;
}

static void listing_free(struct listing *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->names[i]);
	memset(l, 0, sizeof(*l));
}

/* Checks that @l holds exactly @names (in any order), with lstat attrs. */
static void listing_check(struct listing *l, const char *dir,
			  const char *const *names, unsigned n)
{
	ck_assert_uint_eq(l->n, n);
	for (unsigned i = 0; i < n; i++) {
		char rel[PATH_MAX];
		struct stat want;
		unsigned j;

		for (j = 0; j < l->n; j++)
			if (strcmp(l->names[j], names[i]) == 0)
				break;
		ck_assert_msg(j < l->n, "%s/%s not listed", dir, names[i]);
		snprintf(rel, sizeof(rel), "%s%s%s", dir, dir[0] ? "/" : "",
			 names[i]);
		lstat_rel(rel, &want);
		ck_assert_msg(l->st[j].st_mode == want.st_mode,
			      "%s: mode %o want %o", rel, l->st[j].st_mode,
			      want.st_mode);
		ck_assert_int_eq(l->st[j].st_size, want.st_size);
		ck_assert_int_eq(l->st[j].st_mtim.tv_sec,
				 want.st_mtim.tv_sec);
		ck_assert_int_eq(l->st[j].st_mtim.tv_nsec,
				 want.st_mtim.tv_nsec);
	}
}

START_TEST(test_readdir)
{
	static const char *const dir_names[] = { "emptydir", "sub" };
	static const char *const sub_names[] = { "deep.bin" };
	struct listing l = { 0 };
	struct pf_backend *be;

	make_tree();
	be = new_backend(NULL);

	ck_assert_int_eq(be->ops->readdir(be, "", collect, &l), 0);
	listing_check(&l, "", root_names, NROOT);
	listing_free(&l);

	ck_assert_int_eq(be->ops->readdir(be, "dir", collect, &l), 0);
	listing_check(&l, "dir", dir_names, 2);
	listing_free(&l);

	ck_assert_int_eq(be->ops->readdir(be, "dir/sub", collect, &l), 0);
	listing_check(&l, "dir/sub", sub_names, 1);
	ck_assert_int_eq(l.st[0].st_size, DEEP_SIZE);
	listing_free(&l);

	ck_assert_int_eq(be->ops->readdir(be, "dir/emptydir", collect, &l),
			 0);
	ck_assert_uint_eq(l.n, 0);

	/* a non-zero return stops the listing at once */
	l.stop_after = 2;
	ck_assert_int_eq(be->ops->readdir(be, "", collect, &l), 0);
	ck_assert_uint_eq(l.n, 2);
	listing_free(&l);

	ck_assert_int_eq(be->ops->readdir(be, "plain.txt", collect, &l),
			 -ENOTDIR);
	ck_assert_int_eq(be->ops->readdir(be, "missing", collect, &l),
			 -ENOENT);
	ck_assert_int_eq(be->ops->readdir(be, "..", collect, &l), -EINVAL);
	ck_assert_int_eq(be->ops->readdir(be, "/", collect, &l), -EINVAL);
	ck_assert_uint_eq(l.n, 0);
	be->ops->destroy(be);
}
END_TEST

START_TEST(test_readlink)
{
	char target[201];
	char buf[256];
	struct pf_backend *be;

	make_tree();
	memset(target, 'T', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	make_link(target, "dangling");
	make_link("dir/sub/deep.bin", "dir/sub/" SPACE_NAME " link");
	be = new_backend(NULL);

	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(be->ops->readlink(be, "link", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "plain.txt");
	/* exactly room for the target and its NUL */
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(be->ops->readlink(be, "link", buf, 10), 0);
	ck_assert_str_eq(buf, "plain.txt");
	ck_assert_int_eq(be->ops->readlink(be, "link", buf, 9),
			 -ENAMETOOLONG);
	ck_assert_int_eq(be->ops->readlink(be, "link", buf, 0),
			 -ENAMETOOLONG);

	ck_assert_int_eq(be->ops->readlink(be, "dangling", buf, sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, target);
	ck_assert_int_eq(be->ops->readlink(be, "dangling", buf, 200),
			 -ENAMETOOLONG);
	ck_assert_int_eq(be->ops->readlink(be, "dir/sub/" SPACE_NAME " link",
					   buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "dir/sub/deep.bin");

	ck_assert_int_eq(be->ops->readlink(be, "plain.txt", buf, sizeof(buf)),
			 -EINVAL);
	ck_assert_int_eq(be->ops->readlink(be, "missing", buf, sizeof(buf)),
			 -ENOENT);
	ck_assert_int_eq(be->ops->readlink(be, "../link", buf, sizeof(buf)),
			 -EINVAL);
	be->ops->destroy(be);
}
END_TEST

START_TEST(test_statfs)
{
	struct pf_backend *be = new_backend(NULL);
	struct statvfs got;
	struct statvfs want;

	ck_assert_int_eq(be->ops->statfs(be, &got), 0);
	ck_assert_int_eq(statvfs(tmpdir, &want), 0);
	ck_assert_uint_eq(got.f_fsid, want.f_fsid);
	ck_assert_uint_eq(got.f_bsize, want.f_bsize);
	ck_assert_uint_eq(got.f_frsize, want.f_frsize);
	ck_assert_uint_eq(got.f_blocks, want.f_blocks);
	ck_assert_uint_eq(got.f_namemax, want.f_namemax);
	be->ops->destroy(be);
}
END_TEST

START_TEST(test_open)
{
	struct pf_bfile *files[200];
	struct pf_bfile *f = (struct pf_bfile *)&f;
	struct pf_backend *be;
	char path[PATH_MAX];
	struct stat want;
	struct stat st;
	unsigned fds;

	make_tree();
	path_of(path, sizeof(path), "fifo");
	ck_assert_int_eq(mkfifo(path, 0644), 0);
	be = new_backend(NULL);
	fds = count_fds();

	/* open pins the size and mtime of the file */
	ck_assert_int_eq(be->ops->open(be, "dir/sub/deep.bin", &f, &st), 0);
	ck_assert_ptr_nonnull(f);
	lstat_rel("dir/sub/deep.bin", &want);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, DEEP_SIZE);
	ck_assert_int_eq(st.st_ino, want.st_ino);
	ck_assert_int_eq(st.st_mtim.tv_sec, want.st_mtim.tv_sec);
	ck_assert_int_eq(st.st_mtim.tv_nsec, want.st_mtim.tv_nsec);
	be->ops->close(be, f);

	ck_assert_int_eq(be->ops->open(be, UTF8_NAME, &f, &st), 0);
	ck_assert_int_eq(st.st_size, 200);
	be->ops->close(be, f);
	ck_assert_int_eq(be->ops->open(be, "empty", &f, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	be->ops->close(be, f);

	f = (struct pf_bfile *)&f;
	ck_assert_int_eq(be->ops->open(be, "missing", &f, &st), -ENOENT);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(be->ops->open(be, "dir", &f, &st), -EISDIR);
	ck_assert_int_eq(be->ops->open(be, "", &f, &st), -EISDIR);
	/* must neither block waiting for a writer nor succeed */
	ck_assert_int_eq(be->ops->open(be, "fifo", &f, &st), -EINVAL);
	ck_assert_int_eq(be->ops->open(be, "../plain.txt", &f, &st), -EINVAL);
	ck_assert_int_eq(be->ops->open(be, "/etc/passwd", &f, &st), -EINVAL);
	ck_assert_ptr_null(f);

	/* many at once, every one its own descriptor, all freed */
	for (unsigned i = 0; i < 200; i++) {
		ck_assert_int_eq(be->ops->open(be, "plain.txt", &files[i], &st),
				 0);
		ck_assert_int_eq(st.st_size, 13);
	}
	ck_assert_uint_eq(count_fds(), fds + 200);
	for (unsigned i = 0; i < 200; i++)
		be->ops->close(be, files[i]);
	/* failed opens leaked nothing either */
	ck_assert_uint_eq(count_fds(), fds);
	be->ops->destroy(be);
}
END_TEST

/* ------------------------------------------------------------------ */
/* reads, once per engine */

START_TEST(test_engine)
{
	const char *want = engines[_i].uring && uring_usable() ? "io_uring"
							       : "pread";
	unsigned fds = count_fds();
	struct pf_backend *be = engine_backend(_i);

	ck_assert_str_eq(pf_posix_backend_engine(be), want);
	ck_assert_uint_gt(count_fds(), fds);
	be->ops->destroy(be);
	ck_assert_uint_eq(count_fds(), fds);
}
END_TEST

START_TEST(test_read_exact)
{
	const uint64_t size = (1u << 20) + 123;
	static const size_t segs[][4] = {
		{ 4096, 0, 0, 0 },
		{ 65536, 0, 0, 0 },
		{ 1, 4095, 65536, 3 },
		{ 1000, 0, 1000, 0 },
	};
	static const int nsegs[] = { 1, 1, 4, 3 };
	struct pf_backend *be = engine_backend(_i);
	struct pf_bfile *f;
	struct stat st;
	size_t whole;
	int fd;

	write_file("data.bin", size, 7);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)size);

	/* the whole file in one read, asking for more than there is */
	whole = size + 4096;
	ck_assert_int_eq(read_one(be, f, fd, size, 0, &whole, 1),
			 (int64_t)size);
	/* every shape at unaligned offsets all over the file */
	for (unsigned s = 0; s < 4; s++)
		for (uint64_t off = 0; off < size; off += 98765)
			read_one(be, f, fd, size, off, segs[s], nsegs[s]);

	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST

START_TEST(test_read_eof)
{
	const uint64_t size = 10000;
	struct pf_backend *be = engine_backend(_i);
	struct pf_bfile *empty;
	struct pf_bfile *f;
	size_t seg[3];
	struct stat st;
	int fd;

	write_file("data.bin", size, 8);
	write_file("empty", 0, 0);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	ck_assert_int_eq(be->ops->open(be, "empty", &empty, &st), 0);

	/* straddling the end: a short count, the rest untouched */
	seg[0] = 4096;
	ck_assert_int_eq(read_one(be, f, fd, size, size - 100, seg, 1), 100);
	/* the end falls inside the second segment, then the third */
	seg[0] = 50;
	seg[1] = 100;
	seg[2] = 100;
	ck_assert_int_eq(read_one(be, f, fd, size, size - 120, seg, 3), 120);
	ck_assert_int_eq(read_one(be, f, fd, size, size - 200, seg, 3), 200);
	ck_assert_int_eq(read_one(be, f, fd, size, size - 250, seg, 3), 250);
	/* ends exactly at the end */
	seg[0] = 100;
	ck_assert_int_eq(read_one(be, f, fd, size, size - 100, seg, 1), 100);
	/* at and past the end: 0 */
	seg[0] = 4096;
	ck_assert_int_eq(read_one(be, f, fd, size, size, seg, 1), 0);
	ck_assert_int_eq(read_one(be, f, fd, size, size + 1, seg, 1), 0);
	ck_assert_int_eq(read_one(be, f, fd, size, 1ull << 40, seg, 1), 0);
	ck_assert_int_eq(read_one(be, empty, fd, 0, 0, seg, 1), 0);
	/* an empty iovec reads nothing */
	seg[0] = 0;
	ck_assert_int_eq(read_one(be, f, fd, size, 10, seg, 1), 0);

	be->ops->close(be, empty);
	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST

#define MANY 256

START_TEST(test_read_many)
{
	const uint64_t size = (4u << 20) + 7;
	struct pf_backend *be = engine_backend(_i);
	uint64_t seed = 0x1234567 + (uint64_t)_i;
	struct tbio *t;
	struct pf_bfile *f;
	struct waiter w;
	struct stat st;
	int fd;

	write_file("data.bin", size, 9);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	t = calloc(MANY, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	waiter_init(&w);

	/* all in flight at once: more than the queue depth */
	for (unsigned i = 0; i < MANY; i++)
		tbio_random(&t[i], f, &w, size, 128 << 10, &seed);
	for (unsigned i = 0; i < MANY; i++)
		ck_assert_int_eq(pf_backend_submit(be, &t[i].bio), 0);
	waiter_wait(&w, MANY);
	for (unsigned i = 0; i < MANY; i++)
		tbio_check(&t[i], fd, size, i);
	ck_assert_uint_eq(waiter_count(&w), MANY);

	for (unsigned i = 0; i < MANY; i++)
		tbio_fini(&t[i]);
	free(t);
	waiter_fini(&w);
	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST

#define SUBMITTERS 4

struct submitter {
	struct pf_backend *be;
	struct tbio *t;
	unsigned n;
	int err;
};

static void *submit_all(void *arg)
{
	struct submitter *s = arg;

	for (unsigned i = 0; i < s->n; i++) {
		int ret = pf_backend_submit(s->be, &s->t[i].bio);

		if (ret < 0 && !s->err)
			s->err = ret;
	}
	return NULL;
}

START_TEST(test_read_threads)
{
	const uint64_t size = (2u << 20) + 1;
	struct pf_backend *be = engine_backend(_i);
	struct submitter sub[SUBMITTERS];
	pthread_t th[SUBMITTERS];
	uint64_t seed = 0xfeed + (uint64_t)_i;
	struct pf_bfile *f;
	struct waiter w;
	struct tbio *t;
	struct stat st;
	int fd;

	write_file("data.bin", size, 10);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	t = calloc(MANY, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	waiter_init(&w);
	for (unsigned i = 0; i < MANY; i++)
		tbio_random(&t[i], f, &w, size, 64 << 10, &seed);

	/* submitters race each other and the engine threads */
	for (unsigned i = 0; i < SUBMITTERS; i++) {
		sub[i].be = be;
		sub[i].t = t + i * (MANY / SUBMITTERS);
		sub[i].n = MANY / SUBMITTERS;
		sub[i].err = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, submit_all,
						&sub[i]), 0);
	}
	for (unsigned i = 0; i < SUBMITTERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(sub[i].err, 0);
	}
	waiter_wait(&w, MANY);
	for (unsigned i = 0; i < MANY; i++)
		tbio_check(&t[i], fd, size, i);

	for (unsigned i = 0; i < MANY; i++)
		tbio_fini(&t[i]);
	free(t);
	waiter_fini(&w);
	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST

/* A chain of reads, each submitted by the previous one's done(). */
struct chain {
	struct pf_bio bio;
	struct iovec iov;
	struct pf_backend *be;
	unsigned char *buf;
	uint64_t size;
	uint64_t piece;
	int64_t bad;		/* first wrong result, 0 if none */
	struct waiter w;
};

static void chain_done(struct pf_bio *bio, int64_t res)
{
	struct chain *c = (struct chain *)bio;
	int64_t want = expect_len(c->size, bio->off, c->piece);
	int ret;

	if (res != want && !c->bad)
		c->bad = res < 0 ? res : INT64_MAX;
	if (res <= 0 || c->bad)
		goto finished;
	/* from the backend's own thread, with the bio just completed */
	bio->off += (uint64_t)res;
	c->iov.iov_base = c->buf + bio->off;
	ret = pf_backend_submit(c->be, bio);
	if (ret < 0) {
		c->bad = ret;
		goto finished;
	}
	return;
finished:
	pthread_mutex_lock(&c->w.lock);
	c->w.done = 1;
	pthread_cond_broadcast(&c->w.cond);
	pthread_mutex_unlock(&c->w.lock);
}

START_TEST(test_read_chain)
{
	const uint64_t size = (1u << 20) + 4321;
	struct chain c = { 0 };
	struct pf_bfile *f;
	struct stat st;
	unsigned char *ref;
	int fd;

	c.be = engine_backend(_i);
	write_file("data.bin", size, 11);
	fd = open_plain("data.bin");
	ck_assert_int_eq(c.be->ops->open(c.be, "data.bin", &f, &st), 0);
	c.size = size;
	c.piece = 8192;
	c.buf = malloc(size + c.piece);
	ref = malloc(size);
	ck_assert_ptr_nonnull(c.buf);
	ck_assert_ptr_nonnull(ref);
	memset(c.buf, SENTINEL, size + c.piece);
	waiter_init(&c.w);
	c.iov.iov_base = c.buf;
	c.iov.iov_len = c.piece;
	c.bio.file = f;
	c.bio.iov = &c.iov;
	c.bio.iovcnt = 1;
	c.bio.done = chain_done;

	ck_assert_int_eq(pf_backend_submit(c.be, &c.bio), 0);
	waiter_wait(&c.w, 1);
	ck_assert_int_eq(c.bad, 0);
	ck_assert_uint_eq(c.bio.off, size);
	ck_assert_int_eq(pread(fd, ref, size, 0), (ssize_t)size);
	ck_assert(memcmp(c.buf, ref, size) == 0);
	ck_assert_uint_eq(c.buf[size], SENTINEL);

	free(ref);
	free(c.buf);
	waiter_fini(&c.w);
	c.be->ops->close(c.be, f);
	close(fd);
	c.be->ops->destroy(c.be);
}
END_TEST

/* How often @needle occurs in @log. */
static unsigned count_in(const char *log, const char *needle)
{
	const char *p;
	unsigned n = 0;

	for (p = strstr(log, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

START_TEST(test_changed)
{
	const uint64_t size = 300000;
	struct pf_backend *be = engine_backend(_i);
	struct pf_bfile *fm;
	struct pf_bfile *fs;
	struct pf_bfile *fk;
	struct timespec ts[2];
	char path[PATH_MAX];
	char log[4096];
	struct stat stm;
	struct stat sts;
	struct stat st;
	int logfd;
	int saved;
	ssize_t n;
	int fd;

	write_file("mtime.bin", size, 12);
	write_file("size.bin", size, 13);
	write_file("kept.bin", size, 14);
	ck_assert_int_eq(be->ops->open(be, "mtime.bin", &fm, &stm), 0);
	ck_assert_int_eq(be->ops->open(be, "size.bin", &fs, &sts), 0);
	ck_assert_int_eq(be->ops->open(be, "kept.bin", &fk, &st), 0);

	/* catch the warnings */
	path_of(path, sizeof(path), "log");
	logfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(logfd, 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(logfd, STDERR_FILENO), 0);

	/* rewritten in place, same size, new mtime */
	path_of(path, sizeof(path), "mtime.bin");
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "XYZ", 3, 1000), 3);
	close(fd);
	ts[0] = stm.st_atim;
	ts[1] = stm.st_mtim;
	ts[1].tv_sec += 10;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	/* grown, mtime put back as it was */
	path_of(path, sizeof(path), "size.bin");
	fd = open(path, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "more", 4), 4);
	close(fd);
	ts[0] = sts.st_atim;
	ts[1] = sts.st_mtim;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);

	ck_assert_int_eq(read_err(be, fm, 0, 4096), -EIO);
	ck_assert_int_eq(read_err(be, fm, size - 10, 4096), -EIO);
	ck_assert_int_eq(read_err(be, fm, size, 4096), -EIO);
	ck_assert_int_eq(read_err(be, fs, 0, 4096), -EIO);
	ck_assert_int_eq(read_err(be, fs, size, 4096), -EIO);
	/* untouched files still read fine */
	ck_assert_int_eq(read_err(be, fk, 0, 4096), 4096);
	ck_assert_int_eq(read_err(be, fk, size - 10, 4096), 10);

	/* shrunk below what is read */
	path_of(path, sizeof(path), "kept.bin");
	ck_assert_int_eq(truncate(path, 1000), 0);
	ck_assert_int_eq(read_err(be, fk, 0, 4096), -EIO);
	ck_assert_int_eq(read_err(be, fk, 0, 100), -EIO);

	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	n = pread(logfd, log, sizeof(log) - 1, 0);
	close(logfd);
	ck_assert_int_ge(n, 0);
	log[n] = '\0';
	/* once per file, however many reads failed */
	ck_assert_uint_eq(count_in(log, "changed during read; returning EIO"),
			  3);
	ck_assert_uint_eq(count_in(log, "mtime.bin changed during read"), 1);
	ck_assert_uint_eq(count_in(log, "size.bin changed during read"), 1);
	ck_assert_uint_eq(count_in(log, "kept.bin changed during read"), 1);

	be->ops->close(be, fm);
	be->ops->close(be, fs);
	be->ops->close(be, fk);
	be->ops->destroy(be);
}
END_TEST

/*
 * The only short reads a regular file gives without fault injection: a
 * buffer that stops being writable part way.  The kernel copies what it
 * can and returns a short count; the backend must resubmit the rest (which
 * then faults) instead of reporting the short count as the end of the file.
 */
START_TEST(test_short_read_resubmitted)
{
	const uint64_t size = 65536;
	long page = sysconf(_SC_PAGESIZE);
	struct pf_backend *be;
	unsigned char *map;
	unsigned char *ref;
	struct pf_bfile *f;
	struct waiter w;
	struct iovec iov[2];
	struct tbio t;
	struct stat st;
	int fd;

	/* valgrind rightly flags the preadv() of a part unmapped buffer */
	if (RUNNING_ON_VALGRIND && !engines[_i].uring)
		return;
	be = engine_backend(_i);
	write_file("data.bin", size, 17);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	ref = malloc(size);
	ck_assert_ptr_nonnull(ref);
	ck_assert_int_eq(pread(fd, ref, size, 0), (ssize_t)size);
	map = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map + 2 * page, (size_t)page, PROT_NONE),
			 0);
	waiter_init(&w);

	/* one segment, its last 100 bytes in the protected page */
	memset(map, SENTINEL, (size_t)page * 2);
	memset(&t, 0, sizeof(t));
	t.w = &w;
	iov[0].iov_base = map + 100;
	iov[0].iov_len = (size_t)page * 2;
	t.bio.file = f;
	t.bio.off = 1000;
	t.bio.iov = iov;
	t.bio.iovcnt = 1;
	t.bio.done = tbio_done;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), 0);
	waiter_wait(&w, 1);
	ck_assert_int_eq(atomic_load(&t.calls), 1);
	ck_assert_int_eq(t.res, -EFAULT);
	/* the first, short read did land where it belongs */
	ck_assert(memcmp(map + 100, ref + 1000, (size_t)page * 2 - 100) == 0);

	/* two segments, the second running into the protected page */
	memset(map, SENTINEL, (size_t)page * 2);
	iov[0].iov_base = map;
	iov[0].iov_len = 3000;
	iov[1].iov_base = map + page;
	iov[1].iov_len = (size_t)page + 10;
	t.bio.off = 5;
	t.bio.iovcnt = 2;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), 0);
	waiter_wait(&w, 2);
	ck_assert_int_eq(atomic_load(&t.calls), 2);
	ck_assert_int_eq(t.res, -EFAULT);
	ck_assert(memcmp(map, ref + 5, 3000) == 0);
	ck_assert(memcmp(map + page, ref + 3005, (size_t)page) == 0);

	waiter_fini(&w);
	munmap(map, (size_t)page * 3);
	free(ref);
	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST

START_TEST(test_submit_invalid)
{
	struct pf_backend *be = engine_backend(_i);
	struct pf_bfile *f;
	struct waiter w;
	struct tbio t;
	size_t len = 100;
	struct stat st;

	write_file("data.bin", 1000, 15);
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	waiter_init(&w);
	tbio_init(&t, f, &w, 0, &len, 1);

	t.bio.iovcnt = 0;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), -EINVAL);
	t.bio.iovcnt = IOV_MAX + 1;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), -EINVAL);
	t.bio.iovcnt = 1;
	t.bio.off = UINT64_MAX - 10;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), -EINVAL);
	t.bio.off = 0;
	t.bio.done = NULL;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), -EINVAL);
	t.bio.done = tbio_done;
	t.bio.file = NULL;
	ck_assert_int_eq(pf_backend_submit(be, &t.bio), -EINVAL);
	t.bio.file = f;
	/* refused bios are never completed */
	ck_assert_int_eq(atomic_load(&t.calls), 0);

	ck_assert_int_eq(pf_backend_submit(be, &t.bio), 0);
	waiter_wait(&w, 1);
	ck_assert_int_eq(t.res, 100);

	tbio_fini(&t);
	waiter_fini(&w);
	be->ops->close(be, f);
	be->ops->destroy(be);
}
END_TEST

/*
 * destroy() with bios queued and in flight.  The file is closed by the
 * done() of whichever holds the last reference: the test's or a bio's.
 */
struct refd_file {
	struct pf_backend *be;
	struct pf_bfile *f;
	atomic_uint refs;
};

struct dbio {
	struct tbio t;		/* first */
	struct refd_file *rf;
};

static void refd_put(struct refd_file *rf)
{
	if (atomic_fetch_sub(&rf->refs, 1) == 1)
		rf->be->ops->close(rf->be, rf->f);
}

static void dbio_done(struct pf_bio *bio, int64_t res)
{
	struct dbio *d = (struct dbio *)bio;
	struct refd_file *rf = d->rf;

	tbio_done(bio, res);
	refd_put(rf);
}

START_TEST(test_destroy_inflight)
{
	const uint64_t size = 8u << 20;
	struct pf_backend *be;
	uint64_t seed = 0xd00d + (uint64_t)_i;
	struct refd_file rf;
	struct dbio *d;
	struct waiter w;
	struct stat st;
	unsigned fds;
	int fd;

	write_file("data.bin", size, 16);
	fd = open_plain("data.bin");
	fds = count_fds();
	be = engine_backend(_i);
	rf.be = be;
	ck_assert_int_eq(be->ops->open(be, "data.bin", &rf.f, &st), 0);
	atomic_init(&rf.refs, 1);
	d = calloc(MANY, sizeof(*d));
	ck_assert_ptr_nonnull(d);
	waiter_init(&w);
	for (unsigned i = 0; i < MANY; i++) {
		tbio_random(&d[i].t, rf.f, &w, size, 256 << 10, &seed);
		d[i].t.bio.done = dbio_done;
		d[i].rf = &rf;
	}
	for (unsigned i = 0; i < MANY; i++) {
		atomic_fetch_add(&rf.refs, 1);
		ck_assert_int_eq(pf_backend_submit(be, &d[i].t.bio), 0);
	}
	refd_put(&rf);
	be->ops->destroy(be);

	/* every bio completed before destroy() returned, exactly once */
	ck_assert_uint_eq(waiter_count(&w), MANY);
	ck_assert_uint_eq(atomic_load(&rf.refs), 0);
	ck_assert_uint_eq(count_fds(), fds);
	for (unsigned i = 0; i < MANY; i++) {
		/* how many were cancelled depends on timing */
		if (d[i].t.res == -ECANCELED)
			ck_assert_int_eq(atomic_load(&d[i].t.calls), 1);
		else
			tbio_check(&d[i].t, fd, size, i);
		tbio_fini(&d[i].t);
	}
	free(d);
	waiter_fini(&w);
	close(fd);
}
END_TEST

/* Makes system call @nr fail with @err in this process, for good. */
static void deny_syscall(unsigned nr, unsigned err)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog),
			 0);
}

/* Makes io_uring_setup() fail with ENOSYS in this process, for good. */
static void deny_io_uring(void)
{
	deny_syscall(__NR_io_uring_setup, ENOSYS);
}

/* io_uring refused by the system: the pread pool takes over, and says so. */
START_TEST(test_uring_unavailable)
{
	const char *fork_mode = getenv("CK_FORK");
	const uint64_t size = 100000;
	struct pf_backend *be;
	struct pf_bfile *f;
	char path[PATH_MAX];
	char log[4096];
	size_t len = 70000;
	struct stat st;
	int logfd;
	int saved;
	ssize_t n;
	int fd;

	/* the filter cannot be undone: only in a test's own process */
	if (fork_mode && strcmp(fork_mode, "no") == 0)
		return;
	deny_io_uring();
	ck_assert(!uring_usable());

	path_of(path, sizeof(path), "log");
	logfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(logfd, 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(logfd, STDERR_FILENO), 0);
	be = new_backend(NULL);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	n = pread(logfd, log, sizeof(log) - 1, 0);
	close(logfd);
	ck_assert_int_ge(n, 0);
	log[n] = '\0';
	ck_assert_str_eq(log, "prefetchfs: io_uring unavailable (Function not "
			 "implemented): using 4 pread threads\n");
	ck_assert_str_eq(pf_posix_backend_engine(be), "pread");

	write_file("data.bin", size, 18);
	fd = open_plain("data.bin");
	ck_assert_int_eq(be->ops->open(be, "data.bin", &f, &st), 0);
	ck_assert_int_eq(read_one(be, f, fd, size, 12345, &len, 1), 70000);
	ck_assert_int_eq(read_one(be, f, fd, size, 40000, &len, 1), 60000);
	be->ops->close(be, f);
	close(fd);
	be->ops->destroy(be);
}
END_TEST


/* ------------------------------------------------------------------ */
/* confinement: nothing outside the root is ever resolved */

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define OUT_CANARY "OUTSIDE-CANARY root:x:0:0\n"
#define UP_CANARY "PARENT-CANARY root:x:0:0\n"
#define IN_BYTES "inside the source\n"

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	path_of(path, sizeof(path), rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * tmpdir holds the canaries (secret, outside/secret, outside/only-outside)
 * and the source, src/, whose symlinks lead out in every way.
 */
static void make_escapes(void)
{
	char path[PATH_MAX];

	put("secret", UP_CANARY);
	make_dir("outside");
	put("outside/secret", OUT_CANARY);
	put("outside/only-outside", OUT_CANARY);
	make_dir("src");
	make_dir("src/dir");
	put("src/dir/secret", IN_BYTES);
	make_dir("src/a");
	make_dir("src/a/b");
	put("src/a/b/passwd", IN_BYTES);
	make_link("../outside", "src/rel");
	path_of(path, sizeof(path), "outside");
	make_link(path, "src/abs");
	make_link("/etc", "src/etc");
	make_link("..", "src/up");
	make_link("../outside/secret", "src/fileout");
	make_link("dir", "src/inlink");
}

static struct pf_backend *new_backend_at(const char *rel)
{
	struct pf_backend *be = NULL;
	char root[PATH_MAX];

	path_of(root, sizeof(root), rel);
	ck_assert_int_eq(pf_posix_backend_new(root, NULL, &be), 0);
	ck_assert_ptr_nonnull(be);
	return be;
}

static int count_names(void *arg, const char *name, const struct stat *st)
{
	(void)name;
	(void)st;
	(*(unsigned *)arg)++;
	return 0;
}

/* Every way to reach @path through @be fails, and opens nothing. */
static void refused(struct pf_backend *be, const char *path)
{
	struct pf_bfile *f = (struct pf_bfile *)&f;
	unsigned listed = 0;
	struct stat st;
	char buf[256];
	int ret;

	ret = be->ops->open(be, path, &f, &st);
	ck_assert_msg(ret < 0, "open(%s) = %d: left the source", path, ret);
	ck_assert_ptr_null(f);
	ret = be->ops->getattr(be, path, &st);
	ck_assert_msg(ret < 0, "getattr(%s) = %d: left the source", path, ret);
	ret = be->ops->readdir(be, path, count_names, &listed);
	ck_assert_msg(ret < 0 && listed == 0,
		      "readdir(%s) = %d, %u names: left the source", path, ret,
		      listed);
	ret = be->ops->readlink(be, path, buf, sizeof(buf));
	ck_assert_msg(ret < 0, "readlink(%s) = %d: left the source", path,
		      ret);
}

/* @path is a symlink of the source, shown as one: lstat, its text. */
static void is_link(struct pf_backend *be, const char *path,
		    const char *target)
{
	struct pf_bfile *f = (struct pf_bfile *)&f;
	struct stat st;
	char buf[PATH_MAX];

	ck_assert_int_eq(be->ops->getattr(be, path, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(st.st_size, (off_t)strlen(target));
	ck_assert_int_eq(be->ops->readlink(be, path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, target);
	/* and never opened as what it points to */
	ck_assert_int_eq(be->ops->open(be, path, &f, &st), -ELOOP);
	ck_assert_ptr_null(f);
}

/*
 * The loop: 0 with openat2(), 1 and 2 with openat2() refused by a seccomp
 * filter (ENOSYS as an old kernel, EPERM as some container runtimes): the
 * component walk.
 */
static const unsigned openat2_denied[] = { 0, ENOSYS, EPERM };
#define NRESOLVE (sizeof(openat2_denied) / sizeof(openat2_denied[0]))

static bool deny_openat2(int mode)
{
	const char *fork_mode = getenv("CK_FORK");

	if (!openat2_denied[mode])
		return true;
	/* the filter cannot be undone: only in a test's own process */
	if (fork_mode && strcmp(fork_mode, "no") == 0)
		return false;
	deny_syscall(SYS_openat2, openat2_denied[mode]);
	errno = 0;
	ck_assert_int_lt(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0), 0);
	ck_assert_int_eq(errno, (int)openat2_denied[mode]);
	return true;
}

START_TEST(test_confined)
{
	static const char *const escapes[] = {
		"rel/secret", "abs/secret", "etc/passwd", "up/secret",
		"rel/only-outside", "rel/", "abs/", "etc/", "up/",
		"up/src/dir/secret", "rel/../secret", "dir/../../secret",
	};
	struct pf_bfile *f = (struct pf_bfile *)&f;
	struct pf_backend *be;
	struct stat want;
	struct stat st;
	unsigned fds;
	int ret;

	if (!deny_openat2(_i))
		return;
	make_escapes();
	be = new_backend_at("src");
	fds = count_fds();

	/* the symlinks are there, as symlinks */
	is_link(be, "rel", "../outside");
	is_link(be, "etc", "/etc");
	is_link(be, "up", "..");
	is_link(be, "fileout", "../outside/secret");
	is_link(be, "inlink", "dir");
	for (unsigned i = 0; i < sizeof(escapes) / sizeof(escapes[0]); i++)
		refused(be, escapes[i]);

	/*
	 * A symlink that stays inside, in the middle of a path: openat2()
	 * follows it (harmless), the walk follows no symlink at all.
	 */
	ret = be->ops->open(be, "inlink/secret", &f, &st);
	if (openat2_denied[_i]) {
		ck_assert_int_eq(ret, -ENOTDIR);
	} else {
		ck_assert_int_eq(ret, 0);
		lstat_rel("src/dir/secret", &want);
		ck_assert_int_eq(st.st_ino, want.st_ino);
		be->ops->close(be, f);
	}
	ck_assert_uint_eq(count_fds(), fds);
	be->ops->destroy(be);
}
END_TEST

/*
 * The race the checks above stand for: a directory of the source is
 * looked up, then replaced by a symlink to outside; the calls that follow
 * with its path stay inside (and fail).
 */
START_TEST(test_swapped_dir)
{
	static const struct {
		const char *dir;	/* replaced */
		const char *target;	/* by a symlink to this */
		const char *name;	/* a name in both */
	} swaps[] = {
		{ "dir", "../outside", "secret" },
		{ "dir", "/etc", "passwd" },
		{ "dir", "..", "secret" },
		{ "a/b", "/etc", "passwd" },
		{ "a", "../outside", "secret" },
	};
	struct pf_backend *be;
	unsigned fds;

	if (!deny_openat2(_i))
		return;
	make_escapes();
	put("src/dir/passwd", IN_BYTES);
	put("src/a/secret", IN_BYTES);
	be = new_backend_at("src");
	fds = count_fds();

	for (unsigned i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++) {
		struct pf_bfile *f = (struct pf_bfile *)&f;
		char path[PATH_MAX];
		char from[PATH_MAX];
		char to[PATH_MAX];
		char rel[PATH_MAX];
		unsigned listed = 0;
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", swaps[i].dir,
			 swaps[i].name);
		/* looked up and opened while it is a directory */
		ck_assert_int_eq(be->ops->getattr(be, swaps[i].dir, &st), 0);
		ck_assert(S_ISDIR(st.st_mode));
		ck_assert_int_eq(be->ops->open(be, path, &f, &st), 0);
		ck_assert_int_eq(st.st_size, (off_t)strlen(IN_BYTES));
		be->ops->close(be, f);

		snprintf(rel, sizeof(rel), "src/%s", swaps[i].dir);
		path_of(from, sizeof(from), rel);
		snprintf(rel, sizeof(rel), "src/%s.old", swaps[i].dir);
		path_of(to, sizeof(to), rel);
		ck_assert_int_eq(rename(from, to), 0);
		ck_assert_int_eq(symlink(swaps[i].target, from), 0);

		f = (struct pf_bfile *)&f;
		ck_assert_int_lt(be->ops->open(be, path, &f, &st), 0);
		ck_assert_ptr_null(f);
		ck_assert_int_lt(be->ops->getattr(be, path, &st), 0);
		snprintf(path, sizeof(path), "%s/only-outside", swaps[i].dir);
		ck_assert_int_lt(be->ops->getattr(be, path, &st), 0);
		ck_assert_int_lt(be->ops->readdir(be, swaps[i].dir,
						  count_names, &listed), 0);
		ck_assert_uint_eq(listed, 0);
		snprintf(path, sizeof(path), "%s/", swaps[i].dir);
		ck_assert_int_lt(be->ops->readdir(be, path, count_names,
						  &listed), 0);
		ck_assert_uint_eq(listed, 0);
		/* the entry itself is the symlink now */
		is_link(be, swaps[i].dir, swaps[i].target);

		ck_assert_int_eq(unlink(from), 0);
		ck_assert_int_eq(rename(to, from), 0);
	}
	ck_assert_uint_eq(count_fds(), fds);
	be->ops->destroy(be);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *posix_suite(void)
{
	Suite *s = suite_create("posix_backend");
	TCase *tc;

	tc = tcase_create("metadata");
	tcase_add_unchecked_fixture(tc, case_setup, case_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_new_errors);
	tcase_add_test(tc, test_getattr);
	tcase_add_test(tc, test_readdir);
	tcase_add_test(tc, test_readlink);
	tcase_add_test(tc, test_statfs);
	tcase_add_test(tc, test_open);
	suite_add_tcase(s, tc);

	tc = tcase_create("reads");
	tcase_add_unchecked_fixture(tc, case_setup, case_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_engine, 0, NENGINES);
	tcase_add_loop_test(tc, test_read_exact, 0, NENGINES);
	tcase_add_loop_test(tc, test_read_eof, 0, NENGINES);
	tcase_add_loop_test(tc, test_read_many, 0, NENGINES);
	tcase_add_loop_test(tc, test_read_threads, 0, NENGINES);
	tcase_add_loop_test(tc, test_read_chain, 0, NENGINES);
	tcase_add_loop_test(tc, test_changed, 0, NENGINES);
	tcase_add_loop_test(tc, test_short_read_resubmitted, 0, NENGINES);
	tcase_add_loop_test(tc, test_submit_invalid, 0, NENGINES);
	tcase_add_loop_test(tc, test_destroy_inflight, 0, NENGINES);
	tcase_add_test(tc, test_uring_unavailable);
	suite_add_tcase(s, tc);

	tc = tcase_create("confinement");
	tcase_add_unchecked_fixture(tc, case_setup, case_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_confined, 0, NRESOLVE);
	tcase_add_loop_test(tc, test_swapped_dir, 0, NRESOLVE);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(posix_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
