/*
 * pf_s3conf.h - where an s3:// source lives and who we are to it: bucket,
 * prefix, region, endpoint, addressing style and credentials, resolved
 * from the options and the usual AWS environment; and the URLs of its
 * objects and listings.
 *
 * Pure code apart from reading the AWS shared files: the environment is
 * read through an injected lookup function, so tests give their own.
 * Nothing here logs; secrets never leave struct pf_s3_cred (describe a
 * configuration with pf_s3_describe(), which names where credentials came
 * from, never their values).  No global state: any thread may call any
 * function here.
 *
 * The URLs are already encoded the way SigV4's canonical request wants
 * them, because curl 7.88 signs the path and query exactly as it finds
 * them in the URL.  Set CURLOPT_PATH_AS_IS on S3 handles: a key with a
 * "." or ".." component must reach the server unsquashed.
 */
#ifndef PF_S3CONF_H
#define PF_S3CONF_H

#include <stdbool.h>
#include <stddef.h>

/* What the user set with -o; NULL / 0 for "not given". */
struct pf_s3_opts {
	const char *region;	/* -o region= */
	const char *endpoint;	/* -o endpoint=URL (scheme://host[:port]) */
	const char *profile;	/* -o profile= */
	const char *addressing;	/* -o addressing=path|virtual|auto */
	int no_sign;		/* -o no_sign: anonymous requests */
};

struct pf_s3_cred {
	char access_key[256];
	char secret_key[256];
	char session_token[4096];	/* "" if none */
	int anonymous;
	/*
	 * 1: no keys here; the credential chain (pf_creds.h) goes on with
	 * web identity, the profile's role, process or SSO, the container
	 * and the instance metadata.  source is then "".
	 */
	int chain;
	/*
	 * For logs: "environment", "profile NAME in FILE" (either followed
	 * by ", with session token"), or "none (no_sign)".
	 */
	char source[512];
};

struct pf_s3_conf {
	char bucket[256];
	char prefix[1024];	/* "" or ending in '/', never starting '/' */
	char region[64];
	char endpoint[512];	/* scheme://host[:port], no trailing '/' */
	int path_style;		/* 1: endpoint/bucket/key; 0: bucket.host/key */
	struct pf_s3_cred cred;
};

/*
 * What the shared files say about one profile, as the credential chain
 * reads it (pf_s3_profile_read()).  Holds secrets: wipe it.
 */
struct pf_aws_profile {
	bool found;		/* the profile's section is in a file */
	bool other_creds;	/* role_arn, sso_*, credential_process... */
	char path[512];		/* the file it was found in (credentials
				 * file first) */
	char access_key[256];
	char secret_key[256];
	char session_token[4096];
	char region[64];
	char role_arn[256];
	char source_profile[129];
	char credential_source[64];
	char credential_process[1024];
	char web_identity_token_file[512];
	char role_session_name[128];
	char external_id[256];
	char duration_seconds[16];
	char sso_start_url[512];	/* from [sso-session] if not here */
	char sso_session[129];
	char sso_account_id[32];
	char sso_role_name[129];
	char sso_region[64];		/* from [sso-session] if not here */
};

/* getenv()-like; tests pass their own table.  NULL means getenv().
 * An empty value counts as unset, as for the AWS CLI. */
typedef const char *(*pf_env_fn)(const char *name);

/* @name's value from @env (getenv() when NULL); an unset and an empty
 * variable are both NULL, as for the AWS CLI. */
const char *pf_s3_env_get(pf_env_fn env, const char *name);

/*
 * Resolves @source ("s3://bucket[/prefix[/]]") with @o and the environment:
 *  - region: o->region, AWS_REGION, AWS_DEFAULT_REGION, the profile's
 *    "region" in the config file (AWS_CONFIG_FILE, else ~/.aws/config,
 *    section "[profile NAME]" or "[default]"), else "us-east-1";
 *  - endpoint: o->endpoint, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else
 *    https://s3.REGION.amazonaws.com;
 *  - addressing: "path" or "virtual" as given; "auto" (the default) is
 *    virtual-hosted on amazonaws.com endpoints for DNS-compatible bucket
 *    names without dots, path-style everywhere else;
 *  - credentials: none if o->no_sign; else, when o->profile is given,
 *    that profile (like the AWS CLI's --profile, it beats keys in the
 *    environment); else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
 *    (with AWS_SESSION_TOKEN) from the environment; else the profile
 *    (AWS_PROFILE, else "default").  A profile's keys
 *    (aws_access_key_id, aws_secret_access_key, aws_session_token) come
 *    from the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
 *    ~/.aws/credentials, section "[NAME]"), else from its section of
 *    the config file.  Where that finds no keys, out->cred.chain is set
 *    and pf_creds_new() goes on with the rest of the SDK's chain: when
 *    AWS_WEB_IDENTITY_TOKEN_FILE is set (and no keys are in the
 *    environment), the profile is not read for keys at all; a named
 *    profile (o->profile, AWS_PROFILE) with neither keys nor a role,
 *    process, SSO or web identity setting is an error (-ENOKEY).
 * The file variables may start with "~/".  A missing file is not an
 * error; a named profile (o->profile or AWS_PROFILE) that is in no file
 * is.  Returns 0, or -errno with one line in err (no secret in it):
 * -EINVAL for a bad source or option value, -ENOKEY for missing or
 * half-set credentials, -ENOENT for a named profile in no file,
 * -ENAMETOOLONG for a value too long for its field, or the error of
 * reading a file that exists.  On error out->cred holds no key.
 */
int pf_s3_resolve(const char *source, const struct pf_s3_opts *o,
		  pf_env_fn env, struct pf_s3_conf *out, char *err,
		  size_t errlen);

/*
 * Reads @profile from the shared credentials file then the config file
 * (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE, else ~/.aws/): keys from
 * the credentials file win; the other settings come from whichever file
 * has them, the credentials file first; sso_start_url and sso_region also
 * from the [sso-session NAME] its sso_session names.  Returns 0, -ENOENT
 * if no file has the profile (or its sso-session), or another -errno;
 * one line in err, no secret.
 */
int pf_s3_profile_read(pf_env_fn env, const char *profile,
		       struct pf_aws_profile *p, char *err, size_t errlen);

/*
 * AWS URI encoding: every byte but A-Z a-z 0-9 - _ . ~ becomes %XX
 * (upper-case hex); '/' is kept when keep_slash.  Returns the length of
 * the result, or -ENAMETOOLONG if it does not fit in outlen (NUL
 * included; out is then "").
 */
int pf_s3_uri_encode(const char *in, int keep_slash, char *out,
		     size_t outlen);

/*
 * URL of the object at @path (relative to the prefix; -EINVAL if "" or
 * starting with '/').  Returns the URL's length, or -ENAMETOOLONG if it
 * does not fit in outlen (out is then "").
 */
int pf_s3_object_url(const struct pf_s3_conf *c, const char *path, char *out,
		     size_t outlen);

/*
 * URL of one ListObjectsV2 page of the directory @dir (relative to the
 * prefix; "" for the prefix itself; -EINVAL if it starts or ends with
 * '/') with delimiter '/', starting at the continuation token @token
 * (NULL or "" for the first page).  The query is in SigV4 canonical
 * order (continuation-token, delimiter, list-type, max-keys, prefix),
 * every value URI-encoded ('/' too); max_keys 0 means 1000.
 * *list_prefix receives the S3 prefix the listing uses (prefix + dir +
 * "/" or just prefix), as pf_list_parse_s3() wants it.  Returns the
 * URL's length, or -ENAMETOOLONG if the URL or the prefix does not fit.
 */
int pf_s3_list_url(const struct pf_s3_conf *c, const char *dir,
		   const char *token, unsigned max_keys, char *out,
		   size_t outlen, char *list_prefix, size_t lplen);

/* "aws:amz:REGION:s3", for CURLOPT_AWS_SIGV4. */
void pf_s3_sigv4_param(const struct pf_s3_conf *c, char *out, size_t outlen);

/* One line for logs and the stats file: bucket, prefix, region, endpoint,
 * addressing, where the credentials came from.  No secrets. */
void pf_s3_describe(const struct pf_s3_conf *c, char *out, size_t outlen);

#endif
