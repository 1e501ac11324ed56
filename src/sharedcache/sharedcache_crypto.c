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
 * No state, no threads: every function may be called from any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
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
	hmac(k->mac, sizeof(k->mac), msg, (size_t)(p - msg), fid->id);
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
	hmac(k->mac, sizeof(k->mac), msg, (size_t)(p - msg), key);
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
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	aad_of(aad, key, fid, piece, len);
	o[0] = FORMAT;
	ok = RAND_bytes(o + 1, NONCE) == 1 &&
	     EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, k->enc,
				o + 1) == 1 &&
	     EVP_EncryptUpdate(ctx, NULL, &n, aad, AAD_LEN) == 1 &&
	     EVP_EncryptUpdate(ctx, o + 1 + NONCE, &n, plain, (int)len) == 1 &&
	     EVP_EncryptFinal_ex(ctx, o + 1 + NONCE + n, &n) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG,
				 o + 1 + NONCE + len) == 1;
	EVP_CIPHER_CTX_free(ctx);
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
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -ENOMEM;
	aad_of(aad, key, fid, piece, len);
	memcpy(tag, v + 1 + NONCE + len, TAG);
	ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, k->enc,
				v + 1) == 1 &&
	     EVP_DecryptUpdate(ctx, NULL, &n, aad, AAD_LEN) == 1 &&
	     EVP_DecryptUpdate(ctx, plain, &n, v + 1 + NONCE, (int)len) == 1 &&
	     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag) == 1 &&
	     EVP_DecryptFinal_ex(ctx, (uint8_t *)plain + n, &n) == 1;
	EVP_CIPHER_CTX_free(ctx);
	return ok ? 0 : -EBADMSG;
}
