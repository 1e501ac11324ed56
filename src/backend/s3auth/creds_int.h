/*
 * creds_int.h - private to the credential chain (creds.c, creds_fetch.c):
 * the provider (struct pf_creds), a source of the chain (struct source),
 * their limits, and what each file lends the other.  Not part of the
 * library's interface: callers use pf_creds.h.
 *
 * DESIGN
 * See creds.c.  c->lock guards cur, fetched, the counters and the flags
 * (marked "under lock"); it is never held across I/O.  The source tree
 * is built once by pf_creds_new() and then only read.
 */
#ifndef PF_CREDS_INT_H
#define PF_CREDS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_creds.h"

#define DOC_MAX (64 * 1024)	/* largest answer of a source */
#define TOKEN_FILE_MAX (16 * 1024)
#define PROCESS_TIMEOUT_MS 60000
#define IMDS_TIMEOUT_MS 2000
#define HTTP_TIMEOUT_MS 10000
#define BACKOFF_MIN_S 1
#define BACKOFF_MAX_S 60
#define MAX_DEPTH 5		/* source_profile hops */

/* ---- the sources ---- */

enum src_kind {
	SRC_STATIC,	/* keys known at mount */
	SRC_WEBID,	/* AssumeRoleWithWebIdentity */
	SRC_ROLE,	/* AssumeRole with the credentials of base */
	SRC_PROCESS,	/* credential_process */
	SRC_SSO,	/* GetRoleCredentials with a cached SSO token */
	SRC_CONTAINER,	/* ECS task role, EKS Pod Identity */
	SRC_IMDS,	/* EC2 instance metadata */
};

struct source {
	enum src_kind kind;
	char desc[2048];
	struct pf_cred_val val;		/* SRC_STATIC */
	struct source *base;		/* SRC_ROLE */
	char role_arn[256];		/* SRC_WEBID, SRC_ROLE */
	char session_name[128];
	char external_id[256];
	char duration[16];
	char file[512];			/* SRC_WEBID: the token file */
	char cmd[1024];			/* SRC_PROCESS */
	char url[1024];			/* SRC_CONTAINER; SRC_IMDS, SRC_SSO
					 * and STS: the endpoint */
	char sso_start_url[512];	/* SRC_SSO */
	char sso_account[32];
	char sso_role[129];
	char sso_region[64];
	char profile[129];		/* SRC_SSO, SRC_PROCESS */
	bool imds_v1_off;		/* SRC_IMDS */
};

struct pf_creds {
	pf_env_fn env;
	char region[64];
	char *cacert;
	int insecure;
	unsigned margin_s;
	struct source *src;
	char desc[2048];

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* stop wakes the refresh thread */
	struct pf_cred_val cur;		/* under lock */
	int64_t fetched;		/* under lock: wall time of cur */
	bool anonymous;
	bool stop;			/* under lock */
	bool expired_logged;		/* under lock */
	unsigned refreshed;		/* under lock */
	unsigned failed;		/* under lock */
	pthread_t thread;
	bool started;
};

/* ---- creds_fetch.c: fetching from each source ---- */

int pf_creds_fetch_source(struct pf_creds *c, struct source *s,
	struct pf_cred_val *v, char *err, size_t errlen);

#endif
