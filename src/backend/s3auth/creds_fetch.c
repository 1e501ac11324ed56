/*
 * creds_fetch.c - fetching credentials from each source of the chain:
 * STS (AssumeRoleWithWebIdentity, AssumeRole), credential_process, SSO
 * (GetRoleCredentials with the cached token), container endpoints (ECS,
 * EKS Pod Identity) and EC2 instance metadata (IMDSv2, v1 fallback),
 * over one blocking curl easy exchange with no redirects, small file
 * reads and child processes.
 *
 * DESIGN
 * Entered by the mounting thread (pf_creds_new(): the first fetch) and
 * by the refresh thread (renewals), one fetch at a time, through
 * pf_creds_fetch_source(). No lock is held here: a fetch reads only the source
 * tree (built once, then read-only) and c's settings, and returns the new
 * credentials to its caller, which swaps them in under c->lock.  Request bodies
 * and headers that carry secrets are wiped after the exchange.
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

extern char **environ;

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
		pf_err_set(err, errlen, "out of memory");
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
			pf_err_set(err, errlen, "the answer is larger than %d "
			       "bytes", DOC_MAX);
		else
			pf_err_set(err, errlen, "%s", curl_easy_strerror(rc));
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
		pf_err_set(err, errlen, "cannot read the %s %s: %s", what, path,
		       strerror(-ret));
		return ret;
	}
	for (;;) {
		ssize_t k = read(fd, out + n, outlen - 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			ret = -errno;
			pf_err_set(err, errlen, "cannot read the %s %s: %s",
				what, path, strerror(-ret));
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n == outlen - 1) {
			ret = -EFBIG;
			pf_err_set(err, errlen, "the %s %s is larger than %zu "
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
		pf_err_set(err, errlen, "the %s %s is empty", what, path);
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
		pf_err_set(err, errlen, "pipe: %s", strerror(-ret));
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
		pf_err_set(err, errlen, "cannot run the credential_process of "
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
		pf_err_set(err, errlen,
			"the credential_process of profile '%s' "
			"did not finish in %d s",
			s->profile, PROCESS_TIMEOUT_MS / 1000);
	} else if (ret < 0) {
		pf_err_set(err, errlen, "reading the output of the "
		       "credential_process of profile '%s': %s", s->profile,
		       strerror(-ret));
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		ret = -EACCES;
		if (WIFEXITED(st))
			pf_err_set(err, errlen,
				"the credential_process of profile "
				"'%s' exited with status %d",
				s->profile, WEXITSTATUS(st));
		else
			pf_err_set(err, errlen,
				"the credential_process of profile "
				"'%s' was killed by signal %d",
				s->profile, WTERMSIG(st));
	}
	if (ret < 0)
		body_free(out);
	return ret;
}

/* ---- fetching from each source ---- */

/* "https://sts.REGION.amazonaws.com" or the endpoint set. */
static void sts_endpoint(struct pf_creds *c, char *out, size_t outlen)
{
	const char *ep = pf_s3_env_get(c->env, "AWS_ENDPOINT_URL_STS");
	size_t n;

	if (!ep)
		ep = pf_s3_env_get(c->env, "AWS_ENDPOINT_URL");
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
			pf_err_set(err, errlen, "out of memory");
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
				pf_err_set(err, errlen, "out of memory");
				goto out;
			}
			snprintf(tokhdr, n, "x-amz-security-token: %s",
				 signer->session_token);
			h.hdrs = curl_slist_append(h.hdrs, tokhdr);
		}
	}
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		pf_err_set(err, errlen, "STS at %s: %s", url, why);
		goto out;
	}
	ret = pf_creds_parse_sts(h.body.p ? h.body.p : "", h.body.len, v, why,
				 sizeof(why));
	if (ret == -EACCES || (ret < 0 && h.status != 200)) {
		pf_err_set(err, errlen, "STS at %s refused %s: HTTP %ld%s%s",
			url, s->role_arn, h.status, ret == -EACCES ? ", " : "",
			ret == -EACCES ? why : "");
		ret = -EACCES;
	} else if (ret < 0) {
		pf_err_set(
			err, errlen, "bad answer from STS at %s: %s", url, why);
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
		pf_err_set(err, errlen, "out of memory");
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
		pf_err_set(err, errlen, "the AssumeRoleWithWebIdentity request "
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
		pf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = pf_creds_fetch_source(c, s->base, src, why, sizeof(why));
	if (ret < 0) {
		pf_err_set(err, errlen,
			"the source credentials of role %s (%s): "
			"%s",
			s->role_arn, s->base->desc, why);
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
		pf_err_set(err, errlen, "the AssumeRole request is too long");
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
		pf_err_set(err, errlen,
			"bad output of the credential_process of "
			"profile '%s': %s",
			s->profile, why);
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
		pf_err_set(
			err, errlen, "%s answered HTTP %ld", what, h->status);
		return h->status == 401 || h->status == 403 ? -EACCES : -EIO;
	}
	ret = pf_creds_parse_json(h->body.p ? h->body.p : "", h->body.len,
				  PF_CJSON_METADATA, v, why, sizeof(why));
	if (ret < 0)
		pf_err_set(err, errlen, "bad answer from %s: %s", what, why);
	return ret;
}

static int fetch_container(struct pf_creds *c, struct source *s,
			   struct pf_cred_val *v, char *err, size_t errlen)
{
	struct http h = { .method = "GET", .url = s->url,
			  .timeout_ms = HTTP_TIMEOUT_MS };
	const char *file = pf_s3_env_get(c->env,
				   "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *tokv =
		pf_s3_env_get(c->env, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
	char *hdr = malloc(TOKEN_FILE_MAX + 32);
	char *tok = malloc(TOKEN_FILE_MAX);
	char why[300];
	int ret = 0;

	if (!hdr || !tok) {
		ret = -ENOMEM;
		pf_err_set(err, errlen, "out of memory");
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
			pf_err_set(err, errlen,
				"the container authorization token "
				"holds a line break");
			goto out;
		}
		snprintf(hdr, TOKEN_FILE_MAX + 32, "Authorization: %s", tok);
		h.hdrs = curl_slist_append(NULL, hdr);
	}
	ret = http_do(c, &h, why, sizeof(why));
	if (ret < 0) {
		pf_err_set(err, errlen, "container credentials endpoint %s: %s",
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
		pf_err_set(err, errlen, "EC2 instance metadata at %s: %s",
			s->url, why);
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
		pf_err_set(err, errlen,
			"EC2 instance metadata at %s: the session "
			"token request got HTTP %ld%s",
			s->url, h.status,
			h.status == 200 ? " with a bad token"
				: s->imds_v1_off
				? " (and AWS_EC2_METADATA_V1_DISABLED "
				  "forbids IMDSv1)"
				: "");
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
		pf_err_set(err, errlen, "EC2 instance metadata at %s: %s",
			s->url, why);
		goto out;
	}
	if (h.status != 200 || !h.body.p || !h.body.len) {
		pf_err_set(err, errlen,
			"EC2 instance metadata at %s: no IAM role "
			"(HTTP %ld to the role name): attach an instance "
			"profile to the instance",
			s->url, h.status);
		ret = h.status == 404 ? -ENOKEY : -EIO;
		goto out;
	}
	{
		size_t n = strcspn(h.body.p, "\r\n");

		if (n == 0 || n >= sizeof(role)) {
			pf_err_set(err, errlen,
				"EC2 instance metadata at %s: bad "
				"role name",
				s->url);
			ret = -EINVAL;
			goto out;
		}
		memcpy(role, h.body.p, n);
		role[n] = '\0';
		for (size_t i = 0; i < n; i++) {
			if (!isalnum((unsigned char)role[i]) &&
			    !strchr("+=,.@_-", role[i])) {
				pf_err_set(err, errlen,
					"EC2 instance metadata at "
					"%s: bad role name",
					s->url);
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
		pf_err_set(err, errlen, "EC2 instance metadata at %s: %s",
			s->url, why);
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
	const char *home = pf_s3_env_get(c->env, "HOME");
	char dir[600];
	char path[900];
	char *buf = malloc(DOC_MAX);
	DIR *d;
	struct dirent *de;
	int64_t best = 0;
	int ret = -ENOKEY;

	if (!buf) {
		pf_err_set(err, errlen, "out of memory");
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
	pf_err_set(err, errlen, "%s SSO token for %s in %s: run `aws sso login "
	       "--profile %s`", best ? "the cached" : "no cached",
	       s->sso_start_url, dir, s->profile);
	if (best)
		pf_err_set(err + strlen(err), errlen - strlen(err),
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
		pf_err_set(err, errlen, "SSO portal at %s: %s", s->url, why);
		goto out;
	}
	if (h.status != 200) {
		pf_err_set(err, errlen,
			"SSO portal at %s answered HTTP %ld: run "
			"`aws sso login --profile %s`",
			s->url, h.status, s->profile);
		ret = -EACCES;
		goto out;
	}
	ret = pf_creds_parse_json(h.body.p ? h.body.p : "", h.body.len,
				  PF_CJSON_SSO, v, why, sizeof(why));
	if (ret < 0)
		pf_err_set(err, errlen,
			"bad answer from the SSO portal at %s: %s", s->url,
			why);
out:
	body_free(&h.body);
	for (struct curl_slist *l = h.hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(h.hdrs);
	return ret;
}

int pf_creds_fetch_source(struct pf_creds *c, struct source *s,
	struct pf_cred_val *v, char *err, size_t errlen)
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
	pf_err_set(err, errlen, "unknown credential source");
	return -EINVAL;
}
