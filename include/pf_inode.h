/*
 * pf_inode.h - the mount's inode numbers and their backend paths.
 *
 * The kernel names files by inode number; backends by path.  The table maps
 * one to the other and counts the kernel's lookups of each inode (FUSE's
 * nlookup), freeing an entry when the kernel forgets it.  A path keeps its
 * inode number while the kernel remembers it, so hard links show up as
 * separate files (the mount is read-only, nobody can tell).
 *
 * Each regular file's inode owns, from its first open on, a struct
 * pf_efile: the engine's cache of that file, shared by every open of it.
 *
 * Threads: all calls may come from any thread; one table mutex guards the
 * entries.  An inode pointer stays valid while the kernel holds a lookup
 * on it, which it does for the whole of any request that names it.
 */
#ifndef PF_INODE_H
#define PF_INODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pf_backend.h"
#include "pf_engine.h"

#define PF_ROOT_INO 1
/* Reserved for the virtual directory, its stats and plan files. */
#define PF_META_DIR_INO 2
#define PF_META_STATS_INO 3
#define PF_META_DIR_NAME ".prefetchfs"
#define PF_META_STATS_NAME "stats"
/* The control file of declared plans (hints, pf_hint.h). */
#define PF_META_PLAN_INO 4
#define PF_META_PLAN_NAME "plan"
/* The control file of warm-ups (prefetchfs-warm, pf_engine_preload_*). */
#define PF_META_WARM_INO 5
#define PF_META_WARM_NAME "warm"

struct pf_inode {
	uint64_t ino;
	char *path;		/* relative to the dataset root; "" = root */
	mode_t mode;		/* file type bits */
	/* the fields below are the table's; do not touch */
	uint64_t nlookup;
	/* the size and mtime the kernel was told (pf_itable_told()) */
	int64_t told_size;
	int64_t told_sec;
	long told_nsec;
	unsigned char told;	/* 0: nothing, 1: one version, 2: several */
	struct pf_efile *efile;
	struct pf_inode *next_ino;
	struct pf_inode *next_path;
};

struct pf_itable;

int pf_itable_new(struct pf_backend *be, struct pf_engine *e,
		  struct pf_itable **out);
void pf_itable_free(struct pf_itable *t);

/* The inode, or NULL if the kernel does not know this number. */
struct pf_inode *pf_itable_get(struct pf_itable *t, uint64_t ino);

/*
 * Look @name up in directory @parent at the backend: on success *st is
 * filled (st_ino set to the mount's number), the entry's nlookup is raised
 * by one and it is returned through *out.  @known, if not NULL, is the
 * entry's stat already (as readdir gives it) and no backend call is made.
 */
int pf_itable_lookup(struct pf_itable *t, uint64_t parent, const char *name,
		     const struct stat *known, struct stat *st,
		     struct pf_inode **out);

/* The kernel dropped @n lookups of @ino. */
void pf_itable_forget(struct pf_itable *t, uint64_t ino, uint64_t n);

/* getattr of an inode at the backend, st_ino set. */
int pf_itable_getattr(struct pf_itable *t, struct pf_inode *in,
		      struct stat *st);

/*
 * The kernel was given @st as @in's attributes (a lookup's, readdirplus's
 * or getattr's answer).  pf_itable_told_same(): the kernel was told no
 * other size or mtime than @st's since the last pf_itable_told_reset()
 * (an open that expired them), so its cached attributes are @st's.
 */
void pf_itable_told(struct pf_itable *t, struct pf_inode *in,
		    const struct stat *st);
bool pf_itable_told_same(struct pf_itable *t, struct pf_inode *in,
			 const struct stat *st);
void pf_itable_told_reset(struct pf_itable *t, struct pf_inode *in);

/* The engine file of a regular-file inode, created on first use. */
struct pf_efile *pf_itable_efile(struct pf_itable *t, struct pf_inode *in);

/* The same with a reference for the caller (pf_efile_put()): another
 * thread may replace the inode's file meanwhile (below). */
struct pf_efile *pf_itable_efile_get(struct pf_itable *t,
				     struct pf_inode *in);

/*
 * A newer version of @in's file: its engine file becomes @f, which takes
 * a reference of the caller's, if it is still @old (whose reference the
 * table drops); else nothing changes (another open replaced @old first)
 * and false is returned.
 */
bool pf_itable_efile_replace(struct pf_itable *t, struct pf_inode *in,
			     struct pf_efile *old, struct pf_efile *f);

/* Join "@dir/@name" into a new malloc'd path ("" dir gives "name"). */
char *pf_path_join(const char *dir, const char *name);

#endif
