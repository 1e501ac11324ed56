/*
 * pf_sharedcache.h - a cache tier shared by the nodes of a cluster, on
 * memcached (docs/shared-cache.md is the deployment guide).
 *
 * Every node runs a memcached and a prefetchfs; every prefetchfs is given
 * the same list of servers (-o shared_cache) and the same secret
 * (-o shared_secret).  pf_sc_backend_new() is a backend decorator placed
 * between the local tiers and the store (memory -> disk cache -> shared
 * tier -> store): a read it gets is looked up in memcached first (one
 * multi-get for its pieces), what is missing comes from the store and is
 * stored in memcached in the background for the other nodes.
 *
 * A file is cut into pieces of PF_SC_PIECE bytes (its last one shorter), one
 * memcached item each: well under memcached's default item size (-I 1m).
 * PF_SC_PIECE is part of every key, so every node of a cluster uses the same.
 *
 * Trust: the items' keys and values are made with two keys derived from
 * the secret.  A key is an HMAC-SHA256 of (source, path, version, piece):
 * it reveals no path.  A value is the piece sealed with AES-256-GCM, the
 * key and the version (size, mtime) in its additional data, so a value
 * forged, corrupted, replayed under another key or for another version of
 * the file fails to open: it is counted, dropped, and the piece is read
 * from the store.  Whoever reads memcached's memory or the wire learns
 * sizes and access times, not a path or a byte of data.
 *
 * Errors: >= 0 on success, -errno on failure; functions given err write
 * one line there.
 */
#ifndef PF_SHAREDCACHE_H
#define PF_SHAREDCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pf_backend.h"

#define PF_SC_PIECE (512u << 10)
#define PF_SC_KEY_BYTES 32
/* a memcached key: one letter (what it names) and the key in hex */
#define PF_SC_KEY_TEXT (1 + 2 * PF_SC_KEY_BYTES)
/* a value: a format byte, the 12-byte nonce, the sealed piece, the tag */
#define PF_SC_SEAL_OVERHEAD (1 + 12 + 16)
/* the least a secret file holds */
#define PF_SC_SECRET_MIN 16
#define PF_SC_SERVERS_MAX 1024

/* The two keys of a secret: one names items, one seals their values. */
struct pf_sc_keys {
	uint8_t mac[32];
	uint8_t enc[32];
};

/* One version of one file, as the keys and the sealing see it. */
struct pf_sc_fid {
	uint8_t id[32];		/* HMAC of source, path, version */
	uint64_t size;
	int64_t mtime_s;
	int64_t mtime_ns;	/* object stores: a hash of the ETag */
};

/*
 * Reads the secret at @path: refused when the file is readable or
 * writable by group or others, holds fewer than PF_SC_SECRET_MIN bytes or
 * more than 64 KiB.  Trailing newlines do not count (echo, editors).
 */
int pf_sc_secret_load(const char *path, struct pf_sc_keys *k, char *err,
		      size_t errlen);
/* HKDF-SHA256 of @len bytes of secret into the two keys. */
int pf_sc_keys_derive(const void *secret, size_t len, struct pf_sc_keys *k);

void pf_sc_fid_of(const struct pf_sc_keys *k, const char *source,
		  const char *path, const struct stat *st,
		  struct pf_sc_fid *fid);
/* The key of piece @piece of @fid. */
void pf_sc_piece_key(const struct pf_sc_keys *k, const struct pf_sc_fid *fid,
		     uint64_t piece, uint8_t key[PF_SC_KEY_BYTES]);
/* @kind ('D' a piece, 'L' its lease) and the key in hex, NUL-terminated. */
void pf_sc_key_text(const uint8_t key[PF_SC_KEY_BYTES], char kind,
		    char out[PF_SC_KEY_TEXT + 1]);

/*
 * Seals @len bytes (at most PF_SC_PIECE) of piece @piece of @fid, whose
 * key is @key, into @out (room for @len + PF_SC_SEAL_OVERHEAD).  Returns
 * the value's length.  Any thread.
 */
int pf_sc_seal(const struct pf_sc_keys *k, const uint8_t key[PF_SC_KEY_BYTES],
	       const struct pf_sc_fid *fid, uint64_t piece, const void *plain,
	       uint32_t len, void *out);
/*
 * Opens value @val of @vlen bytes into @plain, which must receive exactly
 * @len bytes: -EBADMSG unless it was sealed with these keys for this key,
 * version, piece and length and is intact (@plain then holds garbage).
 */
int pf_sc_unseal(const struct pf_sc_keys *k,
		 const uint8_t key[PF_SC_KEY_BYTES],
		 const struct pf_sc_fid *fid, uint64_t piece, const void *val,
		 size_t vlen, void *plain, uint32_t len);

/* ---- the server list ---- */

struct pf_sc_server {
	char host[256];		/* a name, an IPv4 or an IPv6 address */
	unsigned port;
};

/*
 * "HOST:PORT[,HOST:PORT...]" (an IPv6 address in brackets: [::1]:11211)
 * into @out (room for @max); in a file (@FILE), one a line, with blanks
 * and '#' comments.  The same server twice is an error.
 */
int pf_sc_servers_parse(const char *list, struct pf_sc_server *out,
			unsigned max, unsigned *n, char *err, size_t errlen);
/* @spec is a list or "@FILE" (read now). */
int pf_sc_servers_load(const char *spec, struct pf_sc_server *out,
		       unsigned max, unsigned *n, char *err, size_t errlen);

/* ---- the backend decorator ---- */

struct pf_sc_cfg {
	const char *servers;	/* the option's value: a list or @FILE */
	const char *secret;	/* the secret's file */
	/*
	 * HOST:PORT of this node's own memcached in the list; NULL: the one
	 * server of the list with a local address, if exactly one has.
	 */
	const char *self;
	const char *source;	/* names the source in the keys */
	unsigned timeout_ms;	/* connect and I/O; 0: 5 */
	/* how long a node waits for a piece another node fetches; 0: no
	 * leases (every node that misses fetches) */
	unsigned lease_ms;
	uint64_t staging;	/* bytes of pieces being read; 0: 64 MiB */
	uint64_t queue;		/* bytes waiting to be stored; 0: 32 MiB */
};

/*
 * Wraps @inner.  On success the decorator owns @inner (its destroy()
 * destroys inner); on failure @inner is untouched and err holds one line
 * (a bad list, a secret refused).  Servers down at start are no error:
 * reads go to the store until they come up.
 */
int pf_sc_backend_new(struct pf_backend *inner, const struct pf_sc_cfg *cfg,
		      struct pf_backend **out, char *err, size_t errlen);
/* Memory the decorator holds at most (staging and the store queue). */
uint64_t pf_sc_backend_memory(const struct pf_backend *be);

#endif
