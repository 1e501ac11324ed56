/*
 * inode.c - inode numbers of the mount and the backend paths they stand for.
 *
 * DESIGN: two chained hash tables over the same entries, one by number and
 * one by path, grown by doubling when the load passes one entry a bucket.
 * Numbers are handed out in increasing order and never reused while the
 * daemon runs, so a number the kernel still caches never names another
 * file.  The backend is called without the table lock held.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pf_hash.h"
#include "pf_inode.h"

#define FIRST_DYNAMIC_INO 16

struct pf_itable {
	struct pf_backend *be;
	struct pf_engine *e;
	pthread_mutex_t lock;
	struct pf_inode **by_ino;
	struct pf_inode **by_path;
	size_t nbuckets;	/* power of two */
	size_t count;
	uint64_t next_ino;
	struct pf_inode root;
};

static size_t hash_ino(uint64_t ino)
{
	ino *= 0x9E3779B97F4A7C15ull;
	return (size_t)(ino ^ (ino >> 32));
}

char *pf_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	size_t nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (!p)
		return NULL;
	if (dl) {
		memcpy(p, dir, dl);
		p[dl++] = '/';
	}
	memcpy(p + dl, name, nl + 1);
	return p;
}

int pf_itable_new(struct pf_backend *be, struct pf_engine *e,
		  struct pf_itable **out)
{
	struct pf_itable *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
	t->by_path = calloc(t->nbuckets, sizeof(*t->by_path));
	t->root.path = strdup("");
	if (!t->by_ino || !t->by_path || !t->root.path) {
		free(t->by_ino);
		free(t->by_path);
		free(t->root.path);
		free(t);
		return -ENOMEM;
	}
	t->be = be;
	t->e = e;
	t->next_ino = FIRST_DYNAMIC_INO;
	t->root.ino = PF_ROOT_INO;
	t->root.mode = S_IFDIR;
	t->root.nlookup = 1;
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return 0;
}

static void inode_free(struct pf_inode *in)
{
	if (in->efile)
		pf_efile_put(in->efile);
	free(in->path);
	free(in);
}

void pf_itable_free(struct pf_itable *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct pf_inode *in = t->by_ino[i];

		while (in) {
			struct pf_inode *next = in->next_ino;

			inode_free(in);
			in = next;
		}
	}
	if (t->root.efile)
		pf_efile_put(t->root.efile);
	free(t->root.path);
	free(t->by_ino);
	free(t->by_path);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct pf_inode *find_ino(struct pf_itable *t, uint64_t ino)
{
	struct pf_inode *in;

	if (ino == PF_ROOT_INO)
		return &t->root;
	in = t->by_ino[hash_ino(ino) & (t->nbuckets - 1)];
	while (in && in->ino != ino)
		in = in->next_ino;
	return in;
}

static struct pf_inode *find_path(struct pf_itable *t, const char *path)
{
	struct pf_inode *in = t->by_path[pf_hash_str(path) & (t->nbuckets - 1)];

	while (in && strcmp(in->path, path) != 0)
		in = in->next_path;
	return in;
}

static void insert(struct pf_itable *t, struct pf_inode *in)
{
	size_t hi = hash_ino(in->ino) & (t->nbuckets - 1);
	size_t hp = pf_hash_str(in->path) & (t->nbuckets - 1);

	in->next_ino = t->by_ino[hi];
	t->by_ino[hi] = in;
	in->next_path = t->by_path[hp];
	t->by_path[hp] = in;
}

/* Double the buckets; on allocation failure keep the longer chains. */
static void grow(struct pf_itable *t)
{
	size_t n = t->nbuckets * 2;
	struct pf_inode **bi = calloc(n, sizeof(*bi));
	struct pf_inode **bp = calloc(n, sizeof(*bp));
	struct pf_inode **old = t->by_ino;
	size_t oldn = t->nbuckets;

	if (!bi || !bp) {
		free(bi);
		free(bp);
		return;
	}
	free(t->by_path);
	t->by_ino = bi;
	t->by_path = bp;
	t->nbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		struct pf_inode *in = old[i];

		while (in) {
			struct pf_inode *next = in->next_ino;

			insert(t, in);
			in = next;
		}
	}
	free(old);
}

struct pf_inode *pf_itable_get(struct pf_itable *t, uint64_t ino)
{
	struct pf_inode *in;

	pthread_mutex_lock(&t->lock);
	in = find_ino(t, ino);
	pthread_mutex_unlock(&t->lock);
	return in;
}

int pf_itable_lookup(struct pf_itable *t, uint64_t parent, const char *name,
		     const struct stat *known, struct stat *st,
		     struct pf_inode **out)
{
	struct pf_inode *dir = pf_itable_get(t, parent);
	struct pf_inode *in;
	char *path;
	int ret;

	if (!dir)
		return -ENOENT;
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/'))
		return -EINVAL;
	path = pf_path_join(dir->path, name);
	if (!path)
		return -ENOMEM;
	if (known) {
		*st = *known;
	} else {
		ret = t->be->ops->getattr(t->be, path, st);
		if (ret < 0) {
			free(path);
			return ret;
		}
	}

	pthread_mutex_lock(&t->lock);
	in = find_path(t, path);
	if (in && (in->mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		/*
		 * The source replaced the entry with one of another type:
		 * give it a new number so cached state of the old one (an
		 * engine file, a directory listing) is never mixed in.
		 */
		size_t hp = pf_hash_str(path) & (t->nbuckets - 1);
		struct pf_inode **pp = &t->by_path[hp];

		while (*pp != in)
			pp = &(*pp)->next_path;
		*pp = in->next_path;
		in->next_path = NULL;	/* reachable by number only */
		in = NULL;
	}
	if (!in) {
		in = calloc(1, sizeof(*in));
		if (!in) {
			pthread_mutex_unlock(&t->lock);
			free(path);
			return -ENOMEM;
		}
		in->ino = t->next_ino++;
		in->path = path;
		path = NULL;
		in->mode = st->st_mode & S_IFMT;
		if (++t->count > t->nbuckets)
			grow(t);
		insert(t, in);
	}
	in->nlookup++;
	st->st_ino = in->ino;
	pthread_mutex_unlock(&t->lock);
	free(path);
	*out = in;
	return 0;
}

void pf_itable_forget(struct pf_itable *t, uint64_t ino, uint64_t n)
{
	struct pf_inode *in;
	struct pf_inode **pp;

	if (ino == PF_ROOT_INO || ino < FIRST_DYNAMIC_INO)
		return;
	pthread_mutex_lock(&t->lock);
	in = find_ino(t, ino);
	if (!in || in->nlookup > n) {
		if (in)
			in->nlookup -= n;
		pthread_mutex_unlock(&t->lock);
		return;
	}
	pp = &t->by_ino[hash_ino(ino) & (t->nbuckets - 1)];
	while (*pp != in)
		pp = &(*pp)->next_ino;
	*pp = in->next_ino;
	pp = &t->by_path[pf_hash_str(in->path) & (t->nbuckets - 1)];
	while (*pp && *pp != in)
		pp = &(*pp)->next_path;
	if (*pp)
		*pp = in->next_path;
	t->count--;
	pthread_mutex_unlock(&t->lock);
	inode_free(in);
}

int pf_itable_getattr(struct pf_itable *t, struct pf_inode *in,
		      struct stat *st)
{
	int ret = t->be->ops->getattr(t->be, in->path, st);

	if (ret < 0)
		return ret;
	st->st_ino = in->ino;
	return 0;
}

void pf_itable_told(struct pf_itable *t, struct pf_inode *in,
		    const struct stat *st)
{
	pthread_mutex_lock(&t->lock);
	if (in->told == 0) {
		in->told_size = st->st_size;
		in->told_sec = st->st_mtim.tv_sec;
		in->told_nsec = st->st_mtim.tv_nsec;
		in->told = 1;
	} else if (in->told_size != st->st_size ||
		   in->told_sec != st->st_mtim.tv_sec ||
		   in->told_nsec != st->st_mtim.tv_nsec) {
		in->told = 2;	/* which one the kernel kept is unknown */
	}
	pthread_mutex_unlock(&t->lock);
}

bool pf_itable_told_same(struct pf_itable *t, struct pf_inode *in,
			 const struct stat *st)
{
	bool same;

	pthread_mutex_lock(&t->lock);
	same = in->told == 1 && in->told_size == st->st_size &&
	       in->told_sec == st->st_mtim.tv_sec &&
	       in->told_nsec == st->st_mtim.tv_nsec;
	pthread_mutex_unlock(&t->lock);
	return same;
}

void pf_itable_told_reset(struct pf_itable *t, struct pf_inode *in)
{
	pthread_mutex_lock(&t->lock);
	in->told = 0;
	pthread_mutex_unlock(&t->lock);
}

struct pf_efile *pf_itable_efile(struct pf_itable *t, struct pf_inode *in)
{
	struct pf_efile *f;

	pthread_mutex_lock(&t->lock);
	if (!in->efile)
		in->efile = pf_efile_new(t->e, in->path, in->ino);
	f = in->efile;
	pthread_mutex_unlock(&t->lock);
	return f;
}

struct pf_efile *pf_itable_efile_get(struct pf_itable *t,
				     struct pf_inode *in)
{
	struct pf_efile *f;

	pthread_mutex_lock(&t->lock);
	if (!in->efile)
		in->efile = pf_efile_new(t->e, in->path, in->ino);
	f = in->efile;
	if (f)
		pf_efile_get(f);
	pthread_mutex_unlock(&t->lock);
	return f;
}

bool pf_itable_efile_replace(struct pf_itable *t, struct pf_inode *in,
			     struct pf_efile *old, struct pf_efile *f)
{
	bool done;

	pthread_mutex_lock(&t->lock);
	done = in->efile == old;
	if (done) {
		pf_efile_get(f);
		in->efile = f;
	}
	pthread_mutex_unlock(&t->lock);
	if (done)
		pf_efile_put(old);
	return done;
}
