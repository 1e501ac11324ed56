/*
 * opts.c - command line of the daemon: sizes with K/M/G suffixes, one
 * clear line for every bad value, and a --help listing every option with
 * its default.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_opts.h"

void pf_opts_default(struct pf_opts *o, uint64_t ram_bytes)
{
	memset(o, 0, sizeof(*o));
	pf_engine_cfg_default(&o->engine, ram_bytes);
	o->entry_timeout = 3600;
	o->attr_timeout = 3600;
	o->readahead_kb = 1024;
	o->max_threads = 16;
	o->keep_cache = 1;
	o->log_level = PF_LOG_INFO;
	o->connect_timeout = 10;
	o->timeout = 30;
	o->retries = 5;
	o->trace_seconds = 30;
}

int pf_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1ull << 40;
		end++;
		break;
	default:
		break;
	}
	if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	v *= (double)mult;
	if (v >= 18446744073709551616.0 || v != floor(v))
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	if (!s || strcmp(s, "on") == 0 || strcmp(s, "1") == 0 ||
	    strcmp(s, "yes") == 0 || strcmp(s, "true") == 0) {
		*out = 1;
		return 0;
	}
	if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0 ||
	    strcmp(s, "no") == 0 || strcmp(s, "false") == 0) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

/* Options FUSE handles itself; passed through to fuse_session_new. */
static const char *const fuse_flags[] = {
	"allow_other", "allow_root", "auto_unmount", "default_permissions",
	NULL,
};
static const char *const fuse_valued[] = { "fsname", "subtype", NULL };
/* Meaningful to mount(8), fstab or systemd, not to the daemon. */
static const char *const ignored[] = {
	"ro", "_netdev", "nofail", "noauto", "auto", "user", "users",
	"nouser", "defaults", "exec", "noexec", "suid", "nosuid", "dev",
	"nodev", "atime", "noatime", "relatime", "nodiratime", NULL,
};

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

/* The daemon's own options, with or without a value. */
static const char *const own[] = {
	"prefetch", "push", "next_file", "keep_cache", "max_memory",
	"block_size",
	"fetch_size", "max_inflight", "prefetch_batches", "batch_size",
	"gap_ms", "max_streams", "max_window", "min_window", "cache_timeout",
	"entry_timeout", "attr_timeout", "readahead_kb", "max_threads", "io",
	"log_level", "endpoint", "region", "profile", "addressing",
	"no_sign", "manifest", "cacert", "insecure", "connect_timeout",
	"timeout", "retries", "trace", "trace_seconds", "cache_dir",
	"cache_size", NULL,
};

/* Options whose value is kept as a string in struct pf_opts. */
struct str_opt {
	const char *name;
	size_t off;
	size_t cap;
};
#define STR_OPT(f) { #f, offsetof(struct pf_opts, f), \
		     sizeof(((struct pf_opts *)0)->f) }
static const struct str_opt str_opts[] = {
	STR_OPT(endpoint), STR_OPT(region), STR_OPT(profile),
	STR_OPT(manifest), STR_OPT(cacert), STR_OPT(trace),
	STR_OPT(cache_dir), { NULL, 0, 0 },
};

static bool known(const char *opt)
{
	return in_list(own, opt);
}

static int add_fuse_opt(struct pf_opts *o, const char *opt, char *err,
			size_t errlen)
{
	size_t len = strlen(o->fuse_opts);

	if (len + strlen(opt) + 2 > sizeof(o->fuse_opts)) {
		snprintf(err, errlen, "too many options");
		return -EINVAL;
	}
	snprintf(o->fuse_opts + len, sizeof(o->fuse_opts) - len, "%s%s",
		 len ? "," : "", opt);
	return 0;
}

#define BAD(...)                                                   \
	do {                                                       \
		snprintf(err, errlen, __VA_ARGS__);                \
		return -EINVAL;                                    \
	} while (0)

/* One "name[=value]" of a -o list. */
static int parse_one(struct pf_opts *o, char *opt, char *err, size_t errlen)
{
	struct pf_engine_cfg *c = &o->engine;
	char *val = strchr(opt, '=');
	uint64_t sz;
	unsigned u;
	double d;
	int b;

	if (val)
		*val++ = '\0';
	if (in_list(ignored, opt) || strncmp(opt, "x-", 2) == 0 ||
	    strncmp(opt, "comment=", 8) == 0)
		return 0;
	if (in_list(fuse_flags, opt) && !val)
		return add_fuse_opt(o, opt, err, errlen);
	if (in_list(fuse_valued, opt) && val) {
		char buf[512];

		if (strchr(val, ','))
			BAD("bad value for %s: '%s'", opt, val);
		snprintf(buf, sizeof(buf), "%s=%s", opt, val);
		return add_fuse_opt(o, buf, err, errlen);
	}
	if (strcmp(opt, "rw") == 0)
		BAD("prefetchfs mounts are read-only: option 'rw' is not "
		    "supported");
	if (strcmp(opt, "prefetch") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for prefetch: '%s' (on or off)", val);
		c->prefetch = b;
		return 0;
	}
	if (!known(opt))
		BAD("unknown option '%s' (see --help)", opt);
	if (strcmp(opt, "push") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for push: '%s' (on or off)", val);
		c->push = b;
		return 0;
	}
	if (strcmp(opt, "next_file") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for next_file: '%s' (on or off)", val);
		c->next_file = b;
		return 0;
	}
	if (strcmp(opt, "keep_cache") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for keep_cache: '%s' (on or off)", val);
		o->keep_cache = b;
		return 0;
	}
	if (strcmp(opt, "no_sign") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for no_sign: '%s' (on or off)", val);
		o->no_sign = b;
		return 0;
	}
	if (strcmp(opt, "insecure") == 0) {
		if (parse_bool(val, &b) < 0)
			BAD("bad value for insecure: '%s' (on or off)", val);
		o->insecure = b;
		return 0;
	}
	if (!val)
		BAD("option '%s' needs a value (%s=...)", opt, opt);
	for (const struct str_opt *so = str_opts; so->name; so++) {
		char *dst = (char *)o + so->off;

		if (strcmp(opt, so->name) != 0)
			continue;
		if (!*val || strlen(val) >= so->cap)
			BAD("bad value for %s: '%s'", opt, val);
		memcpy(dst, val, strlen(val) + 1);
		return 0;
	}
	if (strcmp(opt, "addressing") == 0) {
		if (strcmp(val, "path") != 0 && strcmp(val, "virtual") != 0 &&
		    strcmp(val, "auto") != 0)
			BAD("bad value for addressing: '%s' (path, virtual or "
			    "auto)", val);
		snprintf(o->addressing, sizeof(o->addressing), "%s", val);
		return 0;
	}
	if (strcmp(opt, "connect_timeout") == 0 ||
	    strcmp(opt, "timeout") == 0) {
		if (parse_uint(val, 1, 3600, &u) < 0)
			BAD("bad value for %s: '%s' (seconds, 1 to 3600)", opt,
			    val);
		if (opt[0] == 'c')
			o->connect_timeout = u;
		else
			o->timeout = u;
		return 0;
	}
	if (strcmp(opt, "trace_seconds") == 0) {
		if (parse_seconds(val, &d) < 0 || d <= 0)
			BAD("bad value for trace_seconds: '%s' (seconds, more "
			    "than 0)", val);
		o->trace_seconds = d;
		return 0;
	}
	if (strcmp(opt, "retries") == 0) {
		if (parse_uint(val, 0, 100, &u) < 0)
			BAD("bad value for retries: '%s' (0 to 100)", val);
		o->retries = u;
		return 0;
	}

	if (strcmp(opt, "max_memory") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < (16u << 20))
			BAD("bad value for max_memory: '%s' (a size of at "
			    "least 16M, e.g. 4G)", val);
		c->max_memory = sz;
	} else if (strcmp(opt, "cache_size") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < (16u << 20))
			BAD("bad value for cache_size: '%s' (a size of at "
			    "least 16M, e.g. 100G)", val);
		o->cache_size = sz;
	} else if (strcmp(opt, "block_size") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < 4096 ||
		    sz > (16u << 20) || (sz & (sz - 1)))
			BAD("bad value for block_size: '%s' (a power of two "
			    "from 4K to 16M)", val);
		c->block_size = sz;
	} else if (strcmp(opt, "fetch_size") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < 4096 ||
		    sz > (64u << 20))
			BAD("bad value for fetch_size: '%s' (a size from 4K "
			    "to 64M)", val);
		c->fetch_size = sz;
		o->fetch_size_set = 1;
	} else if (strcmp(opt, "max_inflight") == 0) {
		if (parse_uint(val, 1, 1024, &u) < 0)
			BAD("bad value for max_inflight: '%s' (1 to 1024)",
			    val);
		c->max_inflight = u;
	} else if (strcmp(opt, "prefetch_batches") == 0) {
		if (parse_uint(val, 2, 64, &u) < 0)
			BAD("bad value for prefetch_batches: '%s' (2 to 64)",
			    val);
		c->prefetch_batches = u;
	} else if (strcmp(opt, "batch_size") == 0) {
		if (pf_parse_size(val, &sz) < 0)
			BAD("bad value for batch_size: '%s' (a size, e.g. "
			    "8M; 0 learns it)", val);
		c->pattern.batch_override = sz;
	} else if (strcmp(opt, "gap_ms") == 0) {
		if (parse_seconds(val, &d) < 0 || d > 60000)
			BAD("bad value for gap_ms: '%s' (milliseconds)", val);
		c->pattern.gap_ns = (uint64_t)(d * 1e6);
	} else if (strcmp(opt, "max_streams") == 0) {
		if (parse_uint(val, 1, 1024, &u) < 0)
			BAD("bad value for max_streams: '%s' (1 to 1024)",
			    val);
		c->pattern.max_streams = u;
	} else if (strcmp(opt, "max_window") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < (64u << 10))
			BAD("bad value for max_window: '%s' (a size of at "
			    "least 64K)", val);
		c->max_window = sz;
	} else if (strcmp(opt, "min_window") == 0) {
		if (pf_parse_size(val, &sz) < 0 || sz < (64u << 10))
			BAD("bad value for min_window: '%s' (a size of at "
			    "least 64K)", val);
		c->min_window = sz;
		o->min_window_set = 1;
	} else if (strcmp(opt, "cache_timeout") == 0) {
		if (parse_seconds(val, &d) < 0)
			BAD("bad value for cache_timeout: '%s' (seconds)",
			    val);
		o->entry_timeout = d;
		o->attr_timeout = d;
	} else if (strcmp(opt, "entry_timeout") == 0) {
		if (parse_seconds(val, &d) < 0)
			BAD("bad value for entry_timeout: '%s' (seconds)",
			    val);
		o->entry_timeout = d;
	} else if (strcmp(opt, "attr_timeout") == 0) {
		if (parse_seconds(val, &d) < 0)
			BAD("bad value for attr_timeout: '%s' (seconds)", val);
		o->attr_timeout = d;
	} else if (strcmp(opt, "readahead_kb") == 0) {
		if (parse_uint(val, 0, 1u << 20, &u) < 0)
			BAD("bad value for readahead_kb: '%s' (KiB, 0 keeps "
			    "the kernel's)", val);
		o->readahead_kb = u;
	} else if (strcmp(opt, "max_threads") == 0) {
		if (parse_uint(val, 1, 1024, &u) < 0)
			BAD("bad value for max_threads: '%s' (1 to 1024)",
			    val);
		o->max_threads = u;
	} else if (strcmp(opt, "io") == 0) {
		if (strcmp(val, "auto") == 0 || strcmp(val, "io_uring") == 0)
			o->io_engine = 0;
		else if (strcmp(val, "pread") == 0)
			o->io_engine = 1;
		else
			BAD("bad value for io: '%s' (io_uring or pread)", val);
	} else if (strcmp(opt, "log_level") == 0) {
		if (pf_log_parse_level(val, &o->log_level) < 0)
			BAD("bad value for log_level: '%s' (err, warn, info "
			    "or debug)", val);
	} else {
		BAD("unknown option '%s' (see --help)", opt);
	}
	return 0;
}

static int parse_list(struct pf_opts *o, const char *list, char *err,
		      size_t errlen)
{
	char *copy = strdup(list);
	char *save = NULL;
	int ret = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (char *tok = strtok_r(copy, ",", &save); tok && ret == 0;
	     tok = strtok_r(NULL, ",", &save))
		ret = parse_one(o, tok, err, errlen);
	free(copy);
	return ret;
}

int pf_opts_parse(struct pf_opts *o, int argc, char **argv, char *err,
		  size_t errlen)
{
	const char *pos[2];
	int npos = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = 1;
		} else if (strcmp(a, "-V") == 0 ||
			   strcmp(a, "--version") == 0) {
			o->version = 1;
		} else if (strcmp(a, "-f") == 0) {
			o->foreground = 1;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = 1;
			o->foreground = 1;
			o->log_level = PF_LOG_DEBUG;
		} else if (strcmp(a, "-o") == 0) {
			if (i + 1 >= argc)
				BAD("option -o needs a list of options");
			ret = parse_list(o, argv[++i], err, errlen);
			if (ret < 0)
				return ret;
		} else if (strncmp(a, "-o", 2) == 0) {
			ret = parse_list(o, a + 2, err, errlen);
			if (ret < 0)
				return ret;
		} else if (a[0] == '-' && a[1] != '\0') {
			BAD("unknown option '%s' (see --help)", a);
		} else {
			if (npos == 2)
				BAD("unexpected argument '%s': give SOURCE "
				    "and MOUNTPOINT only", a);
			pos[npos++] = a;
		}
	}
	if (o->help || o->version)
		return 0;
	if (npos < 2)
		BAD("missing %s (usage: prefetchfs [options] SOURCE "
		    "MOUNTPOINT)", npos == 0 ? "SOURCE and MOUNTPOINT" :
						"MOUNTPOINT");
	o->source = pos[0];
	o->mountpoint = pos[1];
	if (o->engine.fetch_size < o->engine.block_size)
		BAD("fetch_size (%" PRIu64 ") must be at least block_size "
		    "(%zu)", o->engine.fetch_size, o->engine.block_size);
	if (o->engine.max_memory <
	    4 * o->engine.fetch_size + 4 * o->engine.block_size)
		BAD("max_memory (%" PRIu64 ") is too small for fetch_size "
		    "%" PRIu64 ": give at least 4 fetches' worth",
		    o->engine.max_memory, o->engine.fetch_size);
	if (o->engine.min_window > o->engine.max_window)
		BAD("min_window is larger than max_window");
	return 0;
}

void pf_opts_usage(const char *prog, uint64_t ram_bytes)
{
	struct pf_opts d;

	pf_opts_default(&d, ram_bytes);
	printf("usage: %s [options] SOURCE MOUNTPOINT\n"
	       "\n"
	       "Mounts the dataset at SOURCE read-only at MOUNTPOINT, learns "
	       "each\n"
	       "reader's access pattern and keeps batch-sized windows ahead "
	       "of it in memory.\n"
	       "SOURCE is a directory, http(s)://HOST/PREFIX/ (listed by the "
	       "server's directory\n"
	       "index or a manifest) or s3://BUCKET[/PREFIX].\n"
	       "Unmount with: fusermount3 -u MOUNTPOINT\n"
	       "\n"
	       "general options:\n"
	       "    -h, --help             print this help and exit\n"
	       "    -V, --version          print the version and exit\n"
	       "    -f                     stay in the foreground, log to "
	       "stderr\n"
	       "    -d                     debug: foreground, FUSE request "
	       "log, log_level=debug\n"
	       "    -o OPT[,OPT...]        options below\n"
	       "\n"
	       "prefetch options (sizes take K, M, G suffixes):\n"
	       "    -o max_memory=SIZE     memory for cached data (default "
	       "%" PRIu64 "M, a quarter of RAM)\n"
	       "    -o prefetch=on|off     learn patterns and read ahead "
	       "(default on)\n"
	       "    -o push=on|off         put read-ahead of sequential "
	       "readers into the kernel's\n"
	       "                           page cache, so their reads never "
	       "wait (default on)\n"
	       "    -o next_file=on|off    at the end of a file read ahead "
	       "into the next file of\n"
	       "                           its directory, by name (default "
	       "on)\n"
	       "    -o prefetch_batches=N  batch windows kept ahead of each "
	       "reader (default %u, min 2)\n"
	       "    -o batch_size=SIZE     use this batch instead of the "
	       "learned one (default 0: learn)\n"
	       "    -o fetch_size=SIZE     bytes per backend read (default "
	       "%" PRIu64 "K)\n"
	       "    -o max_inflight=N      backend reads in flight at most "
	       "(default %u)\n"
	       "    -o block_size=SIZE     cache block size (default %zuK)\n"
	       "    -o min_window=SIZE     window while no batch is known "
	       "(default %" PRIu64 "M)\n"
	       "    -o max_window=SIZE     largest window (default %" PRIu64
	       "M)\n"
	       "    -o gap_ms=MS           idle time that ends a batch "
	       "burst (default %.1f ms)\n"
	       "    -o max_streams=N       reader streams tracked per file "
	       "(default %u)\n"
	       "\n"
	       "mount options:\n"
	       "    -o cache_timeout=S     entry and attribute cache time "
	       "(default %.0f s)\n"
	       "    -o entry_timeout=S     name cache time (default %.0f s)\n"
	       "    -o attr_timeout=S      attribute cache time (default "
	       "%.0f s)\n"
	       "    -o keep_cache=on|off   keep a file's page cache across "
	       "opens (default on;\n"
	       "                           dropped anyway when the file "
	       "changed)\n"
	       "    -o readahead_kb=N      the mount's kernel read-ahead, "
	       "sets the READ size\n"
	       "                           (default %u KiB; 0 keeps the "
	       "kernel's; needs root)\n"
	       "    -o max_threads=N       FUSE worker threads (default "
	       "%u)\n"
	       "    -o io=io_uring|pread   POSIX read engine (default "
	       "io_uring, pread if unavailable)\n"
	       "    -o log_level=LEVEL     err, warn, info or debug "
	       "(default info)\n"
	       "    -o cache_dir=DIR       keep what is read in a disk "
	       "cache in DIR, across mounts\n"
	       "                           (default none)\n"
	       "    -o cache_size=SIZE     its size (default: what leaves "
	       "10%% of DIR's filesystem free)\n"
	       "    -o trace=FILE          write a trace of reads, fetches "
	       "and refills to FILE\n"
	       "                           (Chrome JSON, for ui.perfetto.dev;"
	       " default none)\n"
	       "    -o trace_seconds=S     trace the first S seconds of the "
	       "mount (default %.0f)\n"
	       "\n"
	       "object storage options (http://, https://, s3://):\n"
	       "    -o endpoint=URL        S3 endpoint, e.g. "
	       "http://127.0.0.1:9000 (default\n"
	       "                           AWS_ENDPOINT_URL_S3, "
	       "AWS_ENDPOINT_URL, else AWS)\n"
	       "    -o region=NAME         S3 region (default AWS_REGION, "
	       "AWS_DEFAULT_REGION, the\n"
	       "                           profile's, else us-east-1)\n"
	       "    -o profile=NAME        credentials of this profile in "
	       "~/.aws/credentials\n"
	       "                           (default: AWS_ACCESS_KEY_ID/..."
	       " of the environment,\n"
	       "                           else profile AWS_PROFILE, else "
	       "default)\n"
	       "    -o addressing=MODE     path, virtual or auto (default "
	       "auto)\n"
	       "    -o no_sign             anonymous S3 requests (public "
	       "buckets)\n"
	       "    -o manifest=URL        HTTP: the file list, one 'PATH SIZE' "
	       "a line (a name is\n"
	       "                           relative to SOURCE; default: the "
	       "server's index)\n"
	       "    -o cacert=FILE         CA bundle for https (default the "
	       "system's)\n"
	       "    -o insecure            do not verify TLS certificates\n"
	       "    -o connect_timeout=S   connect timeout (default %u s)\n"
	       "    -o timeout=S           a request that receives nothing "
	       "this long fails\n"
	       "                           (default %u s)\n"
	       "    -o retries=N           retries of a failed request, with "
	       "backoff (default %u)\n"
	       "    fetch_size defaults to 4M and min_window to 16M for object "
	       "storage.\n"
	       "\n"
	       "    -o allow_other, auto_unmount, default_permissions, "
	       "fsname=NAME, subtype=NAME\n"
	       "                           passed to FUSE\n"
	       "    -o ro, _netdev, nofail, noauto, x-*   accepted and "
	       "ignored (fstab)\n"
	       "\n"
	       "The mount is read-only.  Statistics: MOUNTPOINT/%s/%s "
	       "(JSON).\n",
	       prog, d.engine.max_memory >> 20, d.engine.prefetch_batches,
	       d.engine.fetch_size >> 10, d.engine.max_inflight,
	       d.engine.block_size >> 10, d.engine.min_window >> 20,
	       d.engine.max_window >> 20,
	       (double)d.engine.pattern.gap_ns / 1e6,
	       d.engine.pattern.max_streams, d.entry_timeout,
	       d.entry_timeout, d.attr_timeout, d.readahead_kb,
	       d.max_threads, d.trace_seconds, d.connect_timeout, d.timeout,
	       d.retries,
	       ".prefetchfs", "stats");
}
