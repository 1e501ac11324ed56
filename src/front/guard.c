/*
 * guard.c - a watcher process that keeps a killed daemon from hanging its
 * readers.
 *
 * A daemon killed with SIGKILL (the OOM killer, kill -9) normally takes its
 * FUSE connection with it: its /dev/fuse descriptor closes, the kernel
 * aborts the connection, and readers get ENOTCONN.  But a thread that is in
 * an uninterruptible wait inside the kernel when the signal comes does not
 * die, and it keeps the descriptor, so the connection stays and every
 * reader waits for ever.  Two such waits are known: the pusher's
 * notify_store waiting for a page that a READ still in the queue has locked
 * (the READ will never be answered: the threads that answer it are dead),
 * and a backend read of a source that is itself a FUSE mount that hangs.
 * The process then stays a zombie whose last thread never ends.
 *
 * DESIGN
 * pf_guard_start() runs on the main thread once the mount exists: it finds
 * the mount's device in /proc/self/mountinfo and forks the guard, which
 * closes every descriptor (it must not hold the connection itself), renames
 * itself so that no pgrep of the daemon's command line finds it, and asks
 * for SIGUSR1 when the main thread ends (PR_SET_PDEATHSIG).  The main
 * thread ends only when the daemon exits or is killed.  The guard then
 * gives the rest of the process GUARD_GRACE_MS to go (its parent changes
 * once the last thread is gone); if it is still there and the mount is
 * still the same device, the guard aborts the connection with
 * umount2(MNT_FORCE), as `umount -f` does: the READs waiting get an error,
 * the stuck thread's wait ends, the process goes.  The mount stays, dead,
 * until `fusermount3 -u` (or auto_unmount) removes it.  Only root may force
 * an unmount; for other users the guard can do nothing and says nothing.
 * After fork() in a process with threads the guard calls only
 * async-signal-safe functions (no malloc, no stdio).
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pf_guard.h"
#include "pf_log.h"
#include "pf_mountinfo.h"

#define GUARD_GRACE_MS 3000
#define GUARD_NAME "[prefetchfs guard]"

/* Is the FUSE mount on top of @mnt device @maj:@min? */
static bool same_mount(const char *mnt, unsigned maj, unsigned min)
{
	unsigned a;
	unsigned b;

	return pf_mountinfo_fuse_dev(mnt, &a, &b) == 0 && a == maj &&
	       b == min;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void guard_main(const char *mnt, unsigned maj, unsigned min,
		       pid_t daemon, char *args, size_t argslen)
{
	sigset_t set;

	/* not the daemon's command line: pgrep -f of it finds only it */
	if (args) {
		memset(args, 0, argslen);
		if (argslen > sizeof(GUARD_NAME))
			memcpy(args, GUARD_NAME, sizeof(GUARD_NAME) - 1);
	}
	prctl(PR_SET_NAME, "pf-guard", 0, 0, 0);
	/* holding /dev/fuse would keep the connection alive itself */
	syscall(SYS_close_range, 0U, ~0U, 0U);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
	if (getppid() == daemon)
		sigwaitinfo(&set, NULL);
	/* the main thread is gone: the rest of the process must follow */
	for (long t = 0; t < GUARD_GRACE_MS; t += 100) {
		if (getppid() != daemon)
			_exit(0);
		sleep_ms(100);
	}
	if (getppid() != daemon || !same_mount(mnt, maj, min))
		_exit(0);
	/* a thread of the daemon is stuck: abort its connection */
	umount2(mnt, MNT_FORCE);
	_exit(0);
}

int pf_guard_start(const char *mnt, char **argv, int argc)
{
	pid_t daemon = getpid();
	unsigned maj;
	unsigned min;
	char *args = NULL, *end = NULL;
	pid_t pid;

	/* the memory of the command line (getopt may have reordered argv) */
	for (int i = 0; i < argc; i++) {
		char *e = argv[i] + strlen(argv[i]);

		if (!args || argv[i] < args)
			args = argv[i];
		if (!end || e > end)
			end = e;
	}
	if (pf_mountinfo_fuse_dev(mnt, &maj, &min) < 0) {
		pf_debug("guard: %s not found in /proc/self/mountinfo", mnt);
		return -ENOENT;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		guard_main(mnt, maj, min, daemon, args,
			   args ? (size_t)(end - args) : 0);
	pf_debug("guard: pid %d watches the connection of %s (%u:%u)",
		 (int)pid, mnt, maj, min);
	return 0;
}
