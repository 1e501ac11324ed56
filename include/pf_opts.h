/*
 * pf_opts.h - the daemon's command line.
 *
 *   prefetchfs [-f] [-d] [-o OPT[,OPT...]] SOURCE MOUNTPOINT
 *
 * Parsing is FUSE-free and side-effect free, so it is tested on its own.
 * Options FUSE itself understands (allow_other, auto_unmount, ...) are
 * collected into fuse_opts for the front end; options that only mean
 * something to mount(8), fstab or systemd are accepted and ignored.
 */
#ifndef PF_OPTS_H
#define PF_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "pf_engine.h"
#include "pf_log.h"

struct pf_opts {
	const char *source;	/* point into argv */
	const char *mountpoint;
	struct pf_engine_cfg engine;
	double entry_timeout;	/* seconds the kernel may cache names */
	double attr_timeout;	/* seconds the kernel may cache attributes */
	unsigned readahead_kb;	/* mount's read-ahead; 0 = kernel default */
	unsigned max_threads;	/* FUSE worker threads */
	int io_engine;		/* 0 auto (io_uring, else pread), 1 pread */
	int keep_cache;		/* keep a file's page cache across opens */
	int foreground;
	int debug;
	int help;
	int version;
	enum pf_log_level log_level;
	/* object storage (http(s)://, s3://) */
	char endpoint[512];	/* "" = from the environment / AWS */
	char region[64];
	char profile[128];
	char addressing[16];	/* "" = auto */
	int no_sign;
	char manifest[1024];	/* HTTP: manifest URL or name */
	char cacert[1024];
	int insecure;
	unsigned connect_timeout; /* seconds */
	unsigned timeout;	/* seconds without a byte */
	unsigned retries;
	char trace[1024];	/* -o trace=FILE: Chrome trace JSON; "" none */
	double trace_seconds;	/* trace the first this many seconds */
	char cache_dir[1024];	/* -o cache_dir=DIR: disk cache; "" none */
	uint64_t cache_size;	/* 0: keep 10% of its filesystem free */
	int fetch_size_set;	/* -o fetch_size given */
	int min_window_set;	/* -o min_window given */
	char fuse_opts[1024];	/* comma-separated, for fuse_session_new */
};

/* Defaults for a machine with @ram_bytes of memory. */
void pf_opts_default(struct pf_opts *o, uint64_t ram_bytes);

/*
 * Parses argv[1..argc-1] into @o (on top of its defaults).  On error
 * returns -EINVAL with a one-line reason in err[0..errlen-1].
 */
int pf_opts_parse(struct pf_opts *o, int argc, char **argv, char *err,
		  size_t errlen);

/* "64K", "1M", "2G", "4096", "1.5G", "1MiB" -> bytes.  -EINVAL if bad. */
int pf_parse_size(const char *s, uint64_t *out);

/* Prints the usage and every option with its default. */
void pf_opts_usage(const char *prog, uint64_t ram_bytes);

#endif
