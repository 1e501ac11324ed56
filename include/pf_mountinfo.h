/*
 * pf_mountinfo.h - the mount on top of a path, from /proc/self/mountinfo.
 *
 * Async-signal-safe (open, read and close into a buffer on the stack; no
 * malloc, no stdio): the guard calls it in a process forked from one with
 * threads (guard.c), the main and the ready thread call it too (main.c).
 */
#ifndef PF_MOUNTINFO_H
#define PF_MOUNTINFO_H

#include <stdbool.h>

struct pf_mountinfo {
	unsigned maj;		/* the mount's device number */
	unsigned min;
	char type[64];		/* its file system type: "fuse.prefetchfs" */
};

/*
 * The last mount listed on @mnt (an absolute, resolved path; mountinfo
 * octal-escapes space, tab, newline and backslash, which this decodes),
 * that is the one on top, into *@mi.  0, -ENOENT if nothing is mounted on
 * @mnt, or -errno if /proc/self/mountinfo cannot be read.  Lines longer
 * than 8 KiB (a mount point of thousands of bytes) are skipped.
 */
int pf_mountinfo_find(const char *mnt, struct pf_mountinfo *mi);
/* The same from an open mountinfo file @fd, read from where it is. */
int pf_mountinfo_find_fd(int fd, const char *mnt, struct pf_mountinfo *mi);
/* Is @mi a FUSE mount ("fuse", "fuse.prefetchfs", "fuseblk")? */
bool pf_mountinfo_is_fuse(const struct pf_mountinfo *mi);
/*
 * The device of the FUSE mount on top of @mnt into *@maj, *@min: 0,
 * -ENOENT if what is on top is not FUSE (or nothing is), or -errno.
 */
int pf_mountinfo_fuse_dev(const char *mnt, unsigned *maj, unsigned *min);

#endif
