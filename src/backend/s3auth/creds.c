/*
 * creds.c - the AWS default credential chain and its renewal: finds where
 * an S3 mount's credentials come from (environment, web identity, the
 * shared files' roles, processes and SSO, container endpoints, EC2
 * instance metadata) in the order the AWS SDKs use, fetches them, and
 * renews temporary ones in the background before they expire.  This
 * file builds the chain, runs the refresh thread and is the provider;
 * creds_fetch.c fetches from each source (HTTP exchanges, files,
 * processes), creds_parse.c parses the answers.
 *
 * DESIGN
 * pf_creds_new() runs on the mounting thread: it builds the chain from
 * the environment and the shared files (pf_s3_profile_read()), fetches
 * from the first configured source (blocking, bounded by short
 * timeouts) and, when the credentials expire, starts one refresh thread.
 * That thread sleeps on c->cond (CLOCK_MONOTONIC) until a margin before
 * expiry, fetches new credentials with no lock held (plain curl easy
 * handles: no redirects, short timeouts), then swaps them in under
 * c->lock.  A failed renewal is logged and retried with a backoff that
 * doubles from 1 s to 60 s; the old credentials stay in use until they
 * expire, after which pf_creds_sign() answers -EACCES (logged once per
 * expiry, naming the source) until a renewal succeeds.
 *
 * c->lock guards cur, expiry, fetched, the counters and the flags; it is
 * held only to copy or swap credentials, never across I/O, so a reader
 * signing a request never waits on the network.  The source tree
 * (struct source) is built once and then only read by the refresh
 * thread (and, before it starts, by pf_creds_new()).
 *
 * Secrets are held in struct pf_cred_val (wiped when replaced or freed)
 * and in the request bodies and headers of one pf_creds_fetch_source (wiped
 * after it). Logs and error messages name the source, its file, profile, role
 * ARN or endpoint, never a key, a token or the web identity token.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pf_err.h"
#include "pf_clock.h"
#include "pf_creds.h"
#include "pf_log.h"
#include "creds_int.h"

static void src_free(struct source *s)
{
	while (s) {
		struct source *b = s->base;

		explicit_bzero(s, sizeof(*s));
		free(s);
		s = b;
	}
}

static struct source *src_new(enum src_kind kind)
{
	struct source *s = calloc(1, sizeof(*s));

	if (s)
		s->kind = kind;
	return s;
}

/* ---- building the chain ---- */

static void session_name(pf_env_fn env, char *out, size_t outlen)
{
	const char *n = pf_s3_env_get(env, "AWS_ROLE_SESSION_NAME");

	if (n)
		snprintf(out, outlen, "%s", n);
	else
		snprintf(out, outlen, "prefetchfs-%lld",
			 (long long)time(NULL));
}

static struct source *webid_from_env(pf_env_fn env, char *err,
				     size_t errlen, int *ret)
{
	const char *file = pf_s3_env_get(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *arn = pf_s3_env_get(env, "AWS_ROLE_ARN");
	struct source *s;

	*ret = 0;
	if (!file)
		return NULL;
	if (!arn) {
		pf_err_set(err, errlen,
			"AWS_WEB_IDENTITY_TOKEN_FILE is set but "
			"AWS_ROLE_ARN is not: set both for web identity");
		*ret = -ENOKEY;
		return NULL;
	}
	s = src_new(SRC_WEBID);
	if (!s) {
		*ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->file, sizeof(s->file), "%s", file);
	snprintf(s->role_arn, sizeof(s->role_arn), "%s", arn);
	session_name(env, s->session_name, sizeof(s->session_name));
	snprintf(s->desc, sizeof(s->desc), "web identity (role %s, token file "
		 "%s, from AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN)", arn,
		 file);
	return s;
}

/* Container endpoint from the environment; NULL if none is set. */
static struct source *container_from_env(pf_env_fn env, char *err,
					 size_t errlen, int *ret)
{
	const char *rel = pf_s3_env_get(env,
				  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full =
		pf_s3_env_get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
	struct source *s;

	*ret = 0;
	if (!rel && !full)
		return NULL;
	s = src_new(SRC_CONTAINER);
	if (!s) {
		*ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
		return NULL;
	}
	if (rel) {
		snprintf(s->url, sizeof(s->url), "http://169.254.170.2%s%s",
			 rel[0] == '/' ? "" : "/", rel);
		snprintf(s->desc, sizeof(s->desc), "container credentials "
			 "(%s, from AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)",
			 s->url);
		return s;
	}
	/*
	 * Over plain http, only hosts on the machine or the link-local
	 * ECS and EKS agents, as the SDKs allow: the answer is credentials.
	 */
	if (strncasecmp(full, "https://", 8) != 0) {
		static const char *const ok[] = {
			"http://127.", "http://localhost:", "http://localhost/",
			"http://[::1]", "http://169.254.170.2:",
			"http://169.254.170.2/", "http://169.254.170.23:",
			"http://169.254.170.23/", "http://[fd00:ec2::23]",
			NULL,
		};
		bool good = false;

		for (const char *const *p = ok; *p; p++)
			if (strncasecmp(full, *p, strlen(*p)) == 0)
				good = true;
		if (!good) {
			pf_err_set(err, errlen, "AWS_CONTAINER_CREDENTIALS_"
			       "FULL_URI must be https, or http to a "
			       "loopback address or the ECS/EKS agent "
			       "(169.254.170.2, 169.254.170.23)");
			*ret = -EINVAL;
			free(s);
			return NULL;
		}
	}
	snprintf(s->url, sizeof(s->url), "%s", full);
	snprintf(s->desc, sizeof(s->desc), "container credentials (%s, from "
		 "AWS_CONTAINER_CREDENTIALS_FULL_URI)", full);
	return s;
}

static bool is_true(const char *v)
{
	return v && strcasecmp(v, "true") == 0;
}

static struct source *imds_from_env(pf_env_fn env, int *ret, char *err,
				    size_t errlen)
{
	const char *ep =
		pf_s3_env_get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct source *s;
	size_t n;

	*ret = 0;
	if (is_true(pf_s3_env_get(env, "AWS_EC2_METADATA_DISABLED")))
		return NULL;
	s = src_new(SRC_IMDS);
	if (!s) {
		*ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->url, sizeof(s->url), "%s", ep ? ep :
		 "http://169.254.169.254");
	n = strlen(s->url);
	while (n && s->url[n - 1] == '/')
		s->url[--n] = '\0';
	s->imds_v1_off =
		is_true(pf_s3_env_get(env, "AWS_EC2_METADATA_V1_DISABLED"));
	snprintf(s->desc, sizeof(s->desc), "EC2 instance metadata (%s)",
		 s->url);
	return s;
}

static struct source *from_profile(struct pf_creds *c, const char *name,
				   int depth, char *err, size_t errlen,
				   int *ret);

/* The credentials a role is assumed with: source_profile or
 * credential_source. */
static struct source *role_base(struct pf_creds *c,
				const struct pf_aws_profile *p,
				const char *name, int depth, char *err,
				size_t errlen, int *ret)
{
	struct source *b = NULL;

	if (p->source_profile[0] && p->credential_source[0]) {
		pf_err_set(err, errlen,
			"AWS profile '%s' has both source_profile "
			"and credential_source: keep one",
			name);
		*ret = -EINVAL;
		return NULL;
	}
	if (p->source_profile[0]) {
		/* a profile that is its own source uses its static keys */
		if (strcmp(p->source_profile, name) == 0) {
			if (!p->access_key[0] || !p->secret_key[0]) {
				pf_err_set(err, errlen,
					"AWS profile '%s' is its "
					"own source_profile but has no keys",
					name);
				*ret = -ENOKEY;
				return NULL;
			}
			b = src_new(SRC_STATIC);
			if (!b)
				goto nomem;
			snprintf(b->val.access_key, sizeof(b->val.access_key),
				 "%s", p->access_key);
			snprintf(b->val.secret_key, sizeof(b->val.secret_key),
				 "%s", p->secret_key);
			snprintf(b->val.session_token,
				 sizeof(b->val.session_token), "%s",
				 p->session_token);
			snprintf(b->desc, sizeof(b->desc), "keys of profile "
				 "%s in %s", name, p->path);
			return b;
		}
		return from_profile(c, p->source_profile, depth + 1, err,
				    errlen, ret);
	}
	if (strcasecmp(p->credential_source, "Environment") == 0) {
		const char *ak = pf_s3_env_get(c->env, "AWS_ACCESS_KEY_ID");
		const char *sk = pf_s3_env_get(c->env, "AWS_SECRET_ACCESS_KEY");
		const char *tk = pf_s3_env_get(c->env, "AWS_SESSION_TOKEN");

		if (!ak || !sk) {
			pf_err_set(err, errlen, "AWS profile '%s': "
			       "credential_source Environment, but "
			       "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
			       "are not both set", name);
			*ret = -ENOKEY;
			return NULL;
		}
		b = src_new(SRC_STATIC);
		if (!b)
			goto nomem;
		snprintf(b->val.access_key, sizeof(b->val.access_key), "%s",
			 ak);
		snprintf(b->val.secret_key, sizeof(b->val.secret_key), "%s",
			 sk);
		snprintf(b->val.session_token, sizeof(b->val.session_token),
			 "%s", tk ? tk : "");
		snprintf(b->desc, sizeof(b->desc), "environment");
		return b;
	}
	if (strcasecmp(p->credential_source, "Ec2InstanceMetadata") == 0) {
		b = imds_from_env(c->env, ret, err, errlen);
		if (!b && !*ret) {
			pf_err_set(err, errlen, "AWS profile '%s': "
			       "credential_source Ec2InstanceMetadata, but "
			       "AWS_EC2_METADATA_DISABLED is true", name);
			*ret = -ENOKEY;
		}
		return b;
	}
	if (strcasecmp(p->credential_source, "EcsContainer") == 0) {
		b = container_from_env(c->env, err, errlen, ret);
		if (!b && !*ret) {
			pf_err_set(err, errlen, "AWS profile '%s': "
			       "credential_source EcsContainer, but no "
			       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or "
			       "_FULL_URI is set", name);
			*ret = -ENOKEY;
		}
		return b;
	}
	pf_err_set(err, errlen, "AWS profile '%s' has role_arn but %s", name,
	       p->credential_source[0] ? "an unknown credential_source "
	       "(Environment, Ec2InstanceMetadata or EcsContainer)" :
	       "neither source_profile nor credential_source");
	*ret = -EINVAL;
	return NULL;
nomem:
	pf_err_set(err, errlen, "out of memory");
	*ret = -ENOMEM;
	return NULL;
}

static struct source *no_memory(char *err, size_t errlen, int *ret)
{
	pf_err_set(err, errlen, "out of memory");
	*ret = -ENOMEM;
	return NULL;
}

/* role_arn with web_identity_token_file: AssumeRoleWithWebIdentity */
static struct source *webid_from_prof(struct pf_creds *c,
				      const struct pf_aws_profile *p,
				      const char *name, char *err,
				      size_t errlen, int *ret)
{
	struct source *s = src_new(SRC_WEBID);

	if (!s)
		return no_memory(err, errlen, ret);
	snprintf(s->file, sizeof(s->file), "%s", p->web_identity_token_file);
	snprintf(s->role_arn, sizeof(s->role_arn), "%s", p->role_arn);
	if (p->role_session_name[0])
		snprintf(s->session_name, sizeof(s->session_name), "%s",
			 p->role_session_name);
	else
		session_name(c->env, s->session_name, sizeof(s->session_name));
	snprintf(s->duration, sizeof(s->duration), "%s", p->duration_seconds);
	snprintf(s->desc, sizeof(s->desc), "web identity (role %s, "
		 "token file %s, profile %s in %s)", p->role_arn,
		 p->web_identity_token_file, name, p->path);
	return s;
}

/* role_arn: AssumeRole with the credentials of role_base() */
static struct source *role_from_prof(struct pf_creds *c,
				     const struct pf_aws_profile *p,
				     const char *name, int depth, char *err,
				     size_t errlen, int *ret)
{
	struct source *b = role_base(c, p, name, depth, err, errlen, ret);
	struct source *s;

	if (!b)
		return NULL;
	s = src_new(SRC_ROLE);
	if (!s) {
		src_free(b);
		return no_memory(err, errlen, ret);
	}
	s->base = b;
	snprintf(s->role_arn, sizeof(s->role_arn), "%s", p->role_arn);
	if (p->role_session_name[0])
		snprintf(s->session_name, sizeof(s->session_name), "%s",
			 p->role_session_name);
	else
		session_name(c->env, s->session_name, sizeof(s->session_name));
	snprintf(s->external_id, sizeof(s->external_id), "%s",
		 p->external_id);
	snprintf(s->duration, sizeof(s->duration), "%s", p->duration_seconds);
	snprintf(s->desc, sizeof(s->desc), "role %s of profile %s in "
		 "%s (AssumeRole with %.200s)", p->role_arn, name, p->path,
		 b->desc);
	return s;
}

/* sso_*: the SSO portal's role credentials */
static struct source *sso_from_prof(struct pf_creds *c,
				    const struct pf_aws_profile *p,
				    const char *name, char *err,
				    size_t errlen, int *ret)
{
	struct source *s;

	if (!p->sso_start_url[0] || !p->sso_account_id[0] ||
	    !p->sso_role_name[0] ||
	    (!p->sso_region[0] &&
	     !pf_s3_env_get(c->env, "AWS_ENDPOINT_URL_SSO"))) {
		pf_err_set(err, errlen, "AWS profile '%s' is an SSO "
		       "profile without sso_start_url, "
		       "sso_account_id, sso_role_name and "
		       "sso_region (in it or its sso-session)", name);
		*ret = -EINVAL;
		return NULL;
	}
	s = src_new(SRC_SSO);
	if (!s)
		return no_memory(err, errlen, ret);
	snprintf(s->profile, sizeof(s->profile), "%s", name);
	snprintf(s->sso_start_url, sizeof(s->sso_start_url), "%s",
		 p->sso_start_url);
	snprintf(s->sso_account, sizeof(s->sso_account), "%s",
		 p->sso_account_id);
	snprintf(s->sso_role, sizeof(s->sso_role), "%s", p->sso_role_name);
	if (pf_s3_env_get(c->env, "AWS_ENDPOINT_URL_SSO"))
		snprintf(s->url, sizeof(s->url), "%s",
			 pf_s3_env_get(c->env, "AWS_ENDPOINT_URL_SSO"));
	else
		snprintf(s->url, sizeof(s->url), "https://portal.sso."
			 "%s.amazonaws.com", p->sso_region);
	snprintf(s->desc, sizeof(s->desc), "SSO (role %s of account "
		 "%s, profile %s in %s)", p->sso_role_name,
		 p->sso_account_id, name, p->path);
	return s;
}

/* credential_process */
static struct source *process_from_prof(const struct pf_aws_profile *p,
					const char *name, char *err,
					size_t errlen, int *ret)
{
	struct source *s = src_new(SRC_PROCESS);

	if (!s)
		return no_memory(err, errlen, ret);
	snprintf(s->profile, sizeof(s->profile), "%s", name);
	snprintf(s->cmd, sizeof(s->cmd), "%s", p->credential_process);
	snprintf(s->desc, sizeof(s->desc), "credential_process of "
		 "profile %s in %s", name, p->path);
	return s;
}

/* aws_access_key_id and aws_secret_access_key */
static struct source *keys_from_prof(const struct pf_aws_profile *p,
				     const char *name, char *err,
				     size_t errlen, int *ret)
{
	struct source *s = src_new(SRC_STATIC);

	if (!s)
		return no_memory(err, errlen, ret);
	memcpy(s->val.access_key, p->access_key, sizeof(s->val.access_key));
	memcpy(s->val.secret_key, p->secret_key, sizeof(s->val.secret_key));
	memcpy(s->val.session_token, p->session_token,
	       sizeof(s->val.session_token));
	snprintf(s->desc, sizeof(s->desc), "keys of profile %s in %s", name,
		 p->path);
	return s;
}

/*
 * The source profile @name leads to, @depth source_profile hops from the
 * first; NULL with *ret < 0 (said in @err) if it leads nowhere.
 */
static struct source *from_profile(struct pf_creds *c, const char *name,
				   int depth, char *err, size_t errlen,
				   int *ret)
{
	struct pf_aws_profile *p = calloc(1, sizeof(*p));
	struct source *s = NULL;

	*ret = 0;
	if (!p)
		return no_memory(err, errlen, ret);
	if (depth > MAX_DEPTH) {
		pf_err_set(err, errlen, "AWS profile '%s': more than %d "
		       "source_profile hops (a loop?)", name, MAX_DEPTH);
		*ret = -ELOOP;
		goto out;
	}
	*ret = pf_s3_profile_read(c->env, name, p, err, errlen);
	if (*ret < 0)
		goto out;
	if (p->role_arn[0] && p->web_identity_token_file[0]) {
		s = webid_from_prof(c, p, name, err, errlen, ret);
	} else if (p->role_arn[0]) {
		s = role_from_prof(c, p, name, depth, err, errlen, ret);
	} else if (p->web_identity_token_file[0]) {
		pf_err_set(err, errlen, "AWS profile '%s' has "
		       "web_identity_token_file but no role_arn", name);
		*ret = -EINVAL;
	} else if (p->sso_start_url[0] || p->sso_session[0] ||
		   p->sso_account_id[0]) {
		s = sso_from_prof(c, p, name, err, errlen, ret);
	} else if (p->credential_process[0]) {
		s = process_from_prof(p, name, err, errlen, ret);
	} else if (p->access_key[0] && p->secret_key[0]) {
		s = keys_from_prof(p, name, err, errlen, ret);
	} else {
		pf_err_set(err, errlen, "AWS profile '%s' in %s has no "
		       "credentials (keys, role_arn, credential_process, "
		       "sso_* or web_identity_token_file)", name, p->path);
		*ret = -ENOKEY;
	}
out:
	explicit_bzero(p, sizeof(*p));
	free(p);
	return s;
}

/* ---- the refresh thread ---- */

static int64_t wall_now(void)
{
	return (int64_t)time(NULL);
}

/* How long the thread sleeps before renewing @cur (seconds). */
static int64_t renew_in(const struct pf_creds *c)
{
	int64_t life = c->cur.expiry - c->fetched;
	int64_t margin = c->margin_s;
	int64_t when;

	if (life < 2)
		life = 2;
	if (margin > life / 2)
		margin = life / 2;
	when = c->cur.expiry - margin - wall_now();
	return when > 0 ? when : 0;
}

static void fmt_time(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Sleeps @sec seconds or until stop; true if stopping. */
static bool nap(struct pf_creds *c, int64_t sec)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)sec;
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) ==
		    ETIMEDOUT)
			break;
	}
	stop = c->stop;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

static void *refresh_main(void *arg)
{
	struct pf_creds *c = arg;
	struct pf_cred_val *v = calloc(1, sizeof(*v));
	int64_t backoff = BACKOFF_MIN_S;
	char err[700];
	char when[32];
	int64_t wait;

	if (!v) {
		pf_err("AWS credentials from %s: out of memory: they will not "
		       "be renewed", c->desc);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	wait = renew_in(c);
	pthread_mutex_unlock(&c->lock);
	for (;;) {
		int ret;

		if (nap(c, wait))
			break;
		ret = pf_creds_fetch_source(c, c->src, v, err, sizeof(err));
		if (ret == 0 && v->expiry && v->expiry <= wall_now()) {
			ret = -EINVAL;
			snprintf(err, sizeof(err), "the new credentials have "
				 "already expired");
		}
		pthread_mutex_lock(&c->lock);
		if (ret == 0) {
			explicit_bzero(&c->cur, sizeof(c->cur));
			c->cur = *v;
			c->fetched = wall_now();
			c->refreshed++;
			c->expired_logged = false;
			wait = v->expiry ? renew_in(c) : INT32_MAX;
			backoff = BACKOFF_MIN_S;
			pthread_mutex_unlock(&c->lock);
			fmt_time(v->expiry, when, sizeof(when));
			pf_info("AWS credentials from %s renewed; they expire "
				"at %s", c->desc, v->expiry ? when : "never");
			if (!v->expiry)
				wait = INT32_MAX;
		} else {
			int64_t exp = c->cur.expiry;

			c->failed++;
			pthread_mutex_unlock(&c->lock);
			fmt_time(exp, when, sizeof(when));
			pf_warn("renewing the AWS credentials from %s failed "
				"(%s): retrying in %" PRId64 " s; the current "
				"ones %s at %s", c->desc, err, backoff,
				exp > wall_now() ? "expire" : "expired", when);
			wait = backoff;
			backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S :
								backoff * 2;
		}
		explicit_bzero(v, sizeof(*v));
	}
	explicit_bzero(v, sizeof(*v));
	free(v);
	return NULL;
}

/* ---- the provider ---- */

/* The provider with its settings, no source yet; NULL if out of memory. */
static struct pf_creds *creds_alloc(const struct pf_s3_conf *conf,
				    const struct pf_creds_cfg *cfg)
{
	struct pf_creds *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	const char *m;

	if (!c)
		return NULL;
	c->env = cfg->env;
	snprintf(c->region, sizeof(c->region), "%s",
		 cfg->region && *cfg->region ? cfg->region : conf->region);
	if (cfg->cacert && !(c->cacert = strdup(cfg->cacert))) {
		free(c);
		return NULL;
	}
	c->insecure = cfg->insecure;
	c->margin_s = cfg->margin_s;
	m = pf_s3_env_get(cfg->env, "PF_CREDS_MARGIN_S");
	if (!c->margin_s)
		c->margin_s = m ? (unsigned)strtoul(m, NULL, 10) : 300;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	return c;
}

/* The keys pf_s3_resolve() found (environment or a profile's). */
static int static_source(struct pf_creds *c, const struct pf_s3_conf *conf,
			 char *err, size_t errlen)
{
	c->src = src_new(SRC_STATIC);
	if (!c->src) {
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(c->src->val.access_key, conf->cred.access_key,
	       sizeof(c->src->val.access_key));
	memcpy(c->src->val.secret_key, conf->cred.secret_key,
	       sizeof(c->src->val.secret_key));
	memcpy(c->src->val.session_token, conf->cred.session_token,
	       sizeof(c->src->val.session_token));
	snprintf(c->src->desc, sizeof(c->src->desc), "%s", conf->cred.source);
	return 0;
}

/*
 * The default chain's steps 2 to 4 (the environment's keys, step 1, were
 * pf_s3_resolve()'s): web identity, the shared files' profile
 * (AWS_PROFILE or default), a container endpoint.  Sets c->src to the
 * first configured; @tried says what was not.
 */
static int chain_before_imds(struct pf_creds *c, char *tried,
			     size_t triedlen, char *err, size_t errlen)
{
	const char *prof = pf_s3_env_get(c->env, "AWS_PROFILE");
	struct pf_aws_profile *p = calloc(1, sizeof(*p));
	char why[700] = "";
	int ret = 0;
	int r;

	if (!p) {
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!prof)
		prof = "default";
	snprintf(tried, triedlen, "environment (no AWS_ACCESS_KEY_ID)");
	/* 2. web identity */
	c->src = webid_from_env(c->env, err, errlen, &ret);
	if (!c->src && !ret) {
		snprintf(tried + strlen(tried), triedlen - strlen(tried),
			 ", web identity (no AWS_WEB_IDENTITY_TOKEN_FILE)");
		/* 3. the shared files */
		r = pf_s3_profile_read(c->env, prof, p, why, sizeof(why));
		if (r == 0 && (p->other_creds || (p->access_key[0] &&
						  p->secret_key[0])))
			c->src = from_profile(c, prof, 0, err, errlen, &ret);
		else if (r < 0 && r != -ENOENT)
			pf_debug("AWS credentials: profile '%s' "
				 "skipped: %s", prof, why);
		if (!c->src && !ret)
			snprintf(tried + strlen(tried),
				 triedlen - strlen(tried),
				 ", profile '%s' (%s)", prof,
				 r == 0 ? "no credentials in it" :
					  "not found");
	}
	explicit_bzero(p, sizeof(*p));
	free(p);
	/* 4. container */
	if (!c->src && !ret) {
		c->src = container_from_env(c->env, err, errlen, &ret);
		if (!c->src && !ret)
			snprintf(tried + strlen(tried),
				 triedlen - strlen(tried),
				 ", container (no AWS_CONTAINER_"
				 "CREDENTIALS_RELATIVE_URI or "
				 "_FULL_URI)");
	}
	return ret;
}

/*
 * The default chain, in the AWS SDKs' order.  Returns 1 if it ended at
 * the EC2 instance metadata, which is tried, not required, so it is
 * fetched here (the failure names what was tried before); 0 if c->src is
 * to be fetched.
 */
static int default_chain(struct pf_creds *c, char *err, size_t errlen)
{
	char tried[600];
	char why[700] = "";
	int ret = chain_before_imds(c, tried, sizeof(tried), err, errlen);

	if (ret < 0 || c->src)
		return ret;
	/* 5. EC2 instance metadata: the last, tried, not required */
	c->src = imds_from_env(c->env, &ret, err, errlen);
	if (!c->src && !ret) {
		pf_err_set(err, errlen,
			"no AWS credentials: tried "
			"%s, EC2 instance metadata (disabled "
			"by AWS_EC2_METADATA_DISABLED); set "
			"AWS_ACCESS_KEY_ID and "
			"AWS_SECRET_ACCESS_KEY, configure a "
			"profile, or use -o no_sign for a "
			"public bucket",
			tried);
		return -ENOKEY;
	}
	if (!c->src)
		return ret;
	ret = pf_creds_fetch_source(c, c->src, &c->cur, why, sizeof(why));
	if (ret < 0) {
		pf_err_set(err, errlen, "no AWS "
		       "credentials: tried %s, %s; set "
		       "AWS_ACCESS_KEY_ID and "
		       "AWS_SECRET_ACCESS_KEY, "
		       "configure a profile, or use "
		       "-o no_sign for a public "
		       "bucket", tried, why);
		return ret == -EACCES ? -EACCES : -ENOKEY;
	}
	return 1;
}

/* Fetched: credentials that expire get the refresh thread. */
static int creds_fetched(struct pf_creds *c, char *err, size_t errlen)
{
	char when[32];
	int ret;

	c->fetched = wall_now();
	snprintf(c->desc, sizeof(c->desc), "%s", c->src->desc);
	if (c->cur.expiry && c->cur.expiry <= c->fetched) {
		fmt_time(c->cur.expiry, when, sizeof(when));
		pf_err_set(err, errlen, "AWS credentials from %s expired at %s "
		       "when fetched (is the clock right?)", c->desc, when);
		return -EACCES;
	}
	if (!c->cur.expiry) {
		pf_debug("AWS credentials from %s", c->desc);
		return 0;
	}
	fmt_time(c->cur.expiry, when, sizeof(when));
	/* the mount line names the source: one line at mount */
	pf_debug("AWS credentials from %s; they expire at %s and are "
		 "renewed %u s before", c->desc, when, c->margin_s);
	ret = -pthread_create(&c->thread, NULL, refresh_main, c);
	if (ret < 0) {
		pf_err_set(err, errlen, "cannot start the credential "
		       "refresh thread: %s", strerror(-ret));
		return ret;
	}
	pthread_setname_np(c->thread, "pf-creds");
	c->started = true;
	return 0;
}

int pf_creds_new(const struct pf_s3_conf *conf, const struct pf_creds_cfg *cfg,
		 struct pf_creds **out, char *err, size_t errlen)
{
	struct pf_creds *c;
	char why[700] = "";
	int ret = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	c = creds_alloc(conf, cfg);
	if (!c) {
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (conf->cred.anonymous) {
		c->anonymous = true;
		snprintf(c->desc, sizeof(c->desc), "none (no_sign)");
		*out = c;
		return 0;
	}
	if (!conf->cred.chain) {
		ret = static_source(c, conf, err, errlen);
	} else if (cfg->profile && *cfg->profile) {
		/* -o profile: that profile, nothing else */
		c->src = from_profile(c, cfg->profile, 0, err, errlen, &ret);
	} else {
		ret = default_chain(c, err, errlen);
		if (ret == 1)
			goto fetched;
	}
	if (ret < 0 || !c->src) {
		if (!ret) {
			ret = -ENOKEY;
			pf_err_set(err, errlen, "no AWS credentials");
		}
		goto fail;
	}
	ret = pf_creds_fetch_source(c, c->src, &c->cur, why, sizeof(why));
	if (ret < 0) {
		pf_err_set(err, errlen, "AWS credentials from %s: %s",
			c->src->desc, why);
		goto fail;
	}
fetched:
	ret = creds_fetched(c, err, errlen);
	if (ret < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	pf_creds_free(c);
	return ret;
}

void pf_creds_free(struct pf_creds *c)
{
	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	src_free(c->src);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	explicit_bzero(&c->cur, sizeof(c->cur));
	free(c->cacert);
	free(c);
}

int pf_creds_sign(struct pf_creds *c, struct pf_creds_sig *s)
{
	char when[32];
	int64_t exp;

	s->userpwd[0] = '\0';
	s->token_hdr[0] = '\0';
	if (c->anonymous)
		return 1;
	pthread_mutex_lock(&c->lock);
	exp = c->cur.expiry;
	if (exp && exp <= wall_now()) {
		bool log = !c->expired_logged;

		c->expired_logged = true;
		pthread_mutex_unlock(&c->lock);
		if (log) {
			fmt_time(exp, when, sizeof(when));
			pf_err("AWS credentials from %s expired at %s and "
			       "could not be renewed: requests fail with "
			       "EACCES until a renewal succeeds", c->desc,
			       when);
		}
		return -EACCES;
	}
	snprintf(s->userpwd, sizeof(s->userpwd), "%s:%s", c->cur.access_key,
		 c->cur.secret_key);
	if (c->cur.session_token[0])
		snprintf(s->token_hdr, sizeof(s->token_hdr),
			 "x-amz-security-token: %s", c->cur.session_token);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void pf_creds_sig_wipe(struct pf_creds_sig *s)
{
	explicit_bzero(s, sizeof(*s));
}

void pf_creds_source(struct pf_creds *c, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", c->desc);
}

void pf_creds_counts(struct pf_creds *c, unsigned *refreshed,
		     unsigned *failed)
{
	pthread_mutex_lock(&c->lock);
	*refreshed = c->refreshed;
	*failed = c->failed;
	pthread_mutex_unlock(&c->lock);
}
