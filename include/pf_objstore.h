/*
 * pf_objstore.h - object-storage backends: a plain HTTP(S) server and S3,
 * both on one curl multi loop (pf_curl.h), behind the ops table of
 * pf_backend.h.
 *
 * Both constructors check the source before returning: they list its root
 * (or fetch the manifest), so an unreachable server, a missing bucket or
 * wrong credentials fail the mount with one line in err naming the cause
 * (never a secret).  After that the backend serves:
 *  - getattr/readdir from directory listings, each fetched once and kept
 *    (S3 ListObjectsV2 with delimiter and continuation tokens; the
 *    server's autoindex HTML or JSON; or the manifest, all at mount);
 *  - open with a HEAD that pins size, ETag and Last-Modified, or with no
 *    request at all when the listing gave the version (S3: ETag and size;
 *    nginx's JSON index: size and mtime) less than revalidate_s ago;
 *    what open pinned is what getattr says from then on;
 *  - reads as ranged GETs with If-Match, checked by the loop.
 * Objects have no symlinks (readlink: -EINVAL) and statfs knows no sizes.
 */
#ifndef PF_OBJSTORE_H
#define PF_OBJSTORE_H

#include <stddef.h>

#include "pf_backend.h"
#include "pf_curl.h"
#include "pf_s3conf.h"

struct pf_obj_cfg {
	unsigned max_conns;		/* connections at most */
	unsigned connect_timeout_ms;
	unsigned timeout_s;		/* a request with no byte this long */
	unsigned request_timeout_s;	/* a request's total time; 0: auto
					 * (pf_curl.h, Deadlines) */
	unsigned revalidate_s;		/* a version a listing gave pins an
					 * open without a HEAD this long;
					 * 0: every open HEADs */
	size_t list_max;		/* memory of the listings (and the
					 * manifest) at most; 0: 256 MiB.  A
					 * listing past it fails -ENOMEM */
	unsigned retries;
	unsigned backoff_ms;
	const char *cacert;		/* NULL: the system's CA store */
	int insecure;
	const char *manifest;		/* HTTP: manifest URL or name */
	struct pf_s3_opts s3;		/* S3: what -o gave */
	pf_env_fn env;			/* S3: NULL for getenv */
	unsigned list_ahead;		/* directories of the root listed
					 * at mount (objstore_ahead.c) */
	const char *listings;		/* NULL, or a file that keeps the
					 * listings across mounts (in
					 * -o cache_dir; objstore.c, DESIGN):
					 * its path, for messages */
	/*
	 * Non-zero: every open reports a version that changes with the
	 * object (a HEAD where the listing gave none), never the listing's
	 * size and minute pinned by the first GET: a shared cache tier
	 * keeps pieces by the version an open reports, and serves them
	 * without a GET.  (cache_dir implies it.)
	 */
	int exact_versions;
	int listings_dirfd;		/* with listings: its directory,
					 * checked (pf_dc_dir_open()); the
					 * file is opened relative to it */
};

/* @source: "http://host[:port]/prefix/" or https. */
int pf_http_backend_new(const char *source, const struct pf_obj_cfg *cfg,
			struct pf_backend **out, char *err, size_t errlen);
/* @source: "s3://bucket[/prefix]". */
int pf_s3_backend_new(const char *source, const struct pf_obj_cfg *cfg,
		      struct pf_backend **out, char *err, size_t errlen);

/* One line for the log and the stats file, no secrets. */
const char *pf_obj_backend_desc(const struct pf_backend *be);

#endif
