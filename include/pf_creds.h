/*
 * pf_creds.h - AWS credentials for the S3 backend: the SDK's default
 * chain (environment, web identity, shared files, container, EC2 instance
 * metadata), kept fresh in the background, and the parsers of the answers
 * the credential sources give (STS XML, metadata and credential_process
 * JSON).
 *
 * A provider (struct pf_creds) is made once per mount with
 * pf_creds_new(), which finds the first source of the chain that answers
 * and fetches its credentials (blocking: it runs at mount, before FUSE
 * starts).  Temporary credentials (those with an expiry) are renewed by
 * the provider's own thread a margin before they expire; readers call
 * pf_creds_sign() for every request they send, retries included, and get
 * a copy of the current keys taken under the provider's lock, so a
 * rotation never tears a key pair and never waits on the network.
 *
 * Secrets: the copies pf_creds_sign() fills are the caller's to wipe
 * (pf_creds_sig_wipe()); nothing here logs a key, a token or a
 * web-identity token; error messages and the source description name
 * variables, files, profiles, role ARNs and endpoints, never values.
 *
 * Threads: pf_creds_sign() and pf_creds_source() may be called from any
 * thread at any time between pf_creds_new() and pf_creds_free().
 */
#ifndef PF_CREDS_H
#define PF_CREDS_H

#include <stddef.h>
#include <stdint.h>

#include "pf_s3conf.h"

/* ---- the parsers (pure; fuzzed by tests/fuzz/fuzz_creds.c) ---- */

/* One set of credentials.  Holds secrets: wipe it. */
struct pf_cred_val {
	char access_key[256];
	char secret_key[256];
	char session_token[4096];	/* "" if none */
	int64_t expiry;			/* Unix seconds; 0: never expires */
};

enum pf_cred_json {
	PF_CJSON_METADATA,	/* EC2 IMDS and container endpoints: Code,
				 * AccessKeyId, SecretAccessKey, Token,
				 * Expiration */
	PF_CJSON_PROCESS,	/* credential_process: Version 1,
				 * AccessKeyId, SecretAccessKey,
				 * SessionToken, Expiration */
	PF_CJSON_SSO,		/* SSO GetRoleCredentials: roleCredentials
				 * { accessKeyId, secretAccessKey,
				 * sessionToken, expiration (ms) } */
};

/*
 * Parses @len bytes of @buf (not NUL-terminated) as the JSON answer of
 * @kind into @v.  Returns 0, or -EINVAL (malformed JSON, a missing or
 * non-string field, a bad Expiration, a key with blanks or non-ASCII) or
 * -ENAMETOOLONG, with one line in err naming the field, never its value.
 * On error @v holds no secret.
 */
int pf_creds_parse_json(const char *buf, size_t len, enum pf_cred_json kind,
			struct pf_cred_val *v, char *err, size_t errlen);

/*
 * Parses an STS answer (AssumeRoleResponse or
 * AssumeRoleWithWebIdentityResponse, or an ErrorResponse) into @v.
 * Returns 0; -EACCES for an ErrorResponse, with "Code: Message" (cut
 * short, printable ASCII only) in err; -EINVAL for malformed XML,
 * missing fields, a DTD with entities or a bad Expiration.
 */
int pf_creds_parse_sts(const char *buf, size_t len, struct pf_cred_val *v,
		       char *err, size_t errlen);

/*
 * An SSO token cache file (~/.aws/sso/cache/HASH.json, as `aws sso
 * login` writes it): when its startUrl is @start_url, returns 0 with its
 * accessToken in @tok (a secret) and expiresAt in *expiry; -ENOENT for
 * another start URL; -EINVAL if it does not parse.
 */
int pf_creds_parse_sso_cache(const char *buf, size_t len,
			     const char *start_url, char *tok, size_t toklen,
			     int64_t *expiry, char *err, size_t errlen);

/* ISO 8601 UTC time ("2026-11-24T03:00:00Z", fractions and "+00:00"
 * accepted) to Unix seconds.  -EINVAL if it is not one. */
int pf_creds_parse_time(const char *s, int64_t *out);

/* ---- the provider ---- */

struct pf_creds;

struct pf_creds_cfg {
	pf_env_fn env;		/* NULL: getenv() */
	const char *profile;	/* -o profile=, NULL if not given */
	const char *region;	/* the bucket's region: STS and SSO */
	const char *cacert;	/* for https endpoints; NULL: system's */
	int insecure;
	/*
	 * Renew this long before expiry (0: PF_CREDS_MARGIN_S in the
	 * environment, else 300 s); never more than half the lifetime.
	 */
	unsigned margin_s;
};

/*
 * The credentials of one mount.  @conf is the resolved configuration:
 * when it already holds keys (from the environment or a profile's static
 * keys) or is anonymous, the provider just hands those out.  Otherwise
 * (conf->cred.chain) the chain goes on from web identity; the first
 * source that is configured is used, and its failure fails the mount (as
 * the SDKs do).  Returns 0, or -errno with one line in err: -ENOKEY when
 * no source has credentials (the line lists what was tried), -EACCES
 * when a source refused, -EIO / -ETIMEDOUT when it did not answer,
 * -EINVAL for an answer that does not parse.
 */
int pf_creds_new(const struct pf_s3_conf *conf, const struct pf_creds_cfg *cfg,
		 struct pf_creds **out, char *err, size_t errlen);

/* Stops the refresh thread, wipes and frees.  NULL is fine. */
void pf_creds_free(struct pf_creds *c);

/* What one request is signed with; a copy, wiped by the caller. */
struct pf_creds_sig {
	char userpwd[520];	/* "ACCESS_KEY:SECRET_KEY" */
	char token_hdr[4200];	/* "x-amz-security-token: T", or "" */
};

/*
 * Copies the current credentials into @s.  Returns 0; 1 if anonymous
 * (nothing to sign with); -EACCES once they have expired and no refresh
 * succeeded (logged once per expiry, naming the source).  Never blocks
 * on the network.
 */
int pf_creds_sign(struct pf_creds *c, struct pf_creds_sig *s);

void pf_creds_sig_wipe(struct pf_creds_sig *s);

/* Where the credentials come from, for logs ("EC2 instance metadata
 * (IMDSv2, role NAME)", ...).  No secrets. */
void pf_creds_source(struct pf_creds *c, char *out, size_t outlen);

/* Counts for tests and the log: refreshes done and failed. */
void pf_creds_counts(struct pf_creds *c, unsigned *refreshed,
		     unsigned *failed);

#endif
