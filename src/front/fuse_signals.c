/*
 * fuse_signals.c - the daemon's shutdown on SIGTERM, SIGINT and SIGHUP:
 * a thread (pf-signals) that waits for them, stops the engine's pusher
 * and ends the session loop (see pf_fuse.h); and a thread (pf-exitwatch)
 * that tells the moment the session ended, before the loop has joined
 * its workers.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "pf_fuse.h"
#include "pf_log.h"

static struct {
	pthread_t tid;
	pthread_t loop_tid;	/* the thread that runs the session loop */
	struct pf_fs *fs;
	atomic_bool done;	/* the loop has returned: stop waking it */
	bool started;
} sigctl;

static void stop_sigset(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

int pf_fuse_block_signals(void)
{
	sigset_t set;

	stop_sigset(&set);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* SIGUSR1 only interrupts the loop thread's wait (no SA_RESTART). */
static void wake_handler(int sig)
{
	(void)sig;
}

static void *signal_thread(void *arg)
{
	struct timespec tick = { .tv_nsec = 100 * 1000 * 1000 };
	sigset_t set;
	int sig = 0;

	(void)arg;
	stop_sigset(&set);
	while (sigwait(&set, &sig) != 0)
		;
	if (atomic_load(&sigctl.done))
		return NULL;	/* pf_fuse_signals_stop() */
	pf_info("signal %d: unmounting", sig);
	pf_engine_stop_push(sigctl.fs->engine);
	fuse_session_exit(sigctl.fs->se);
	/*
	 * The loop waits in sem_wait(), its workers in read() of /dev/fuse:
	 * interrupt the wait until the loop has seen the exit (a wake-up
	 * just before it starts waiting would be lost).
	 */
	while (!atomic_load(&sigctl.done)) {
		pthread_kill(sigctl.loop_tid, SIGUSR1);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int pf_fuse_signals_start(struct pf_fs *fs)
{
	struct sigaction sa = { .sa_handler = wake_handler };
	sigset_t usr1;
	int ret;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		return -errno;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	sigctl.fs = fs;
	sigctl.loop_tid = pthread_self();
	atomic_store(&sigctl.done, false);
	ret = -pthread_create(&sigctl.tid, NULL, signal_thread, NULL);
	if (ret == 0) {
		pthread_setname_np(sigctl.tid, "pf-signals");
		sigctl.started = true;
	}
	return ret;
}

void pf_fuse_signals_stop(void)
{
	if (!sigctl.started)
		return;
	atomic_store(&sigctl.done, true);
	/* a thread still in sigwait() takes this one and returns */
	pthread_kill(sigctl.tid, SIGTERM);
	pthread_join(sigctl.tid, NULL);
	sigctl.started = false;
}

/* ---- the session's end, as it happens ----------------------------------- */

#define EXIT_WATCH_MS 20

static struct {
	pthread_t tid;
	struct fuse_session *se;
	void (*fn)(void *arg);
	void *arg;
	atomic_bool stop;
	bool started;
} exitw;

/*
 * The session ends when a worker reads ENODEV from /dev/fuse (the mount is
 * gone) or a signal ends it; the loop then joins its workers, and a worker
 * in a request to a slow source (a LOOKUP of a 1.5 s slowfs) holds it up.
 * Looking at the flag every EXIT_WATCH_MS tells it within that.
 */
static void *exit_watch(void *unused)
{
	struct timespec tick = { .tv_nsec = EXIT_WATCH_MS * 1000000L };

	(void)unused;
	while (!atomic_load(&exitw.stop)) {
		if (fuse_session_exited(exitw.se)) {
			exitw.fn(exitw.arg);
			break;
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int pf_fuse_exit_watch_start(struct fuse_session *se, void (*fn)(void *arg),
			     void *arg)
{
	int ret;

	exitw.se = se;
	exitw.fn = fn;
	exitw.arg = arg;
	atomic_store(&exitw.stop, false);
	ret = -pthread_create(&exitw.tid, NULL, exit_watch, NULL);
	if (ret == 0) {
		pthread_setname_np(exitw.tid, "pf-exitwatch");
		exitw.started = true;
	}
	return ret;
}

void pf_fuse_exit_watch_stop(void)
{
	if (!exitw.started)
		return;
	atomic_store(&exitw.stop, true);
	pthread_join(exitw.tid, NULL);
	exitw.started = false;
}
