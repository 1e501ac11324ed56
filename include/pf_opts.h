/*
 * pf_opts.h - the daemon's command line.
 *
 *   prefetchfs [-f] [-d] [-o OPT[,OPT...]] SOURCE MOUNTPOINT
 *
 * Parsing is FUSE-free and side-effect free, so it is tested on its own.
 * Every -o option is one row of pf_opt_table[], which feeds the parser,
 * --help and --help-table (docs/options.md's table, checked against the man
 * page by tests/mount_install.sh).  Options FUSE itself understands
 * (allow_other, auto_unmount, ...) are collected into fuse_opts for the
 * front end; options that only mean something to mount(8), fstab or
 * systemd are accepted and ignored.
 */
#ifndef PF_OPTS_H
#define PF_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
	int push_store;		/* 1: push by notify_store only */
	int keep_cache;		/* keep a file's page cache across opens */
	int direct_io;		/* dataset files opened with direct_io */
	int nonempty;		/* -o nonempty: a mountpoint with files */
	int foreground;
	int debug;
	int help;		/* 1 --help, 2 --help-table */
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
	unsigned request_timeout; /* seconds in all; 0 = auto */
	unsigned revalidate;	/* seconds a listed version is trusted */
	unsigned list_ahead;	/* root directories listed at mount */
	char trace[1024];	/* -o trace=FILE: Chrome trace JSON; "" none */
	double trace_seconds;	/* trace the first this many seconds */
	char log_file[1024];	/* -o log_file=FILE; "" syslog */
	uint64_t ram_bytes;	/* of the machine, from pf_opts_default() */
	int max_memory_set;	/* -o max_memory given */
	char cache_dir[1024];	/* -o cache_dir=DIR: disk cache; "" none */
	/* -o shared_cache: memcached servers (a list, or @FILE); "" none */
	char shared_cache[4096];
	char shared_secret[1024];	/* its secret's file */
	char shared_self[300];	/* this node's server; "" detect */
	unsigned shared_timeout;	/* ms */
	unsigned shared_lease;	/* ms; 0 no leases */
	uint64_t cache_size;	/* 0: keep 10% of its filesystem free */
	int fetch_size_set;	/* -o fetch_size given */
	int min_window_set;	/* -o min_window given */
	char fuse_opts[1024];	/* comma-separated, for fuse_session_new */
};

enum pf_opt_type {
	PF_OT_BOOL,	/* int: on|off; the bare name is on */
	PF_OT_SIZE,	/* uint64_t or size_t: K, M, G, T suffixes */
	PF_OT_UINT,	/* unsigned */
	PF_OT_SECS,	/* double, seconds */
	PF_OT_STR,	/* char[]: not empty, must fit */
	PF_OT_FN,	/* set() and get() of the row */
	PF_OT_FUSE,	/* handed to fuse_session_new() */
};

enum pf_opt_group {
	PF_OG_PREFETCH,
	PF_OG_MOUNT,
	PF_OG_LOG,
	PF_OG_OBJECT,
	PF_OG_SHARED,
	PF_OG_FUSE,
	PF_OG_N
};

#define PF_OF_POW2 0x1		/* a SIZE that is a power of two */
#define PF_OF_GT0 0x2		/* more than 0 */
#define PF_OF_MACHINE 0x4	/* the default depends on the machine */

/* One -o option. */
struct pf_opt {
	const char *name;
	const char *arg;	/* after "=" in the help; NULL: a flag */
	enum pf_opt_type type;
	enum pf_opt_group group;
	size_t off;		/* of the field in struct pf_opts */
	size_t size;		/* of that field */
	size_t given;		/* of an int set when given; 0: none */
	double lo, hi;		/* bounds; hi 0: none above */
	unsigned flags;		/* PF_OF_* */
	const char *def;	/* default as text; NULL: from the field */
	const char *choices;	/* PF_OT_FN: the values, for errors */
	const char *alias;	/* another tool's name for this option */
	const char *help;	/* one sentence, no default, no range */
	/* PF_OT_FN: -EINVAL if @val is bad */
	int (*set)(struct pf_opts *o, const char *val);
	void (*get)(const struct pf_opts *o, char *buf, size_t len);
};

/* Every -o option of the daemon, ended by a row with name NULL. */
extern const struct pf_opt pf_opt_table[];

/* The row of @name, NULL if there is none. */
const struct pf_opt *pf_opt_find(const char *name);
/* "4K to 64M", "1 to 1024", "" if unbounded. */
void pf_opt_range_text(const struct pf_opt *d, char *buf, size_t len);
/* The default of @d in @defaults as --help shows it, "" if none. */
void pf_opt_default_text(const struct pf_opt *d, const struct pf_opts *o,
			 char *buf, size_t len);
/* "64K", "1M", "3G": the largest unit that divides @v exactly. */
void pf_format_size(uint64_t v, char *buf, size_t len);
/* The largest fetch_size one vectored read of @block_size blocks takes. */
uint64_t pf_opts_max_fetch(size_t block_size);

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
/* "0.5", "30" -> seconds, 0 to 1e9.  -EINVAL if bad. */
int pf_opts_parse_seconds(const char *s, double *out);

/* Prints the usage and every option with its default. */
void pf_opts_usage(const char *prog, uint64_t ram_bytes);
/* Prints the options as a Markdown table: option, default, range, meaning
 * (docs/options.md's, written by make docs; independent of this machine). */
void pf_opts_help_table(FILE *fp);

#endif
