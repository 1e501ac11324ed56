/*
 * pf_guard.h - the watcher that aborts a killed daemon's connection when
 * one of its threads is stuck in the kernel (src/guard.c).
 */
#ifndef PF_GUARD_H
#define PF_GUARD_H

/*
 * On the main thread, which must live as long as the daemon, once MNT is
 * mounted: forks the guard.  @argv, @argc: main()'s, whose memory the guard
 * overwrites in its own copy so that its command line is not the daemon's.
 * Returns 0 or -errno (the daemon runs on without it).
 */
int pf_guard_start(const char *mnt, char **argv, int argc);

#endif
