/*
 * creds.c - the AWS default credential chain and its renewal: finds where
 * an S3 mount's credentials come from (environment, web identity, the
 * shared files' roles, processes and SSO, container endpoints, EC2
 * instance metadata) in the order the AWS SDKs use, fetches them, and
 * renews temporary ones in the background before they expire.
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
 * and in the request bodies and headers of one fetch (wiped after it).
 * Logs and error messages name the source, its file, profile, role ARN
 * or endpoint, never a key, a token or the web identity token.
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

#include "pf_clock.h"
#include "pf_creds.h"
#include "pf_log.h"

extern char **environ;

#define DOC_MAX (64 * 1024)	/* largest answer of a source */
#define TOKEN_FILE_MAX (16 * 1024)
#define PROCESS_TIMEOUT_MS 60000
#define IMDS_TIMEOUT_MS 2000
#define HTTP_TIMEOUT_MS 10000
#define BACKOFF_MIN_S 1
#define BACKOFF_MAX_S 60
#define MAX_DEPTH 5		/* source_profile hops */

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *env_get(pf_env_fn env, const char *name)
{
	const char *v = env ? env(name) : getenv(name);

	return v && *v ? v : NULL;
}

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

/* ---- HTTP: one blocking exchange, no redirects ---- */

struct body {
	char *p;
	size_t len;
	bool over;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;
	char *nb;

	if (b->len + len + 1 > DOC_MAX) {
		b->over = true;
		return 0;
	}
	nb = realloc(b->p, b->len + len + 1);
	if (!nb)
		return 0;
	b->p = nb;
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

static void body_free(struct body *b)
{
	if (b->p) {
		explicit_bzero(b->p, b->len);
		free(b->p);
	}
	b->p = NULL;
	b->len = 0;
}

struct http {
	const char *method;		/* "GET", "PUT", "POST" */
	const char *url;
	struct curl_slist *hdrs;
	const char *post;		/* POST body, or NULL */
	const char *sigv4;		/* "aws:amz:REGION:sts", or NULL */
	const char *userpwd;
	long timeout_ms;
	/* results */
	long status;
	struct body body;
};

/*
 * Performs @h.  Returns 0 with h->status and h->body (any status), or
 * -EIO / -ETIMEDOUT / -ENOMEM with one line in err.  Redirects are not
 * followed: the headers of these requests carry tokens.
 */
static int http_do(struct pf_creds *c, struct http *h, char *err,
		   size_t errlen)
{
	CURL *e = curl_easy_init();
	CURLcode rc;
	int ret = 0;

	h->status = 0;
	memset(&h->body, 0, sizeof(h->body));
	if (!e) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	curl_easy_setopt(e, CURLOPT_URL, h->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 h->timeout_ms < 1000 ? h->timeout_ms : 1000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &h->body);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "prefetchfs");
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, h->method);
	if (strcmp(h->method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (h->post) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, h->post);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(h->post));
	}
	if (h->sigv4) {
		curl_easy_setopt(e, CURLOPT_AWS_SIGV4, h->sigv4);
		curl_easy_setopt(e, CURLOPT_USERPWD, h->userpwd);
	}
	if (h->hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->hdrs);
	if (c->cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->cacert);
	if (c->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h->status);
	if (rc != CURLE_OK) {
		ret = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
		if (h->body.over)
			seterr(err, errlen, "the answer is larger than %d "
			       "bytes", DOC_MAX);
		else
			seterr(err, errlen, "%s", curl_easy_strerror(rc));
		body_free(&h->body);
	}
	curl_easy_cleanup(e);
	return ret;
}

/* Appends "k=v&" to a form body, v URL-encoded.  Returns -ENAMETOOLONG. */
static int form_add(char *out, size_t outlen, const char *k, const char *v)
{
	size_t n = strlen(out);
	int m;

	m = snprintf(out + n, outlen - n, "%s%s=", n ? "&" : "", k);
	if (m < 0 || (size_t)m >= outlen - n)
		return -ENAMETOOLONG;
	n += (size_t)m;
	return pf_s3_uri_encode(v, 0, out + n, outlen - n) < 0 ?
		       -ENAMETOOLONG : 0;
}

/* ---- reading files and running programs ---- */

/* Reads a small file whole (a token); trailing blanks dropped. */
static int read_small(const char *path, char *out, size_t outlen,
		      const char *what, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	int ret = 0;

	if (fd < 0) {
		ret = -errno;
		seterr(err, errlen, "cannot read the %s %s: %s", what, path,
		       strerror(-ret));
		return ret;
	}
	for (;;) {
		ssize_t k = read(fd, out + n, outlen - 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			ret = -errno;
			seterr(err, errlen, "cannot read the %s %s: %s", what,
			       path, strerror(-ret));
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n == outlen - 1) {
			ret = -EFBIG;
			seterr(err, errlen, "the %s %s is larger than %zu "
			       "bytes", what, path, outlen - 1);
			break;
		}
	}
	close(fd);
	out[n] = '\0';
	while (n && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0';
	if (ret == 0 && n == 0) {
		ret = -EINVAL;
		seterr(err, errlen, "the %s %s is empty", what, path);
	}
	if (ret < 0)
		explicit_bzero(out, outlen);
	return ret;
}

static int64_t ms_since(uint64_t t0)
{
	return (int64_t)((pf_now_ns() - t0) / 1000000);
}

/*
 * Runs @cmd with /bin/sh -c (as the SDKs do) and collects its standard
 * output; its standard error goes where ours goes.  The command line is
 * the user's and may hold secrets: messages name the profile only.
 */
static int run_process(struct source *s, struct body *out, char *err,
		       size_t errlen)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)"sh", (char *)"-c", s->cmd, NULL };
	int fds[2];
	pid_t pid;
	int st = 0;
	int ret;
	uint64_t t0 = pf_now_ns();

	memset(out, 0, sizeof(*out));
	if (pipe2(fds, O_CLOEXEC) < 0) {
		ret = -errno;
		seterr(err, errlen, "pipe: %s", strerror(-ret));
		return ret;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	ret = -posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (ret < 0) {
		close(fds[0]);
		seterr(err, errlen, "cannot run the credential_process of "
		       "profile '%s': %s", s->profile, strerror(-ret));
		return ret;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int64_t left = PROCESS_TIMEOUT_MS - ms_since(t0);
		char buf[4096];
		ssize_t k;

		if (left <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (!pfd.revents)
			continue;
		k = read(fds[0], buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (on_data(buf, 1, (size_t)k, out) != (size_t)k) {
			ret = out->over ? -EFBIG : -ENOMEM;
			explicit_bzero(buf, sizeof(buf));
			break;
		}
		explicit_bzero(buf, sizeof(buf));
	}
	close(fds[0]);
	if (ret < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (ret == -ETIMEDOUT) {
		seterr(err, errlen, "the credential_process of profile '%s' "
		       "did not finish in %d s", s->profile,
		       PROCESS_TIMEOUT_MS / 1000);
	} else if (ret < 0) {
		seterr(err, errlen, "reading the output of the "
		       "credential_process of profile '%s': %s", s->profile,
		       strerror(-ret));
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		ret = -EACCES;
		if (WIFEXITED(st))
			seterr(err, errlen, "the credential_process of profile "
			       "'%s' exited with status %d", s->profile,
			       WEXITSTATUS(st));
		else
			seterr(err, errlen, "the credential_process of profile "
			       "'%s' was killed by signal %d", s->profile,
			       WTERMSIG(st));
	}
	if (ret < 0)
		body_free(out);
	return ret;
}

/* ---- fetching from each source ---- */

static int fetch(struct pf_creds *c, struct source *s, struct pf_cred_val *v,
		 char *err, size_t errlen);

/* "https://sts.REGION.amazonaws.com" or the endpoint set. */
static void sts_endpoint(struct pf_creds *c, char *out, size_t outlen)
{
	const char *ep = env_get(c->env, "AWS_ENDPOINT_URL_STS");
	size_t n;

	if (!ep)
		ep = env_get(c->env, "AWS_ENDPOINT_URL");
	if (ep)
		snprintf(out, outlen, "%s", ep);
	else
		snprintf(out, outlen, "https://sts.%s.amazonaws.com%s",
			 c->region, strncmp(c->region, "cn-", 3) == 0 ?
					    ".cn" : "");
	n = strlen(out);
	while (n && out[n - 1] == '/')
		out[--n] = '\0';
}

/* POSTs the form @body to STS; parses the answer. */
static int sts_call(struct pf_creds *c, struct source *s, const char *body,
		    const struct pf_cred_val *signer, struct pf_cred_val *v,
		    char *err, size_t errlen)
{
	struct http h = { .method = "POST", .post = body,
			  .timeout_ms = HTTP_TIMEOUT_MS };
	char url[600];
	char sig[128];
	char *userpwd = NULL;
	char *tokhdr = NULL;
	char why[300];
	int ret;

	sts_endpoint(c, url, sizeof(url));
	snprintf(url + strlen(url), sizeof(url) - strlen(url), "/");
	h.url = url;
	h.hdrs = curl_slist_append(NULL, "Content-Type: application/"
				   "x-www-form-urlencoded; charset=utf-8");
	h.hdrs = curl_slist_append(h.hdrs, "Accept: text/xml");
	if (signer) {
		size_t n = strlen(signer->access_key) +
			   strlen(signer->secret_key) + 2;

		userpwd = malloc(n);
		if (!userpwd) {
			ret = -ENOMEM;
			seterr(err, errlen, "out of memory");
			goto out;
		}
		snprintf(userpwd, n, "%s:%s", signer->access_key,
			 signer->secret_key);
		snprintf(sig, sizeof(sig), "aws:amz:%s:sts", c->region);
		h.sigv4 = sig;
		h.userpwd = userpwd;
		if (signer->session_token[0]) {
			n = strlen(signer->session_token) + 32;
			tokhdr = malloc(n);
			if (!tokhdr) {
				ret = -ENOMEM;
				seterr(err, errlen, "out of memory");
				goto out;
			}
			snprintf(tokhdr, n, "x-amz-security-token: %s",
				 signer->session_token);
			h.hdrs = curl_slist_append(h.hdrs, tokhdr);
		}
	}
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "STS at %s: %s", url, why);
		goto out;
	}
	ret = pf_creds_parse_sts(h.body.p ? h.body.p : "", h.body.len, v, why,
				 sizeof(why));
	if (ret == -EACCES || (ret < 0 && h.status != 200)) {
		seterr(err, errlen, "STS at %s refused %s: HTTP %ld%s%s", url,
		       s->role_arn, h.status, ret == -EACCES ? ", " : "",
		       ret == -EACCES ? why : "");
		ret = -EACCES;
	} else if (ret < 0) {
		seterr(err, errlen, "bad answer from STS at %s: %s", url, why);
	}
out:
	body_free(&h.body);
	if (h.hdrs) {
		/* the slist copied the token header */
		for (struct curl_slist *l = h.hdrs; l; l = l->next)
			explicit_bzero(l->data, strlen(l->data));
		curl_slist_free_all(h.hdrs);
	}
	if (userpwd) {
		explicit_bzero(userpwd, strlen(userpwd));
		free(userpwd);
	}
	if (tokhdr) {
		explicit_bzero(tokhdr, strlen(tokhdr));
		free(tokhdr);
	}
	return ret;
}

static int fetch_webid(struct pf_creds *c, struct source *s,
		       struct pf_cred_val *v, char *err, size_t errlen)
{
	char *tok = malloc(TOKEN_FILE_MAX);
	char *body = malloc(3 * TOKEN_FILE_MAX + 2048);
	int ret;

	if (!tok || !body) {
		ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
		goto out;
	}
	/* read each time: EKS rotates the file */
	ret = read_small(s->file, tok, TOKEN_FILE_MAX, "web identity token "
			 "file", err, errlen);
	if (ret < 0)
		goto out;
	body[0] = '\0';
	ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048, "Action",
		       "AssumeRoleWithWebIdentity");
	if (!ret)
		ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048, "RoleArn",
			       s->role_arn);
	if (!ret)
		ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048,
			       "RoleSessionName", s->session_name);
	if (!ret && s->duration[0])
		ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048,
			       "DurationSeconds", s->duration);
	if (!ret)
		ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048, "Version",
			       "2011-06-15");
	if (!ret)
		ret = form_add(body, 3 * TOKEN_FILE_MAX + 2048,
			       "WebIdentityToken", tok);
	if (ret < 0) {
		seterr(err, errlen, "the AssumeRoleWithWebIdentity request "
		       "is too long");
		goto out;
	}
	ret = sts_call(c, s, body, NULL, v, err, errlen);
out:
	if (tok)
		explicit_bzero(tok, TOKEN_FILE_MAX);
	if (body)
		explicit_bzero(body, 3 * TOKEN_FILE_MAX + 2048);
	free(tok);
	free(body);
	return ret;
}

static int fetch_role(struct pf_creds *c, struct source *s,
		      struct pf_cred_val *v, char *err, size_t errlen)
{
	struct pf_cred_val *src = calloc(1, sizeof(*src));
	char body[2048] = "";
	char why[512];
	int ret;

	if (!src) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = fetch(c, s->base, src, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "the source credentials of role %s (%s): "
		       "%s", s->role_arn, s->base->desc, why);
		goto out;
	}
	ret = form_add(body, sizeof(body), "Action", "AssumeRole");
	if (!ret && s->duration[0])
		ret = form_add(body, sizeof(body), "DurationSeconds",
			       s->duration);
	if (!ret && s->external_id[0])
		ret = form_add(body, sizeof(body), "ExternalId",
			       s->external_id);
	if (!ret)
		ret = form_add(body, sizeof(body), "RoleArn", s->role_arn);
	if (!ret)
		ret = form_add(body, sizeof(body), "RoleSessionName",
			       s->session_name);
	if (!ret)
		ret = form_add(body, sizeof(body), "Version", "2011-06-15");
	if (ret < 0) {
		seterr(err, errlen, "the AssumeRole request is too long");
		goto out;
	}
	ret = sts_call(c, s, body, src, v, err, errlen);
out:
	explicit_bzero(src, sizeof(*src));
	free(src);
	return ret;
}

static int fetch_process(struct pf_creds *c, struct source *s,
			 struct pf_cred_val *v, char *err, size_t errlen)
{
	struct body out;
	char why[300];
	int ret;

	(void)c;
	ret = run_process(s, &out, err, errlen);
	if (ret < 0)
		return ret;
	ret = pf_creds_parse_json(out.p ? out.p : "", out.len,
				  PF_CJSON_PROCESS, v, why, sizeof(why));
	if (ret < 0)
		seterr(err, errlen, "bad output of the credential_process of "
		       "profile '%s': %s", s->profile, why);
	body_free(&out);
	return ret;
}

/* A metadata answer (IMDS or container) in @h: parse it or say why not. */
static int metadata_answer(struct http *h, const char *what,
			   struct pf_cred_val *v, char *err, size_t errlen)
{
	char why[300];
	int ret;

	if (h->status != 200) {
		seterr(err, errlen, "%s answered HTTP %ld", what, h->status);
		return h->status == 401 || h->status == 403 ? -EACCES : -EIO;
	}
	ret = pf_creds_parse_json(h->body.p ? h->body.p : "", h->body.len,
				  PF_CJSON_METADATA, v, why, sizeof(why));
	if (ret < 0)
		seterr(err, errlen, "bad answer from %s: %s", what, why);
	return ret;
}

static int fetch_container(struct pf_creds *c, struct source *s,
			   struct pf_cred_val *v, char *err, size_t errlen)
{
	struct http h = { .method = "GET", .url = s->url,
			  .timeout_ms = HTTP_TIMEOUT_MS };
	const char *file = env_get(c->env,
				   "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *tokv = env_get(c->env, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
	char *hdr = malloc(TOKEN_FILE_MAX + 32);
	char *tok = malloc(TOKEN_FILE_MAX);
	char why[300];
	int ret = 0;

	if (!hdr || !tok) {
		ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
		goto out;
	}
	tok[0] = '\0';
	/* the file wins and is read each time: EKS rotates it */
	if (file)
		ret = read_small(file, tok, TOKEN_FILE_MAX, "container "
				 "authorization token file", err, errlen);
	else if (tokv)
		snprintf(tok, TOKEN_FILE_MAX, "%s", tokv);
	if (ret < 0)
		goto out;
	if (tok[0]) {
		if (strpbrk(tok, "\r\n")) {
			ret = -EINVAL;
			seterr(err, errlen, "the container authorization token "
			       "holds a line break");
			goto out;
		}
		snprintf(hdr, TOKEN_FILE_MAX + 32, "Authorization: %s", tok);
		h.hdrs = curl_slist_append(NULL, hdr);
	}
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "container credentials endpoint %s: %s",
		       s->url, why);
		goto out;
	}
	ret = metadata_answer(&h, "the container credentials endpoint", v,
			      err, errlen);
out:
	body_free(&h.body);
	for (struct curl_slist *l = h.hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(h.hdrs);
	if (hdr)
		explicit_bzero(hdr, TOKEN_FILE_MAX + 32);
	if (tok)
		explicit_bzero(tok, TOKEN_FILE_MAX);
	free(hdr);
	free(tok);
	return ret;
}

/*
 * EC2 instance metadata: a session token (IMDSv2) by PUT, then the role
 * name, then its credentials.  A PUT answered 403, 404 or 405 (IMDSv2
 * not offered) falls back to IMDSv1, as the SDKs do, unless
 * AWS_EC2_METADATA_V1_DISABLED is true.
 */
static int fetch_imds(struct pf_creds *c, struct source *s,
		      struct pf_cred_val *v, char *err, size_t errlen)
{
	struct http h = { .method = "PUT", .timeout_ms = IMDS_TIMEOUT_MS };
	char url[1400];
	char tokhdr[200] = "";
	char role[130];
	char why[300];
	struct curl_slist *hd = NULL;
	bool v1 = false;
	int ret;

	snprintf(url, sizeof(url), "%s/latest/api/token", s->url);
	h.url = url;
	h.hdrs = curl_slist_append(NULL, "X-aws-ec2-metadata-token-ttl-"
				   "seconds: 21600");
	ret = http_do(c, &h, why, sizeof(why));
	curl_slist_free_all(h.hdrs);
	h.hdrs = NULL;
	if (ret < 0) {
		seterr(err, errlen, "EC2 instance metadata at %s: %s", s->url,
		       why);
		return ret;
	}
	if (h.status == 200 && h.body.p && h.body.len &&
	    h.body.len < sizeof(tokhdr) - 32 &&
	    !strpbrk(h.body.p, "\r\n")) {
		snprintf(tokhdr, sizeof(tokhdr), "X-aws-ec2-metadata-token: %s",
			 h.body.p);
	} else if ((h.status == 403 || h.status == 404 || h.status == 405) &&
		   !s->imds_v1_off) {
		v1 = true;
	} else {
		seterr(err, errlen, "EC2 instance metadata at %s: the session "
		       "token request got HTTP %ld%s", s->url, h.status,
		       h.status == 200 ? " with a bad token" :
		       s->imds_v1_off ? " (and AWS_EC2_METADATA_V1_DISABLED "
					"forbids IMDSv1)" : "");
		body_free(&h.body);
		return h.status == 401 || h.status == 403 ? -EACCES : -EIO;
	}
	body_free(&h.body);
	if (!v1)
		hd = curl_slist_append(NULL, tokhdr);

	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/"
		 "security-credentials/", s->url);
	h.method = "GET";
	h.hdrs = hd;
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "EC2 instance metadata at %s: %s", s->url,
		       why);
		goto out;
	}
	if (h.status != 200 || !h.body.p || !h.body.len) {
		seterr(err, errlen, "EC2 instance metadata at %s: no IAM role "
		       "(HTTP %ld to the role name): attach an instance "
		       "profile to the instance", s->url, h.status);
		ret = h.status == 404 ? -ENOKEY : -EIO;
		goto out;
	}
	{
		size_t n = strcspn(h.body.p, "\r\n");

		if (n == 0 || n >= sizeof(role)) {
			seterr(err, errlen, "EC2 instance metadata at %s: bad "
			       "role name", s->url);
			ret = -EINVAL;
			goto out;
		}
		memcpy(role, h.body.p, n);
		role[n] = '\0';
		for (size_t i = 0; i < n; i++) {
			if (!isalnum((unsigned char)role[i]) &&
			    !strchr("+=,.@_-", role[i])) {
				seterr(err, errlen, "EC2 instance metadata at "
				       "%s: bad role name", s->url);
				ret = -EINVAL;
				goto out;
			}
		}
	}
	body_free(&h.body);
	snprintf(url, sizeof(url), "%s/latest/meta-data/iam/"
		 "security-credentials/%s", s->url, role);
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "EC2 instance metadata at %s: %s", s->url,
		       why);
		goto out;
	}
	ret = metadata_answer(&h, "EC2 instance metadata", v, err, errlen);
	if (ret == 0)
		snprintf(s->desc, sizeof(s->desc), "EC2 instance metadata "
			 "(%s at %s, role %s)", v1 ? "IMDSv1" : "IMDSv2",
			 s->url, role);
out:
	body_free(&h.body);
	curl_slist_free_all(hd);
	explicit_bzero(tokhdr, sizeof(tokhdr));
	return ret;
}

/* The cached token of `aws sso login` for s->sso_start_url. */
static int sso_token(struct pf_creds *c, struct source *s, char *tok,
		     size_t toklen, char *err, size_t errlen)
{
	const char *home = env_get(c->env, "HOME");
	char dir[600];
	char path[900];
	char *buf = malloc(DOC_MAX);
	DIR *d;
	struct dirent *de;
	int64_t best = 0;
	int ret = -ENOKEY;

	if (!buf) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(dir, sizeof(dir), "%s/.aws/sso/cache", home ? home : "");
	d = home ? opendir(dir) : NULL;
	while (d && (de = readdir(d))) {
		char *t = malloc(toklen);
		int64_t exp;
		char why[200];
		size_t n = strlen(de->d_name);

		if (!t)
			break;
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 ||
		    snprintf(path, sizeof(path), "%s/%s", dir,
			     de->d_name) >= (int)sizeof(path) ||
		    read_small(path, buf, DOC_MAX, "SSO cache", why,
			       sizeof(why)) < 0 ||
		    pf_creds_parse_sso_cache(buf, strlen(buf),
					     s->sso_start_url, t, toklen,
					     &exp, why, sizeof(why)) < 0 ||
		    exp <= best) {
			explicit_bzero(t, toklen);
			free(t);
			continue;
		}
		best = exp;
		memcpy(tok, t, toklen);
		explicit_bzero(t, toklen);
		free(t);
	}
	if (d)
		closedir(d);
	explicit_bzero(buf, DOC_MAX);
	free(buf);
	if (best > (int64_t)time(NULL))
		return 0;
	explicit_bzero(tok, toklen);
	seterr(err, errlen, "%s SSO token for %s in %s: run `aws sso login "
	       "--profile %s`", best ? "the cached" : "no cached",
	       s->sso_start_url, dir, s->profile);
	if (best)
		seterr(err + strlen(err), errlen - strlen(err),
		       " (it expired)");
	return ret;
}

static int fetch_sso(struct pf_creds *c, struct source *s,
		     struct pf_cred_val *v, char *err, size_t errlen)
{
	struct http h = { .method = "GET", .timeout_ms = HTTP_TIMEOUT_MS };
	char tok[4096];
	char hdr[4200];
	char url[1400];
	char enc_role[400];
	char why[300];
	int ret;

	ret = sso_token(c, s, tok, sizeof(tok), err, errlen);
	if (ret < 0)
		return ret;
	if (pf_s3_uri_encode(s->sso_role, 0, enc_role, sizeof(enc_role)) < 0)
		enc_role[0] = '\0';
	snprintf(url, sizeof(url), "%s/federation/credentials?account_id=%s&"
		 "role_name=%s", s->url, s->sso_account, enc_role);
	snprintf(hdr, sizeof(hdr), "x-amz-sso_bearer_token: %s", tok);
	explicit_bzero(tok, sizeof(tok));
	h.url = url;
	h.hdrs = curl_slist_append(NULL, hdr);
	explicit_bzero(hdr, sizeof(hdr));
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "SSO portal at %s: %s", s->url, why);
		goto out;
	}
	if (h.status != 200) {
		seterr(err, errlen, "SSO portal at %s answered HTTP %ld: run "
		       "`aws sso login --profile %s`", s->url, h.status,
		       s->profile);
		ret = -EACCES;
		goto out;
	}
	ret = pf_creds_parse_json(h.body.p ? h.body.p : "", h.body.len,
				  PF_CJSON_SSO, v, why, sizeof(why));
	if (ret < 0)
		seterr(err, errlen, "bad answer from the SSO portal at %s: %s",
		       s->url, why);
out:
	body_free(&h.body);
	for (struct curl_slist *l = h.hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(h.hdrs);
	return ret;
}

static int fetch(struct pf_creds *c, struct source *s, struct pf_cred_val *v,
		 char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	switch (s->kind) {
	case SRC_STATIC:
		*v = s->val;
		return 0;
	case SRC_WEBID:
		return fetch_webid(c, s, v, err, errlen);
	case SRC_ROLE:
		return fetch_role(c, s, v, err, errlen);
	case SRC_PROCESS:
		return fetch_process(c, s, v, err, errlen);
	case SRC_SSO:
		return fetch_sso(c, s, v, err, errlen);
	case SRC_CONTAINER:
		return fetch_container(c, s, v, err, errlen);
	case SRC_IMDS:
		return fetch_imds(c, s, v, err, errlen);
	}
	seterr(err, errlen, "unknown credential source");
	return -EINVAL;
}

/* ---- building the chain ---- */

static void session_name(pf_env_fn env, char *out, size_t outlen)
{
	const char *n = env_get(env, "AWS_ROLE_SESSION_NAME");

	if (n)
		snprintf(out, outlen, "%s", n);
	else
		snprintf(out, outlen, "prefetchfs-%lld",
			 (long long)time(NULL));
}

static struct source *webid_from_env(pf_env_fn env, char *err,
				     size_t errlen, int *ret)
{
	const char *file = env_get(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
	const char *arn = env_get(env, "AWS_ROLE_ARN");
	struct source *s;

	*ret = 0;
	if (!file)
		return NULL;
	if (!arn) {
		seterr(err, errlen, "AWS_WEB_IDENTITY_TOKEN_FILE is set but "
		       "AWS_ROLE_ARN is not: set both for web identity");
		*ret = -ENOKEY;
		return NULL;
	}
	s = src_new(SRC_WEBID);
	if (!s) {
		*ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
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
	const char *rel = env_get(env,
				  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = env_get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
	struct source *s;

	*ret = 0;
	if (!rel && !full)
		return NULL;
	s = src_new(SRC_CONTAINER);
	if (!s) {
		*ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
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
			seterr(err, errlen, "AWS_CONTAINER_CREDENTIALS_"
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
	const char *ep = env_get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct source *s;
	size_t n;

	*ret = 0;
	if (is_true(env_get(env, "AWS_EC2_METADATA_DISABLED")))
		return NULL;
	s = src_new(SRC_IMDS);
	if (!s) {
		*ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->url, sizeof(s->url), "%s", ep ? ep :
		 "http://169.254.169.254");
	n = strlen(s->url);
	while (n && s->url[n - 1] == '/')
		s->url[--n] = '\0';
	s->imds_v1_off = is_true(env_get(env, "AWS_EC2_METADATA_V1_DISABLED"));
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
		seterr(err, errlen, "AWS profile '%s' has both source_profile "
		       "and credential_source: keep one", name);
		*ret = -EINVAL;
		return NULL;
	}
	if (p->source_profile[0]) {
		/* a profile that is its own source uses its static keys */
		if (strcmp(p->source_profile, name) == 0) {
			if (!p->access_key[0] || !p->secret_key[0]) {
				seterr(err, errlen, "AWS profile '%s' is its "
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
		const char *ak = env_get(c->env, "AWS_ACCESS_KEY_ID");
		const char *sk = env_get(c->env, "AWS_SECRET_ACCESS_KEY");
		const char *tk = env_get(c->env, "AWS_SESSION_TOKEN");

		if (!ak || !sk) {
			seterr(err, errlen, "AWS profile '%s': "
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
			seterr(err, errlen, "AWS profile '%s': "
			       "credential_source Ec2InstanceMetadata, but "
			       "AWS_EC2_METADATA_DISABLED is true", name);
			*ret = -ENOKEY;
		}
		return b;
	}
	if (strcasecmp(p->credential_source, "EcsContainer") == 0) {
		b = container_from_env(c->env, err, errlen, ret);
		if (!b && !*ret) {
			seterr(err, errlen, "AWS profile '%s': "
			       "credential_source EcsContainer, but no "
			       "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or "
			       "_FULL_URI is set", name);
			*ret = -ENOKEY;
		}
		return b;
	}
	seterr(err, errlen, "AWS profile '%s' has role_arn but %s", name,
	       p->credential_source[0] ? "an unknown credential_source "
	       "(Environment, Ec2InstanceMetadata or EcsContainer)" :
	       "neither source_profile nor credential_source");
	*ret = -EINVAL;
	return NULL;
nomem:
	seterr(err, errlen, "out of memory");
	*ret = -ENOMEM;
	return NULL;
}

static struct source *from_profile(struct pf_creds *c, const char *name,
				   int depth, char *err, size_t errlen,
				   int *ret)
{
	struct pf_aws_profile *p = calloc(1, sizeof(*p));
	struct source *s = NULL;

	*ret = 0;
	if (!p) {
		*ret = -ENOMEM;
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	if (depth > MAX_DEPTH) {
		seterr(err, errlen, "AWS profile '%s': more than %d "
		       "source_profile hops (a loop?)", name, MAX_DEPTH);
		*ret = -ELOOP;
		goto out;
	}
	*ret = pf_s3_profile_read(c->env, name, p, err, errlen);
	if (*ret < 0)
		goto out;
	if (p->role_arn[0] && p->web_identity_token_file[0]) {
		s = src_new(SRC_WEBID);
		if (!s)
			goto nomem;
		snprintf(s->file, sizeof(s->file), "%s",
			 p->web_identity_token_file);
		snprintf(s->role_arn, sizeof(s->role_arn), "%s", p->role_arn);
		if (p->role_session_name[0])
			snprintf(s->session_name, sizeof(s->session_name),
				 "%s", p->role_session_name);
		else
			session_name(c->env, s->session_name,
				     sizeof(s->session_name));
		snprintf(s->duration, sizeof(s->duration), "%s",
			 p->duration_seconds);
		snprintf(s->desc, sizeof(s->desc), "web identity (role %s, "
			 "token file %s, profile %s in %s)", p->role_arn,
			 p->web_identity_token_file, name, p->path);
	} else if (p->role_arn[0]) {
		struct source *b = role_base(c, p, name, depth, err, errlen,
					     ret);

		if (!b)
			goto out;
		s = src_new(SRC_ROLE);
		if (!s) {
			src_free(b);
			goto nomem;
		}
		s->base = b;
		snprintf(s->role_arn, sizeof(s->role_arn), "%s", p->role_arn);
		if (p->role_session_name[0])
			snprintf(s->session_name, sizeof(s->session_name),
				 "%s", p->role_session_name);
		else
			session_name(c->env, s->session_name,
				     sizeof(s->session_name));
		snprintf(s->external_id, sizeof(s->external_id), "%s",
			 p->external_id);
		snprintf(s->duration, sizeof(s->duration), "%s",
			 p->duration_seconds);
		snprintf(s->desc, sizeof(s->desc), "role %s of profile %s in "
			 "%s (AssumeRole with %.200s)", p->role_arn, name,
			 p->path, b->desc);
	} else if (p->web_identity_token_file[0]) {
		seterr(err, errlen, "AWS profile '%s' has "
		       "web_identity_token_file but no role_arn", name);
		*ret = -EINVAL;
	} else if (p->sso_start_url[0] || p->sso_session[0] ||
		   p->sso_account_id[0]) {
		if (!p->sso_start_url[0] || !p->sso_account_id[0] ||
		    !p->sso_role_name[0] ||
		    (!p->sso_region[0] &&
		     !env_get(c->env, "AWS_ENDPOINT_URL_SSO"))) {
			seterr(err, errlen, "AWS profile '%s' is an SSO "
			       "profile without sso_start_url, "
			       "sso_account_id, sso_role_name and "
			       "sso_region (in it or its sso-session)", name);
			*ret = -EINVAL;
			goto out;
		}
		s = src_new(SRC_SSO);
		if (!s)
			goto nomem;
		snprintf(s->profile, sizeof(s->profile), "%s", name);
		snprintf(s->sso_start_url, sizeof(s->sso_start_url), "%s",
			 p->sso_start_url);
		snprintf(s->sso_account, sizeof(s->sso_account), "%s",
			 p->sso_account_id);
		snprintf(s->sso_role, sizeof(s->sso_role), "%s",
			 p->sso_role_name);
		if (env_get(c->env, "AWS_ENDPOINT_URL_SSO"))
			snprintf(s->url, sizeof(s->url), "%s",
				 env_get(c->env, "AWS_ENDPOINT_URL_SSO"));
		else
			snprintf(s->url, sizeof(s->url), "https://portal.sso."
				 "%s.amazonaws.com", p->sso_region);
		snprintf(s->desc, sizeof(s->desc), "SSO (role %s of account "
			 "%s, profile %s in %s)", p->sso_role_name,
			 p->sso_account_id, name, p->path);
	} else if (p->credential_process[0]) {
		s = src_new(SRC_PROCESS);
		if (!s)
			goto nomem;
		snprintf(s->profile, sizeof(s->profile), "%s", name);
		snprintf(s->cmd, sizeof(s->cmd), "%s", p->credential_process);
		snprintf(s->desc, sizeof(s->desc), "credential_process of "
			 "profile %s in %s", name, p->path);
	} else if (p->access_key[0] && p->secret_key[0]) {
		s = src_new(SRC_STATIC);
		if (!s)
			goto nomem;
		memcpy(s->val.access_key, p->access_key,
		       sizeof(s->val.access_key));
		memcpy(s->val.secret_key, p->secret_key,
		       sizeof(s->val.secret_key));
		memcpy(s->val.session_token, p->session_token,
		       sizeof(s->val.session_token));
		snprintf(s->desc, sizeof(s->desc), "keys of profile %s in %s",
			 name, p->path);
	} else {
		seterr(err, errlen, "AWS profile '%s' in %s has no "
		       "credentials (keys, role_arn, credential_process, "
		       "sso_* or web_identity_token_file)", name, p->path);
		*ret = -ENOKEY;
	}
	goto out;
nomem:
	seterr(err, errlen, "out of memory");
	*ret = -ENOMEM;
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
		ret = fetch(c, c->src, v, err, sizeof(err));
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

int pf_creds_new(const struct pf_s3_conf *conf, const struct pf_creds_cfg *cfg,
		 struct pf_creds **out, char *err, size_t errlen)
{
	struct pf_creds *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;
	const char *m;
	char why[700] = "";
	char when[32];
	int ret = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!c) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->env = cfg->env;
	snprintf(c->region, sizeof(c->region), "%s",
		 cfg->region && *cfg->region ? cfg->region : conf->region);
	if (cfg->cacert && !(c->cacert = strdup(cfg->cacert))) {
		free(c);
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->insecure = cfg->insecure;
	c->margin_s = cfg->margin_s;
	m = env_get(cfg->env, "PF_CREDS_MARGIN_S");
	if (!c->margin_s)
		c->margin_s = m ? (unsigned)strtoul(m, NULL, 10) : 300;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);

	if (conf->cred.anonymous) {
		c->anonymous = true;
		snprintf(c->desc, sizeof(c->desc), "none (no_sign)");
		*out = c;
		return 0;
	}
	if (!conf->cred.chain) {
		c->src = src_new(SRC_STATIC);
		if (!c->src) {
			ret = -ENOMEM;
			seterr(err, errlen, "out of memory");
			goto fail;
		}
		memcpy(c->src->val.access_key, conf->cred.access_key,
		       sizeof(c->src->val.access_key));
		memcpy(c->src->val.secret_key, conf->cred.secret_key,
		       sizeof(c->src->val.secret_key));
		memcpy(c->src->val.session_token, conf->cred.session_token,
		       sizeof(c->src->val.session_token));
		snprintf(c->src->desc, sizeof(c->src->desc), "%s",
			 conf->cred.source);
	} else if (cfg->profile && *cfg->profile) {
		/* -o profile: that profile, nothing else */
		c->src = from_profile(c, cfg->profile, 0, err, errlen, &ret);
	} else {
		const char *prof = env_get(c->env, "AWS_PROFILE");
		struct pf_aws_profile *p = calloc(1, sizeof(*p));
		char tried[600];
		int r;

		if (!p) {
			ret = -ENOMEM;
			seterr(err, errlen, "out of memory");
			goto fail;
		}
		if (!prof)
			prof = "default";
		snprintf(tried, sizeof(tried), "environment (no "
			 "AWS_ACCESS_KEY_ID)");
		/* 2. web identity */
		c->src = webid_from_env(c->env, err, errlen, &ret);
		if (!c->src && !ret) {
			snprintf(tried + strlen(tried),
				 sizeof(tried) - strlen(tried), ", web "
				 "identity (no AWS_WEB_IDENTITY_TOKEN_FILE)");
			/* 3. the shared files */
			r = pf_s3_profile_read(c->env, prof, p, why,
					       sizeof(why));
			if (r == 0 && (p->other_creds || (p->access_key[0] &&
							  p->secret_key[0])))
				c->src = from_profile(c, prof, 0, err, errlen,
						      &ret);
			else if (r < 0 && r != -ENOENT)
				pf_debug("AWS credentials: profile '%s' "
					 "skipped: %s", prof, why);
			if (!c->src && !ret)
				snprintf(tried + strlen(tried),
					 sizeof(tried) - strlen(tried),
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
					 sizeof(tried) - strlen(tried),
					 ", container (no AWS_CONTAINER_"
					 "CREDENTIALS_RELATIVE_URI or "
					 "_FULL_URI)");
		}
		/* 5. EC2 instance metadata: the last, tried, not required */
		if (!c->src && !ret) {
			c->src = imds_from_env(c->env, &ret, err, errlen);
			if (!c->src && !ret) {
				seterr(err, errlen, "no AWS credentials: tried "
				       "%s, EC2 instance metadata (disabled "
				       "by AWS_EC2_METADATA_DISABLED); set "
				       "AWS_ACCESS_KEY_ID and "
				       "AWS_SECRET_ACCESS_KEY, configure a "
				       "profile, or use -o no_sign for a "
				       "public bucket", tried);
				ret = -ENOKEY;
			} else if (c->src) {
				ret = fetch(c, c->src, &c->cur, why,
					    sizeof(why));
				if (ret < 0) {
					seterr(err, errlen, "no AWS "
					       "credentials: tried %s, %s; set "
					       "AWS_ACCESS_KEY_ID and "
					       "AWS_SECRET_ACCESS_KEY, "
					       "configure a profile, or use "
					       "-o no_sign for a public "
					       "bucket", tried, why);
					ret = ret == -EACCES ? -EACCES :
							       -ENOKEY;
					goto fail;
				}
				goto fetched;
			}
		}
	}
	if (ret < 0 || !c->src) {
		if (!ret) {
			ret = -ENOKEY;
			seterr(err, errlen, "no AWS credentials");
		}
		goto fail;
	}
	ret = fetch(c, c->src, &c->cur, why, sizeof(why));
	if (ret < 0) {
		seterr(err, errlen, "AWS credentials from %s: %s", c->src->desc,
		       why);
		goto fail;
	}
fetched:
	c->fetched = wall_now();
	snprintf(c->desc, sizeof(c->desc), "%s", c->src->desc);
	if (c->cur.expiry && c->cur.expiry <= c->fetched) {
		fmt_time(c->cur.expiry, when, sizeof(when));
		seterr(err, errlen, "AWS credentials from %s expired at %s "
		       "when fetched (is the clock right?)", c->desc, when);
		ret = -EACCES;
		goto fail;
	}
	if (c->cur.expiry) {
		fmt_time(c->cur.expiry, when, sizeof(when));
		/* the mount line names the source: one line at mount */
		pf_debug("AWS credentials from %s; they expire at %s and are "
			 "renewed %u s before", c->desc, when, c->margin_s);
		ret = -pthread_create(&c->thread, NULL, refresh_main, c);
		if (ret < 0) {
			seterr(err, errlen, "cannot start the credential "
			       "refresh thread: %s", strerror(-ret));
			goto fail;
		}
		c->started = true;
	} else {
		pf_debug("AWS credentials from %s", c->desc);
	}
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
