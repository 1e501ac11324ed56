/*
 * backend_stack.c - the backend stack a mount reads through, built from
 * its options: the source's backend (a directory: posix; http(s)://: the
 * HTTP object store; s3://: S3), with -o shared_cache the shared tier
 * over it, and with -o cache_dir the disk cache over that (memory -> disk
 * cache -> shared tier -> store).  Called once by main() before the engine
 * exists.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend_stack.h"
#include "pf_diskcache.h"
#include "pf_objstore.h"
#include "pf_sharedcache.h"

enum src_kind pf_backend_stack_kind(const char *src)
{
	if (strncasecmp(src, "http://", 7) == 0 ||
	    strncasecmp(src, "https://", 8) == 0)
		return SRC_HTTP;
	if (strncasecmp(src, "s3://", 5) == 0)
		return SRC_S3;
	return SRC_POSIX;
}

/*
 * The backend for SOURCE; on failure prints one line and returns < 0.
 * @cachefd: the cache directory (checked), or -1.
 */
static int backend_new(const struct pf_opts *o, enum src_kind kind,
		       const char *src, int cachefd, struct pf_backend **be,
		       char *desc, size_t desclen)
{
	struct pf_posix_cfg pcfg = { 0 };
	struct pf_obj_cfg ocfg = { 0 };
	char listings[PATH_MAX + 32];
	char err[1024];
	int ret;

	if (kind == SRC_POSIX) {
		/* twice the engine's reads at once, 64 at least */
		pcfg.queue_depth = PF_ENGINE_MAX_REQUESTS(
			o->engine.max_inflight) * 2;
		if (pcfg.queue_depth < 64)
			pcfg.queue_depth = 64;
		pcfg.force_fallback = o->io_engine == 1;
		ret = pf_posix_backend_new(src, &pcfg, be);
		if (ret < 0) {
			fprintf(stderr, "prefetchfs: source '%s': %s\n",
				o->source, strerror(-ret));
			return ret;
		}
		snprintf(desc, desclen, "posix:%s (%s)", src,
			 pf_posix_backend_engine(*be));
		return 0;
	}
	/* a connection per read in flight, and a few for opens and lists */
	ocfg.max_conns = PF_ENGINE_MAX_REQUESTS(o->engine.max_inflight) + 4;
	ocfg.connect_timeout_ms = o->connect_timeout * 1000;
	ocfg.timeout_s = o->timeout;
	ocfg.retries = o->retries;
	ocfg.request_timeout_s = o->request_timeout;
	ocfg.revalidate_s = o->revalidate;
	ocfg.list_ahead = o->list_ahead;
	ocfg.list_max = o->engine.max_memory / 4;
	ocfg.backoff_ms = 100;
	ocfg.cacert = o->cacert[0] ? o->cacert : NULL;
	ocfg.insecure = o->insecure;
	ocfg.manifest = o->manifest[0] ? o->manifest : NULL;
	/* the shared tier serves a version's pieces without a GET: every
	 * node must name it the same, exactly (no listing's minute) */
	ocfg.exact_versions = o->shared_cache[0] != '\0';
	ocfg.s3.region = o->region[0] ? o->region : NULL;
	ocfg.s3.endpoint = o->endpoint[0] ? o->endpoint : NULL;
	ocfg.s3.profile = o->profile[0] ? o->profile : NULL;
	ocfg.s3.addressing = o->addressing[0] ? o->addressing : NULL;
	ocfg.s3.no_sign = o->no_sign;
	if (cachefd >= 0 && !o->manifest[0]) {
		/* the listings outlive the mount: one file per source, opened
		 * relative to the directory (the daemon changes to / once
		 * mounted, and the path could be changed under it) */
		uint64_t h = 1469598103934665603ull;

		for (const char *c = src; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		snprintf(listings, sizeof(listings), "%s/listings-%016" PRIx64,
			 o->cache_dir, h);
		ocfg.listings = listings;
		ocfg.listings_dirfd = cachefd;
	}
	if (ocfg.cacert && access(ocfg.cacert, R_OK) < 0) {
		fprintf(stderr, "prefetchfs: cacert '%s': %s\n", ocfg.cacert,
			strerror(errno));
		return -errno;
	}
	if (kind == SRC_HTTP) {
		if (o->endpoint[0] || o->region[0] || o->profile[0] ||
		    o->addressing[0] || o->no_sign) {
			fprintf(stderr, "prefetchfs: endpoint, region, "
					"profile, addressing and no_sign are "
					"for s3:// sources\n");
			return -EINVAL;
		}
		ret = pf_http_backend_new(src, &ocfg, be, err, sizeof(err));
	} else {
		if (o->manifest[0]) {
			fprintf(stderr, "prefetchfs: manifest is for "
					"http(s):// sources\n");
			return -EINVAL;
		}
		ret = pf_s3_backend_new(src, &ocfg, be, err, sizeof(err));
	}
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return ret;
	}
	snprintf(desc, desclen, "%s", pf_obj_backend_desc(*be));
	return 0;
}

/*
 * -o cache_dir: the disk cache over *be, its staging and index taken out
 * of max_memory.  On failure prints one line and returns < 0.
 */
static int diskcache_wrap(struct pf_opts *o, const char *src, int cachefd,
			  struct pf_backend **be)
{
	struct pf_engine_cfg *e = &o->engine;
	struct pf_diskcache_cfg dcfg = { .dir = o->cache_dir,
					 .dirfd = cachefd,
					 .source = src,
					 .size = o->cache_size };
	struct pf_backend *dbe;
	/* the least the memory cache works with (opts.c checks it) */
	uint64_t floor = 4 * e->fetch_size + 4 * (uint64_t)e->block_size;
	uint64_t dmem;
	char err[512];
	int ret;

	/* the index: an eighth of it (larger blocks if need be) */
	dcfg.index_max = e->max_memory / 8;
	dcfg.max_read = e->fetch_size;
	/* staging, inside max_memory: a tenth of it, no more than the
	 * fetches in flight fill, at least 4 fetches (a fetch finding no
	 * room bypasses the cache) */
	dcfg.staging = e->max_memory / 10;
	if (dcfg.staging > e->max_inflight * e->fetch_size)
		dcfg.staging = e->max_inflight * e->fetch_size;
	if (dcfg.staging < 4 * e->fetch_size)
		dcfg.staging = 4 * e->fetch_size;
	if (dcfg.staging > e->max_memory - floor)
		dcfg.staging = e->max_memory - floor + 1;

	ret = pf_diskcache_backend_new(*be, &dcfg, &dbe, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return ret;
	}
	*be = dbe;
	/* the disk tier's staging and index come out of max_memory */
	dmem = pf_diskcache_backend_memory(dbe);
	e->memory_aside = e->max_memory;
	e->max_memory = e->max_memory > floor + dmem ? e->max_memory - dmem :
						       floor;
	e->memory_aside = e->memory_aside > e->max_memory ?
				  e->memory_aside - e->max_memory : 0;
	return 0;
}

/*
 * -o shared_cache: the shared tier over *be (the store), its staging
 * inside max_memory.  On failure prints one line and returns < 0, *be
 * untouched.
 */
static int sharedcache_wrap(struct pf_opts *o, const char *src,
			    struct pf_backend **be, char *desc, size_t desclen)
{
	struct pf_engine_cfg *e = &o->engine;
	struct pf_sc_cfg cfg = { .servers = o->shared_cache,
				 .secret = o->shared_secret,
				 .self = o->shared_self[0] ? o->shared_self :
							     NULL,
				 .source = src,
				 .timeout_ms = o->shared_timeout,
				 .lease_ms = o->shared_lease };
	/* the least the memory cache works with (opts.c checks it) */
	uint64_t floor = 4 * e->fetch_size + 4 * (uint64_t)e->block_size;
	struct pf_backend *sbe;
	char err[512];
	uint64_t mem;
	size_t n;
	int ret;

	/* staging: as the disk cache's (a tenth of max_memory, at most the
	 * fetches in flight, at least 4), the store queue half of it */
	cfg.staging = e->max_memory / 10;
	if (cfg.staging > e->max_inflight * e->fetch_size)
		cfg.staging = e->max_inflight * e->fetch_size;
	if (cfg.staging < 4 * e->fetch_size + 2 * PF_SC_PIECE)
		cfg.staging = 4 * e->fetch_size + 2 * PF_SC_PIECE;
	cfg.queue = cfg.staging / 2;
	ret = pf_sc_backend_new(*be, &cfg, &sbe, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "prefetchfs: %s\n", err);
		return ret;
	}
	*be = sbe;
	mem = pf_sc_backend_memory(sbe);
	e->max_memory = e->max_memory > floor + mem ? e->max_memory - mem :
						      floor;
	n = strlen(desc);
	snprintf(desc + n, desclen - n, " + shared cache");
	return 0;
}

int pf_backend_stack_new(struct pf_opts *o, enum src_kind kind,
			 const char *src, struct pf_backend **be, char *desc,
			 size_t desclen)
{
	char err[512];
	int cachefd = -1;
	int ret;

	if (o->cache_dir[0]) {
		/* checked once, before the source is listed (it keeps the
		 * listings too); the store works in the directory checked,
		 * each user with a copy of the descriptor */
		cachefd = pf_dc_dir_open(o->cache_dir, err, sizeof(err));
		if (cachefd < 0) {
			fprintf(stderr, "prefetchfs: %s\n", err);
			return cachefd;
		}
	}
	ret = backend_new(o, kind, src, cachefd, be, desc, desclen);
	if (ret < 0)
		goto out;
	if (o->shared_cache[0])
		ret = sharedcache_wrap(o, src, be, desc, desclen);
	if (ret == 0 && cachefd >= 0)
		ret = diskcache_wrap(o, src, cachefd, be);
	if (ret < 0) {
		(*be)->ops->destroy(*be);
		*be = NULL;
	}
out:
	if (cachefd >= 0)
		close(cachefd);
	return ret;
}
