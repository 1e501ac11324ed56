/*
 * plans_access.c - a plan never fetches what its writer could not read.
 * Each path a plan names is checked against the uid and groups of the
 * process that opened the plan file, as the kernel checks a reader with
 * default_permissions: search permission on every directory from the
 * mount's root down, read permission on the file, from the owners and
 * modes the backend's getattr gives (mode bits only: FUSE checks no ACL
 * without posix_acl); root may search and read everything.  A path that
 * fails the check is "missing" to the parser, exactly as one that does
 * not exist, so the plan's counts tell its writer nothing about it.
 *
 * DESIGN
 * A plan of a million files names a few thousand directories: their
 * attributes are kept here, by path, for the engine's attr_ttl_ns (the
 * mount's attr_timeout: as long as the kernel's own check trusts the
 * attributes it cached), and asked for again after that.  The files'
 * attributes are kept beside their interned names (plans.c) for as long.
 * The table is bounded (DIRS_MAX entries; past that, directories are
 * asked for every time) and guarded by its own mutex, a leaf never held
 * across a getattr.  Any thread (the plan file's writers).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pf_hash.h"
#include "pf_hint.h"
#include "ahead_int.h"

#define DIRS_MAX	(1u << 20)
#define DIRS_BUCKETS	4096

struct dent {
	struct dent *next;
	struct pf_plans_attr a;
	bool is_dir;
	char path[];
};

struct pf_plans_dirs {
	pthread_mutex_t mu;
	struct dent *b[DIRS_BUCKETS];
	size_t n;
};

struct pf_plans_dirs *pf_plans_access_new(void)
{
	struct pf_plans_dirs *d = calloc(1, sizeof(*d));

	if (d)
		pthread_mutex_init(&d->mu, NULL);
	return d;
}

void pf_plans_access_free(struct pf_plans_dirs *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < DIRS_BUCKETS; i++) {
		while (d->b[i]) {
			struct dent *x = d->b[i];

			d->b[i] = x->next;
			free(x);
		}
	}
	pthread_mutex_destroy(&d->mu);
	free(d);
}

void pf_plans_access_attr(const struct stat *st, uint64_t now,
			  struct pf_plans_attr *a)
{
	a->uid = (uint32_t)st->st_uid;
	a->gid = (uint32_t)st->st_gid;
	a->mode = (uint32_t)st->st_mode;
	a->at_ns = now;
}

/* The class of @a's mode bits @c falls in (the kernel's order). */
static bool may(const struct pf_engine_cred *c, const struct pf_plans_attr *a,
		unsigned want)
{
	unsigned bits = a->mode & 07;

	if (c->uid == 0)
		return true;
	if (c->uid == a->uid) {
		bits = (a->mode >> 6) & 07;
	} else {
		bool in = c->gid == a->gid;

		for (unsigned i = 0; !in && i < c->ngroups; i++)
			in = c->groups[i] == a->gid;
		if (in)
			bits = (a->mode >> 3) & 07;
	}
	return (bits & want) == want;
}

bool pf_plans_access_may_read(const struct pf_engine_cred *c,
			      const struct pf_plans_attr *a)
{
	return may(c, a, 04);
}

/* The attributes of directory @path (a prefix of a plan's path, "" the
 * root), from the table or the backend: 0, or -errno. */
static int dir_attr(struct pf_engine *e, struct pf_plans_dirs *d,
		    const char *path, struct pf_plans_attr *a, bool *is_dir)
{
	uint64_t now = engine_now(e);
	size_t i = pf_hash_str(path) & (DIRS_BUCKETS - 1);
	struct dent *x;
	struct stat st;
	int ret;

	if (!d) {
		/* no table: ask each time */
		ret = e->be->ops->getattr(e->be, path, &st);
		if (ret < 0)
			return ret;
		pf_plans_access_attr(&st, now, a);
		*is_dir = S_ISDIR(st.st_mode);
		return 0;
	}
	pthread_mutex_lock(&d->mu);
	for (x = d->b[i]; x; x = x->next)
		if (strcmp(x->path, path) == 0)
			break;
	if (x && now - x->a.at_ns <= e->cfg.attr_ttl_ns) {
		*a = x->a;
		*is_dir = x->is_dir;
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	pthread_mutex_unlock(&d->mu);
	/* the backend may block: not under the table's lock */
	ret = e->be->ops->getattr(e->be, path, &st);
	if (ret < 0)
		return ret;
	pf_plans_access_attr(&st, now, a);
	*is_dir = S_ISDIR(st.st_mode);
	pthread_mutex_lock(&d->mu);
	for (x = d->b[i]; x; x = x->next)
		if (strcmp(x->path, path) == 0)
			break;
	if (x) {
		x->a = *a;
		x->is_dir = *is_dir;
	} else if (d->n < DIRS_MAX) {
		size_t len = strlen(path);

		x = malloc(sizeof(*x) + len + 1);
		if (x) {
			x->a = *a;
			x->is_dir = *is_dir;
			memcpy(x->path, path, len + 1);
			x->next = d->b[i];
			d->b[i] = x;
			d->n++;
		}
	}
	pthread_mutex_unlock(&d->mu);
	return 0;
}

int pf_plans_access_dirs(struct pf_engine *e, struct pf_plans_dirs *d,
			 const struct pf_engine_cred *c, const char *path)
{
	char prefix[PF_HINT_LINE_MAX];
	size_t len = strlen(path);
	size_t end = 0;

	if (!c || c->uid == 0)
		return 0;
	if (len >= sizeof(prefix))
		return -ENAMETOOLONG;
	memcpy(prefix, path, len + 1);
	/* "" (the root), then each directory down to the file's */
	for (;;) {
		struct pf_plans_attr a;
		bool is_dir;
		char keep = prefix[end];
		int ret;

		prefix[end] = '\0';
		ret = dir_attr(e, d, prefix, &a, &is_dir);
		prefix[end] = keep;
		if (ret < 0)
			return ret == -ENOMEM ? ret : -ENOENT;
		if (!is_dir)
			return -ENOTDIR;
		if (!may(c, &a, 01))
			return -EACCES;
		{
			const char *slash = strchr(path + end + (end ? 1 : 0),
						   '/');

			if (!slash)
				return 0;
			end = (size_t)(slash - path);
		}
	}
}
