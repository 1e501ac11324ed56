/*
 * sharedcache_crypto.c - the shared tier's keys and values: the secret
 * read and checked, the two keys derived from it, the items' keys (HMAC),
 * the values sealed and opened (AES-256-GCM), all through libcrypto.
 *
 * Keys.  HKDF-SHA256 (RFC 5869) of the secret gives a MAC key and an
 * encryption key.  A file's version is named by an HMAC of the source,
 * the path, the size and the mtime (with nanoseconds: object stores put a
 * hash of the ETag there), lengths first so no two inputs run together; a
 * piece's key is an HMAC of that, the piece size and the piece's index.
 * memcached sees "D" and the key in hex; a lease "L" and the same.
 *
 * Values.  A format byte (1), a random 12-byte nonce, the piece encrypted
 * with AES-256-GCM, its 16-byte tag.  The additional data binds the value
 * to where it belongs: the key, the version (size, mtime), the piece and
 * its length.  A value copied from another key, another version of the
 * file or another cluster's secret fails the tag.  Nonces are random: one
 * secret should seal fewer than 2^32 values (2 PiB of 512 KiB pieces).
 *
 * Contexts.  Each thread keeps its own libcrypto contexts (a pthread key,
 * freed when the thread ends): the HMAC keyed with the MAC key, and an
 * AES-256-GCM context each way keyed with the encryption key, so that a
 * piece's key, seal or opening sets up no context, fetches no algorithm
 * and expands no key (it did: 1.6 us a key and 1 us an opening, of a
 * 64 KiB hit's 20 us of AES-GCM).  A thread's contexts follow the keys it
 * was last given (two mounts in one process, tests: compared by bytes).
 * Every function may be called from any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pthread.h>
#include <stdbool.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "pf_sharedcache.h"

#define SECRET_MAX (64u << 10)
#define FORMAT 1
#define NONCE 12
#define TAG 16

static void hmac(const uint8_t *key, size_t klen, const void *msg,
		 size_t len, uint8_t out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, msg, len, out, &n);
}

/* ---- each thread's contexts ---- */

struct tctx {
	EVP_MAC_CTX *mac;	/* HMAC-SHA256 keyed with mac_key */
	uint8_t mac_key[32];
	EVP_CIPHER_CTX *enc;	/* AES-256-GCM keyed with enc_key, sealing */
	uint8_t enc_key[32];
	EVP_CIPHER_CTX *dec;	/* the same, opening */
	uint8_t dec_key[32];
};

static pthread_once_t tonce = PTHREAD_ONCE_INIT;
static pthread_key_t tkey;
static bool tkey_ok;
static EVP_MAC *hmac_alg;
static EVP_CIPHER *gcm_alg;

static void tctx_free(void *arg)
{
	struct tctx *c = arg;

	EVP_MAC_CTX_free(c->mac);
	EVP_CIPHER_CTX_free(c->enc);
	EVP_CIPHER_CTX_free(c->dec);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}

static void tonce_init(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
	gcm_alg = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
	tkey_ok = hmac_alg && gcm_alg && pthread_key_create(&tkey, tctx_free) == 0;
}

/* This thread's contexts; NULL: none to be had (the one-shot calls then). */
static struct tctx *tctx_get(void)
{
	struct tctx *c;

	pthread_once(&tonce, tonce_init);
	if (!tkey_ok)
		return NULL;
	c = pthread_getspecific(tkey);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (pthread_setspecific(tkey, c) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

/* This thread's HMAC keyed with @key (32 bytes), ready for input. */
static EVP_MAC_CTX *tctx_mac(const uint8_t key[32])
{
	struct tctx *c = tctx_get();
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end()
	};

	if (!c)
		return NULL;
	if (c->mac && memcmp(c->mac_key, key, 32) == 0)
		return EVP_MAC_init(c->mac, NULL, 0, NULL) == 1 ? c->mac : NULL;
	if (!c->mac)
		c->mac = EVP_MAC_CTX_new(hmac_alg);
	if (!c->mac || EVP_MAC_init(c->mac, key, 32, params) != 1) {
		EVP_MAC_CTX_free(c->mac);
		c->mac = NULL;
		return NULL;
	}
	memcpy(c->mac_key, key, 32);
	return c->mac;
}

/* This thread's AES-256-GCM context keyed with @key, sealing (@enc) or
 * opening, its nonce set to @iv. */
static EVP_CIPHER_CTX *tctx_gcm(const uint8_t key[32], bool enc,
				const uint8_t *iv)
{
	struct tctx *c = tctx_get();
	EVP_CIPHER_CTX **ctx;
	uint8_t *have;

	if (!c)
		return NULL;
	ctx = enc ? &c->enc : &c->dec;
	have = enc ? c->enc_key : c->dec_key;
	if (!*ctx || memcmp(have, key, 32) != 0) {
		if (!*ctx)
			*ctx = EVP_CIPHER_CTX_new();
		if (!*ctx || EVP_CipherInit_ex2(*ctx, gcm_alg, key, NULL,
						enc, NULL) != 1) {
			EVP_CIPHER_CTX_free(*ctx);
			*ctx = NULL;
			return NULL;
		}
		memcpy(have, key, 32);
	}
	/* the key schedule stays; the nonce (and GCM's state) anew */
	return EVP_CipherInit_ex2(*ctx, NULL, NULL, iv, enc, NULL) == 1 ? *ctx :
									   NULL;
}

/* A MAC-keyed HMAC-SHA256 of @msg: this thread's context, or one-shot. */
static void hmac_keyed(const uint8_t key[32], const void *msg, size_t len,
		       uint8_t out[32])
{
	EVP_MAC_CTX *m = tctx_mac(key);
	size_t n = 0;

	if (m && EVP_MAC_update(m, msg, len) == 1 &&
	    EVP_MAC_final(m, out, &n, 32) == 1 && n == 32)
		return;
	hmac(key, 32, msg, len, out);
}

int pf_sc_keys_derive(const void *secret, size_t len, struct pf_sc_keys *k)
{
	static const char salt[] = "prefetchfs shared cache 1";
	uint8_t prk[32];
	uint8_t msg[4];

	if (len < PF_SC_SECRET_MIN)
		return -EINVAL;
	/* HKDF-Extract, then one block of HKDF-Expand per key */
	hmac((const uint8_t *)salt, sizeof(salt) - 1, secret, len, prk);
	memcpy(msg, "mac\1", 4);
	hmac(prk, sizeof(prk), msg, 4, k->mac);
	memcpy(msg, "enc\1", 4);
	hmac(prk, sizeof(prk), msg, 4, k->enc);
	OPENSSL_cleanse(prk, sizeof(prk));
	return 0;
}

int pf_sc_secret_load(const char *path, struct pf_sc_keys *k, char *err,
		      size_t errlen)
{
	uint8_t buf[SECRET_MAX + 1];
	struct stat st;
	size_t len = 0;
	int ret = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "shared_secret '%s': %s", path,
			 strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "shared_secret '%s': %s", path,
			 strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "shared_secret '%s': not a regular file",
			 path);
		ret = -EINVAL;
		goto out;
	}
	if (st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "shared_secret '%s' is %s by group or "
			 "others (mode %04o): chmod 600 it", path,
			 st.st_mode & (S_IRGRP | S_IROTH) ? "readable" :
			 "writable", (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "shared_secret '%s': %s", path,
				 strerror(-ret));
			goto out;
		}
		if (n == 0 || len + (size_t)n >= sizeof(buf)) {
			len += (size_t)n;
			break;
		}
		len += (size_t)n;
	}
	if (len > SECRET_MAX) {
		snprintf(err, errlen, "shared_secret '%s': more than 64 KiB: "
			 "not a secret file", path);
		ret = -EFBIG;
		goto out;
	}
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	if (len < PF_SC_SECRET_MIN) {
		snprintf(err, errlen, "shared_secret '%s' holds %zu bytes: at "
			 "least %u, e.g. head -c 32 /dev/urandom >FILE", path,
			 len, PF_SC_SECRET_MIN);
		ret = -EINVAL;
		goto out;
	}
	pf_sc_keys_derive(buf, len, k);
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	close(fd);
	return ret;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(v >> (56 - 8 * i));
	return p;
}

static uint8_t *put_str(uint8_t *p, const char *s, size_t n)
{
	p = put64(p, n);
	memcpy(p, s, n);
	return p + n;
}

void pf_sc_fid_of(const struct pf_sc_keys *k, const char *source,
		  const char *path, const struct stat *st,
		  struct pf_sc_fid *fid)
{
	size_t ns = strlen(source);
	size_t np = strlen(path);
	size_t cap = 5 + 8 + ns + 8 + np + 24;
	uint8_t small[1024];
	uint8_t *msg = cap <= sizeof(small) ? small : malloc(cap);
	uint8_t *p;

	fid->size = (uint64_t)st->st_size;
	fid->mtime_s = (int64_t)st->st_mtim.tv_sec;
	fid->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
	if (!msg) {
		/* no memory for a long path: a key no other file has */
		RAND_bytes(fid->id, sizeof(fid->id));
		return;
	}
	p = msg;
	memcpy(p, "file", 5);	/* with its NUL */
	p += 5;
	p = put_str(p, source, ns);
	p = put_str(p, path, np);
	p = put64(p, fid->size);
	p = put64(p, (uint64_t)fid->mtime_s);
	p = put64(p, (uint64_t)fid->mtime_ns);
	hmac_keyed(k->mac, msg, (size_t)(p - msg), fid->id);
	if (msg != small)
		free(msg);
}

void pf_sc_piece_key(const struct pf_sc_keys *k, const struct pf_sc_fid *fid,
		     uint64_t piece, uint8_t key[PF_SC_KEY_BYTES])
{
	uint8_t msg[6 + 32 + 16];
	uint8_t *p = msg;

	memcpy(p, "piece", 6);
	p += 6;
	memcpy(p, fid->id, 32);
	p += 32;
	p = put64(p, PF_SC_PIECE);
	p = put64(p, piece);
	hmac_keyed(k->mac, msg, (size_t)(p - msg), key);
}

void pf_sc_key_text(const uint8_t key[PF_SC_KEY_BYTES], char kind,
		    char out[PF_SC_KEY_TEXT + 1])
{
	static const char hex[] = "0123456789abcdef";

	out[0] = kind;
	for (int i = 0; i < PF_SC_KEY_BYTES; i++) {
		out[1 + 2 * i] = hex[key[i] >> 4];
		out[2 + 2 * i] = hex[key[i] & 15];
	}
	out[PF_SC_KEY_TEXT] = '\0';
}

#define AAD_LEN (6 + 32 + 8 * 4 + 4)

static void aad_of(uint8_t aad[AAD_LEN], const uint8_t key[PF_SC_KEY_BYTES],
		   const struct pf_sc_fid *fid, uint64_t piece, uint32_t len)
{
	uint8_t *p = aad;

	memcpy(p, "value", 6);
	p += 6;
	memcpy(p, key, PF_SC_KEY_BYTES);
	p += PF_SC_KEY_BYTES;
	p = put64(p, fid->size);
	p = put64(p, (uint64_t)fid->mtime_s);
	p = put64(p, (uint64_t)fid->mtime_ns);
	p = put64(p, piece);
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(len >> (24 - 8 * i));
}

int pf_sc_seal(const struct pf_sc_keys *k, const uint8_t key[PF_SC_KEY_BYTES],
	       const struct pf_sc_fid *fid, uint64_t piece, const void *plain,
	       uint32_t len, void *out)
{
	uint8_t aad[AAD_LEN];
	uint8_t *o = out;
	EVP_CIPHER_CTX *ctx;
	int n = 0;
	int ok;

	if (len > PF_SC_PIECE)
		return -EINVAL;
	aad_of(aad, key, fid, piece, len);
	o[0] = FORMAT;
	if (RAND_bytes(o + 1, NONCE) != 1)
		return -EIO;
	ctx = tctx_gcm(k->enc, true, o + 1);
	if (!ctx)
		return -ENOMEM;
	ok = EVP_EncryptUpdate(ctx, NULL, &n, aad, AAD_LEN) == 1 &&
	     EVP_EncryptUpdate(ctx, o + 1 + NONCE, &n, plain, (int)len) == 1 &&
	     EVP_EncryptFinal_ex(ctx, o + 1 + NONCE + n, &n) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG,
				 o + 1 + NONCE + len) == 1;
	return ok ? (int)(len + PF_SC_SEAL_OVERHEAD) : -EIO;
}

int pf_sc_unseal(const struct pf_sc_keys *k,
		 const uint8_t key[PF_SC_KEY_BYTES],
		 const struct pf_sc_fid *fid, uint64_t piece, const void *val,
		 size_t vlen, void *plain, uint32_t len)
{
	uint8_t aad[AAD_LEN];
	uint8_t tag[TAG];
	const uint8_t *v = val;
	EVP_CIPHER_CTX *ctx;
	int n = 0;
	int ok;

	if (vlen != (size_t)len + PF_SC_SEAL_OVERHEAD || v[0] != FORMAT ||
	    len > PF_SC_PIECE)
		return -EBADMSG;
	ctx = tctx_gcm(k->enc, false, v + 1);
	if (!ctx)
		return -ENOMEM;
	aad_of(aad, key, fid, piece, len);
	memcpy(tag, v + 1 + NONCE + len, TAG);
	ok = EVP_DecryptUpdate(ctx, NULL, &n, aad, AAD_LEN) == 1 &&
	     EVP_DecryptUpdate(ctx, plain, &n, v + 1 + NONCE, (int)len) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag) == 1 &&
	     EVP_DecryptFinal_ex(ctx, (uint8_t *)plain + n, &n) == 1;
	return ok ? 0 : -EBADMSG;
}
