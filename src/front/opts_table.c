/*
 * opts_table.c - every -o option of the daemon, one row of pf_opt_table[]
 * each (see pf_opts.h and opts.c, which reads it: the parser, --help and
 * --help-table), and the set and get of the options with their own
 * syntax.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_opts.h"
#include "pf_sharedcache.h"

/* ---- options with their own syntax ----------------------------------- */

static int set_io(struct pf_opts *o, const char *val)
{
	if (strcmp(val, "auto") == 0 || strcmp(val, "io_uring") == 0)
		o->io_engine = 0;
	else if (strcmp(val, "pread") == 0)
		o->io_engine = 1;
	else
		return -EINVAL;
	return 0;
}

static void get_io(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", o->io_engine ? "pread" : "io_uring");
}

static int set_push_by(struct pf_opts *o, const char *val)
{
	if (strcmp(val, "readahead") == 0)
		o->push_store = 0;
	else if (strcmp(val, "store") == 0)
		o->push_store = 1;
	else
		return -EINVAL;
	return 0;
}

static void get_push_by(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", o->push_store ? "store" : "readahead");
}

static int set_log_level(struct pf_opts *o, const char *val)
{
	return pf_log_parse_level(val, &o->log_level);
}

static void get_log_level(const struct pf_opts *o, char *buf, size_t len)
{
	static const char *const names[] = { "err", "warn", "info", "debug" };

	snprintf(buf, len, "%s", names[o->log_level]);
}

static int set_addressing(struct pf_opts *o, const char *val)
{
	if (strcmp(val, "path") != 0 && strcmp(val, "virtual") != 0 &&
	    strcmp(val, "auto") != 0)
		return -EINVAL;
	snprintf(o->addressing, sizeof(o->addressing), "%s", val);
	return 0;
}

static void get_addressing(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", o->addressing[0] ? o->addressing : "auto");
}

static int set_gap_ms(struct pf_opts *o, const char *val)
{
	double d;

	if (pf_opts_parse_seconds(val, &d) < 0 || d > 60000)
		return -EINVAL;
	o->engine.pattern.gap_ns = (uint64_t)(d * 1e6);
	return 0;
}

static void get_gap_ms(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%g", (double)o->engine.pattern.gap_ns / 1e6);
}

static int set_cache_timeout(struct pf_opts *o, const char *val)
{
	double d;

	if (pf_opts_parse_seconds(val, &d) < 0)
		return -EINVAL;
	o->entry_timeout = d;
	o->attr_timeout = d;
	return 0;
}

static void get_cache_timeout(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%g", o->entry_timeout);
}

/* A list of servers (checked here, so that a bad one is said at once), or
 * @FILE (read at mount). */
static int set_shared_cache(struct pf_opts *o, const char *val)
{
	struct pf_sc_server *sv;
	char err[256];
	unsigned n;
	int ret;

	if (strcmp(val, "none") == 0) {
		o->shared_cache[0] = '\0';
		return 0;
	}
	if (strlen(val) >= sizeof(o->shared_cache) ||
	    (val[0] == '@' && !val[1]))
		return -EINVAL;
	if (val[0] != '@') {
		sv = calloc(PF_SC_SERVERS_MAX, sizeof(*sv));
		if (!sv)
			return -ENOMEM;
		ret = pf_sc_servers_parse(val, sv, PF_SC_SERVERS_MAX, &n, err,
					  sizeof(err));
		free(sv);
		if (ret < 0)
			return -EINVAL;
	}
	memcpy(o->shared_cache, val, strlen(val) + 1);
	return 0;
}

static void get_shared_cache(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", o->shared_cache[0] ? o->shared_cache : "none");
}

static int set_shared_self(struct pf_opts *o, const char *val)
{
	struct pf_sc_server sv;
	char err[256];
	unsigned n;

	if (strcmp(val, "auto") == 0) {
		o->shared_self[0] = '\0';
		return 0;
	}
	if (strlen(val) >= sizeof(o->shared_self) ||
	    pf_sc_servers_parse(val, &sv, 1, &n, err, sizeof(err)) < 0)
		return -EINVAL;
	memcpy(o->shared_self, val, strlen(val) + 1);
	return 0;
}

static void get_shared_self(const struct pf_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s", o->shared_self[0] ? o->shared_self : "auto");
}

/* ---- the table ------------------------------------------------------- */

#define F(field) offsetof(struct pf_opts, field), \
		 sizeof(((struct pf_opts *)0)->field)
#define NOFIELD 0, 0

const struct pf_opt pf_opt_table[] = {
	/* prefetch */
	{ .name = "max_memory", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.max_memory), .lo = 16 << 20,
	  .given = offsetof(struct pf_opts, max_memory_set),
	  .flags = PF_OF_MACHINE,
	  .def = "a quarter of RAM, 256M to 16G",
	  .help = "memory for cached data; a hard budget for every reader "
		  "together, at most the machine's RAM" },
	{ .name = "cache_dir", .arg = "DIR", .type = PF_OT_STR,
	  .group = PF_OG_PREFETCH, F(cache_dir), .def = "none",
	  .help = "keep what is read in a disk cache in DIR, across "
		  "unmounts, restarts and reboots" },
	{ .name = "cache_size", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(cache_size), .lo = 16 << 20,
	  .flags = PF_OF_MACHINE,
	  .def = "what leaves 10% of DIR's filesystem free",
	  .help = "the disk cache's size" },
	{ .name = "prefetch", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_PREFETCH, F(engine.prefetch),
	  .help = "learn patterns and read ahead; off serves demand reads "
		  "only, for comparisons" },
	{ .name = "push", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_PREFETCH, F(engine.push),
	  .help = "hand the read-ahead of sequential readers to the kernel's "
		  "page cache, so their reads never wait" },
	{ .name = "push_by", .arg = "readahead|store", .type = PF_OT_FN,
	  .group = PF_OG_PREFETCH, NOFIELD, .set = set_push_by,
	  .get = get_push_by, .choices = "readahead or store",
	  .help = "how pushed bytes reach the page cache: readahead has the "
		  "kernel read them ahead through a clone of the mount, "
		  "answered from memory (root only; pages a reader then "
		  "reads at the local page cache's speed); store writes "
		  "them in with notify_store" },
	{ .name = "next_file", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_PREFETCH, F(engine.next_file),
	  .help = "read ahead across files: into the next file of its "
		  "directory at the end of a file, and the next files whole "
		  "for readers that open a directory's files in name order" },
	{ .name = "fill", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_PREFETCH, F(engine.fill),
	  .help = "readers of a tree (or a big file) in random order: when "
		  "it fits the cache, read the rest in the background" },
	{ .name = "dirahead_files", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_PREFETCH, F(engine.dirahead_files), .lo = 2,
	  .hi = 4096, .def = "256",
	  .help = "files opened and read ahead of their readers at most" },
	{ .name = "xfile_files", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_PREFETCH, F(engine.dirahead_files),
	  .alias = "dirahead_files",
	  .help = "the older name of dirahead_files: the same option, the "
		  "same default" },
	{ .name = "prefetch_batches", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_PREFETCH, F(engine.prefetch_batches), .lo = 2,
	  .hi = 64, .help = "batch-sized windows kept filled ahead of each "
			    "reader" },
	{ .name = "batch_size", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.pattern.batch_override),
	  .def = "0", .help = "use this batch instead of the learned one; "
			      "0 learns it" },
	{ .name = "fetch_size", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.fetch_size),
	  .given = offsetof(struct pf_opts, fetch_size_set), .lo = 4096,
	  .hi = 64 << 20, .help = "bytes per read of the source, at least "
				  "block_size; 4M for object storage" },
	{ .name = "max_inflight", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_PREFETCH, F(engine.max_inflight), .lo = 1,
	  .hi = 1024, .help = "fetch_size reads of the source in flight "
			      "at most; shorter ones (small files) up to 4x "
			      "as many within the same bytes; demand reads "
			      "first" },
	{ .name = "block_size", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.block_size), .lo = 4096,
	  .hi = 16 << 20, .flags = PF_OF_POW2, .help = "cache block" },
	{ .name = "min_window", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.min_window),
	  .given = offsetof(struct pf_opts, min_window_set), .lo = 64 << 10,
	  .help = "window while no batch is known; 16M for object storage" },
	{ .name = "max_window", .arg = "SIZE", .type = PF_OT_SIZE,
	  .group = PF_OG_PREFETCH, F(engine.max_window), .lo = 64 << 10,
	  .help = "largest window" },
	{ .name = "gap_ms", .arg = "MS", .type = PF_OT_FN,
	  .group = PF_OG_PREFETCH, NOFIELD, .lo = 0, .hi = 60000,
	  .set = set_gap_ms, .get = get_gap_ms,
	  .help = "idle milliseconds that end a burst of reads (a batch)" },
	{ .name = "max_streams", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_PREFETCH, F(engine.pattern.max_streams), .lo = 1,
	  .hi = 1024, .help = "reader streams tracked per file" },
	/* mount */
	{ .name = "cache_timeout", .arg = "S", .type = PF_OT_FN,
	  .group = PF_OG_MOUNT, NOFIELD, .set = set_cache_timeout,
	  .get = get_cache_timeout,
	  .help = "seconds the kernel may cache names and attributes: "
		  "entry_timeout and attr_timeout together" },
	{ .name = "entry_timeout", .arg = "S", .type = PF_OT_SECS,
	  .group = PF_OG_MOUNT, F(entry_timeout),
	  .help = "seconds the kernel may cache names" },
	{ .name = "attr_timeout", .arg = "S", .type = PF_OT_SECS,
	  .group = PF_OG_MOUNT, F(attr_timeout),
	  .help = "seconds the kernel may cache attributes" },
	{ .name = "keep_cache", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_MOUNT, F(keep_cache),
	  .help = "keep a file's page cache across opens; it is dropped "
		  "anyway when the file changed" },
	{ .name = "direct_io", .arg = "on|off", .type = PF_OT_BOOL,
	  .group = PF_OG_MOUNT, F(direct_io),
	  .help = "serve dataset files without the page cache: READs are "
		  "answered from the daemon's memory into the reader's buffer, "
		  "one copy; push is off whatever it says; shared mmap "
		  "(MAP_SHARED) of a file fails with ENODEV, MAP_PRIVATE "
		  "works; re-reads come from the daemon's cache, the disk "
		  "cache or the source" },
	{ .name = "readahead_kb", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_MOUNT, F(readahead_kb), .lo = 0, .hi = 1 << 20,
	  .help = "the mount's kernel read-ahead in KiB, which sets the READ "
		  "size; 0 keeps the kernel's 128, needs root" },
	{ .name = "max_threads", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_MOUNT, F(max_threads), .lo = 1, .hi = 1024,
	  .help = "FUSE worker threads" },
	{ .name = "io", .arg = "io_uring|pread", .type = PF_OT_FN,
	  .group = PF_OG_MOUNT, NOFIELD, .set = set_io, .get = get_io,
	  .choices = "io_uring or pread",
	  .help = "how a directory source is read; pread threads where "
		  "io_uring is not available" },
	{ .name = "nonempty", .arg = NULL, .type = PF_OT_BOOL,
	  .group = PF_OG_MOUNT, F(nonempty),
	  .help = "allow a MOUNTPOINT that is not empty, hiding its "
		  "files while mounted" },
	/* logs and traces */
	{ .name = "log_level", .arg = "LEVEL", .type = PF_OT_FN,
	  .group = PF_OG_LOG, NOFIELD, .set = set_log_level,
	  .get = get_log_level, .choices = "err, warn, info or debug",
	  .help = "err, warn, info or debug" },
	{ .name = "log_file", .arg = "FILE", .type = PF_OT_STR,
	  .group = PF_OG_LOG, F(log_file), .def = "syslog",
	  .help = "append the log to FILE instead of syslog, for "
		  "containers without one" },
	{ .name = "trace", .arg = "FILE", .type = PF_OT_STR,
	  .group = PF_OG_LOG, F(trace), .def = "none",
	  .help = "write a trace of reads, fetches and refills to FILE: "
		  "Chrome JSON for ui.perfetto.dev" },
	{ .name = "trace_seconds", .arg = "S", .type = PF_OT_SECS,
	  .group = PF_OG_LOG, F(trace_seconds), .flags = PF_OF_GT0,
	  .help = "trace the first S seconds of the mount" },
	/* object storage */
	{ .name = "endpoint", .arg = "URL", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(endpoint),
	  .def = "AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS",
	  .help = "S3 endpoint, http[s]://HOST[:PORT]" },
	{ .name = "region", .arg = "NAME", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(region),
	  .def = "AWS_REGION, AWS_DEFAULT_REGION, the profile's, else "
		 "us-east-1",
	  .help = "S3 region, for signing" },
	{ .name = "profile", .arg = "NAME", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(profile),
	  .def = "the AWS credential chain",
	  .help = "take the S3 credentials from this profile of "
		  "~/.aws/credentials or ~/.aws/config only: its keys, role, "
		  "process or SSO" },
	{ .name = "addressing", .arg = "path|virtual|auto", .type = PF_OT_FN,
	  .group = PF_OG_OBJECT, NOFIELD, .set = set_addressing,
	  .get = get_addressing, .choices = "path, virtual or auto",
	  .help = "S3 URL style; auto: virtual-hosted on AWS for buckets "
		  "without dots, path-style elsewhere" },
	{ .name = "no_sign", .arg = NULL, .type = PF_OT_BOOL,
	  .group = PF_OG_OBJECT, F(no_sign),
	  .help = "anonymous S3 requests, for public buckets" },
	{ .name = "manifest", .arg = "URL", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(manifest), .def = "the server's index",
	  .help = "HTTP: the file list, one 'PATH SIZE' a line; a name "
		  "is relative to SOURCE" },
	{ .name = "cacert", .arg = "FILE", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(cacert), .def = "the system's",
	  .help = "CA certificates for https, e.g. a private CA" },
	{ .name = "insecure", .arg = NULL, .type = PF_OT_BOOL,
	  .group = PF_OG_OBJECT, F(insecure),
	  .help = "do not verify TLS certificates" },
	{ .name = "connect_timeout", .arg = "S", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(connect_timeout), .lo = 1, .hi = 3600,
	  .help = "connect timeout in seconds" },
	{ .name = "timeout", .arg = "S", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(timeout), .lo = 1, .hi = 3600,
	  .help = "a request that receives nothing for S seconds fails" },
	{ .name = "retries", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(retries), .lo = 0, .hi = 100,
	  .help = "retries of a request failing with a connection error, "
		  "5xx, 429 or SlowDown; backoff from 100 ms doubling" },
	{ .name = "request_timeout", .arg = "S", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(request_timeout), .lo = 0, .hi = 86400,
	  .help = "a request's total time in seconds, retries and backoff "
		  "included, past which it fails with EIO, and what a READ "
		  "waits at most; 0: twice timeout plus 1 s per 256K "
		  "fetched" },
	{ .name = "revalidate", .arg = "S", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(revalidate), .lo = 0, .hi = 86400,
	  .help = "seconds a version the listing gave is pinned at open "
		  "without a HEAD; 0: a HEAD at every open" },
	{ .name = "list_ahead", .arg = "N", .type = PF_OT_UINT,
	  .group = PF_OG_OBJECT, F(list_ahead), .lo = 0, .hi = 1000000,
	  .help = "list up to N directories at mount, breadth first from "
		  "the source's root (its directories, then theirs), 8 at a "
		  "time (the mount waits 1 s at most, the rest go on in the "
		  "background), so that their first opens and listings make "
		  "no request; 0: each when first used" },
	{ .name = "url", .arg = "URL", .type = PF_OT_STR,
	  .group = PF_OG_OBJECT, F(endpoint), .alias = "endpoint",
	  .help = "s3fs's name for endpoint: the same option, the same "
		  "default" },
	/* the shared cache (docs/shared-cache.md) */
	{ .name = "shared_cache", .arg = "HOST:PORT[,...]", .type = PF_OT_FN,
	  .group = PF_OG_SHARED, NOFIELD, .set = set_shared_cache,
	  .get = get_shared_cache,
	  .choices = "HOST:PORT[,HOST:PORT...], @FILE or none",
	  .help = "a cache tier on memcached shared by the nodes of a "
		  "cluster, between the disk cache and the source: every node "
		  "gives the same servers, its own among them, and the same "
		  "shared_secret; @FILE: one server a line" },
	{ .name = "shared_secret", .arg = "FILE", .type = PF_OT_STR,
	  .group = PF_OG_SHARED, F(shared_secret), .def = "none",
	  .help = "the secret (16 bytes or more, a file no group or other "
		  "may read) the tier's keys and values are made with; needed "
		  "with shared_cache" },
	{ .name = "shared_self", .arg = "HOST:PORT", .type = PF_OT_FN,
	  .group = PF_OG_SHARED, NOFIELD, .set = set_shared_self,
	  .get = get_shared_self, .choices = "HOST:PORT or auto",
	  .help = "this node's memcached in the list (auto: the one server "
		  "of the list with a local address): the background fills "
		  "of the nodes read each piece from the source once, each "
		  "the pieces placed on its own server, and take the rest "
		  "from the tier" },
	{ .name = "shared_timeout", .arg = "MS", .type = PF_OT_UINT,
	  .group = PF_OG_SHARED, F(shared_timeout), .lo = 1, .hi = 60000,
	  .help = "milliseconds a memcached may take to connect or answer; "
		  "then the read goes to the source and a server that does "
		  "not connect is left alone, then ejected" },
	{ .name = "shared_lease", .arg = "MS", .type = PF_OT_UINT,
	  .group = PF_OG_SHARED, F(shared_lease), .lo = 0, .hi = 600000,
	  .help = "how long a node waits in the tier for a piece another "
		  "node is reading from the source, then reads it itself; "
		  "0: no leases" },
	/* FUSE's own */
	{ .name = "allow_other", .type = PF_OT_FUSE, .group = PF_OG_FUSE,
	  NOFIELD, .help = "let other users read the mount; implies "
			   "default_permissions, so the source's owners and "
			   "modes apply" },
	{ .name = "allow_root", .type = PF_OT_FUSE, .group = PF_OG_FUSE,
	  NOFIELD, .help = "let root read the mount too" },
	{ .name = "auto_unmount", .type = PF_OT_FUSE, .group = PF_OG_FUSE,
	  NOFIELD, .help = "unmount when the daemon dies, even by SIGKILL" },
	{ .name = "default_permissions", .type = PF_OT_FUSE,
	  .group = PF_OG_FUSE, NOFIELD,
	  .help = "the kernel checks owners and modes" },
	{ .name = "fsname", .arg = "NAME", .type = PF_OT_FUSE,
	  .group = PF_OG_FUSE, NOFIELD, .def = "SOURCE",
	  .help = "the name /proc/mounts shows" },
	{ .name = "subtype", .arg = "NAME", .type = PF_OT_FUSE,
	  .group = PF_OG_FUSE, NOFIELD, .def = "prefetchfs",
	  .help = "the type /proc/mounts shows after 'fuse.'" },
	{ .name = NULL },
};
