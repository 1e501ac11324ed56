/*
 * tmptree.h - what the Check suites that make temporary directories share:
 * rm_tree() removes a directory and everything beneath it, symbolic links
 * as links (never followed), ignoring what it cannot remove.
 *
 * Included by tests/check_diskcache.c, check_posix.c, check_creds.c and
 * check_s3conf.c; header-only (every function static), no state, so any
 * thread or forked test process may call it.
 */
#ifndef TMPTREE_H
#define TMPTREE_H

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int rm_tree_one(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* children before their directory (FTW_DEPTH), links not followed */
static inline void rm_tree(const char *dir)
{
	nftw(dir, rm_tree_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif /* TMPTREE_H */
