/*
 * curl_loop.c - one curl multi loop, many HTTP(S) requests in flight: the
 * transport of the object-storage backends (see pf_curl.h).
 *
 * DESIGN
 * One thread owns the CURLM, every easy handle and an epoll set.
 * Submitters append to c->queue under c->lock and, when the queue was
 * empty, write c->evfd (an eventfd in the epoll set); the loop moves the
 * queue into the multi and sleeps in epoll_wait().  curl tells the loop
 * which sockets to watch (CURLMOPT_SOCKETFUNCTION: epoll_ctl) and when it
 * next needs a timeout run (CURLMOPT_TIMERFUNCTION: c->timer_ns); the loop
 * hands curl only the sockets that are ready (curl_multi_socket_action),
 * so a wake-up for one paced chunk costs one transfer's work, not a walk
 * over every transfer as curl_multi_perform() does.  Finished transfers
 * are drained with curl_multi_info_read().  A finished request is judged
 * (done, resumed, retried later, failed) on the loop thread; a request
 * waiting for its retry sits in c->delayed (loop-private, sorted by due
 * time) and bounds the epoll timeout.  Easy handles are kept in a free list
 * and reused, so steady state makes no allocations but the request
 * headers.  c->lock guards the queue, the stopping flag and the totals; it
 * is never held across a curl call or done().
 *
 * This file has the loop, its thread and the requests' life cycle;
 * curl_answer.c the checking of a response's headers and the taking of
 * its body; curl_int.h what they share.
 *
 * Response checking happens in the header callback: when the blank line
 * ending a final response's headers arrives, the status, Content-Range and
 * ETag decide whether the body may be written (hstate H_BODY), skipped
 * into the error buffer (H_ERRBODY), or the transfer aborted (H_REJECT).
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pf_clock.h"
#include "pf_creds.h"
#include "pf_curl.h"
#include "pf_listing.h"
#include "pf_log.h"
#include "curl_int.h"

static int64_t now_ns(void)
{
	return (int64_t)pf_now_ns();
}

int pf_curl_status_errno(long status)
{
	switch (status) {
	case 404:
	case 410:
		return -ENOENT;
	case 401:
	case 403:
		return -EACCES;
	default:
		return -EIO;
	}
}

static bool status_retryable(long status)
{
	return status == 429 || status == 408 || (status >= 500 &&
						  status != 501);
}

/* ---- the loop ------------------------------------------------------------ */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static CURL *easy_get(struct pf_curl *c)
{
	if (c->nfree) {
		CURL *e = c->free_easy[--c->nfree];

		curl_easy_reset(e);
		return e;
	}
	return curl_easy_init();
}

static void easy_put(struct pf_curl *c, CURL *e)
{
	if (c->nfree == c->capfree) {
		unsigned cap = c->capfree ? c->capfree * 2 : 16;
		CURL **n = realloc(c->free_easy, cap * sizeof(*n));

		if (!n) {
			curl_easy_cleanup(e);
			return;
		}
		c->free_easy = n;
		c->capfree = cap;
	}
	c->free_easy[c->nfree++] = e;
}

static void active_add(struct pf_creq **head, struct pf_creq *r)
{
	r->prev = NULL;
	r->next = *head;
	if (*head)
		(*head)->prev = r;
	*head = r;
}

static void active_del(struct pf_creq **head, struct pf_creq *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		*head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = NULL;
	r->prev = NULL;
}

static void complete(struct pf_curl *c, struct pf_creq *r, int err);

/* Frees the request headers, wiping them: one may be the session token. */
static void hdrs_free(struct pf_creq *r)
{
	for (struct curl_slist *l = r->hdrs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
}

/*
 * The credentials of this try, copied under the provider's lock: a retry
 * after a renewal is signed with the new ones.  *sigp is the caller's to
 * wipe and free.
 */
static int try_sign(struct pf_curl *c, struct pf_creq *r,
		    struct pf_creds_sig **sigp)
{
	struct pf_creds_sig *sig = malloc(sizeof(*sig));
	int ret;

	if (!sig)
		return -ENOMEM;
	ret = pf_creds_sign(c->creds, sig);
	if (ret < 0) {
		free(sig);
		snprintf(r->errmsg, sizeof(r->errmsg), "the AWS "
			 "credentials have expired");
		return ret;
	}
	*sigp = sig;
	return 0;
}

/* What a try of @r starts from, on the easy handle @e. */
static void try_reset(struct pf_curl *c, struct pf_creq *r, CURL *e)
{
	r->easy = e;
	r->loop = c;
	r->got_start = r->got;
	r->sock = -1;
	r->lowat = false;
	r->hstate = H_STATUS;
	r->status = 0;
	r->final_err = 0;
	r->skip = 0;
	r->crange[0] = '\0';
	r->errmsg[0] = '\0';
	if (r->kind != PF_CREQ_RANGE || r->buf) {
		/* a DOC body or an error body of an earlier try */
		free(r->buf);
		r->buf = NULL;
		r->buflen = 0;
	}
	hdrs_free(r);
}

/* The options of every try: callbacks, timeouts, TLS, the signature. */
static void easy_setup(struct pf_curl *c, struct pf_creq *r, CURL *e,
		       int64_t left, const struct pf_creds_sig *sig)
{
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, pf_curl_on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, pf_curl_on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	/* a signed request's token and signature stay with its host */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, sig ? 0L : 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
			 (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)c->cfg.connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)c->cfg.timeout_s);
	/* what is left of the request's total deadline (at least 1 ms) */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
			 (long)((left + 999999) / 1000000));
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "prefetchfs");
	if (c->cacert)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->cacert);
	if (c->cfg.insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (sig && sig->userpwd[0]) {
		/* curl copies the string; the slist below holds the token */
		curl_easy_setopt(e, CURLOPT_AWS_SIGV4, c->sigv4);
		curl_easy_setopt(e, CURLOPT_USERPWD, sig->userpwd);
		r->hdrs = curl_slist_append(r->hdrs,
					    "x-amz-content-sha256: "
					    "UNSIGNED-PAYLOAD");
		if (sig->token_hdr[0])
			r->hdrs = curl_slist_append(r->hdrs, sig->token_hdr);
	}
}

/* If-Match or If-Unmodified-Since: the version the file pinned. */
static void add_validators(struct pf_creq *r)
{
	const char *if_match;
	int64_t pin_mtime;
	char hdr[256];

	pf_creq_validators(r, &if_match, &pin_mtime);
	if (if_match) {
		snprintf(hdr, sizeof(hdr), "If-Match: %s", if_match);
		r->hdrs = curl_slist_append(r->hdrs, hdr);
	} else if (pin_mtime > 0) {
		time_t t = (time_t)pin_mtime;
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(hdr, sizeof(hdr),
			 "If-Unmodified-Since: %a, %d %b %Y %H:%M:%S GMT", &tm);
		r->hdrs = curl_slist_append(r->hdrs, hdr);
	}
}

/* Sets up and adds one try of @r to the multi. */
static int start(struct pf_curl *c, struct pf_creq *r,
		 struct pf_creq **active)
{
	int64_t left = r->deadline_ns - pf_now_ns();
	CURL *e;
	char range[64];
	struct pf_creds_sig *sig = NULL;

	if (left <= 0)
		return -ETIMEDOUT;
	if (c->sigv4) {
		int ret = try_sign(c, r, &sig);

		if (ret < 0)
			return ret;
	}
	e = easy_get(c);
	if (!e) {
		if (sig) {
			pf_creds_sig_wipe(sig);
			free(sig);
		}
		return -ENOMEM;
	}
	try_reset(c, r, e);
	easy_setup(c, r, e, left, sig);
	if (sig) {
		pf_creds_sig_wipe(sig);
		free(sig);
	}
	add_validators(r);
	if (r->kind == PF_CREQ_HEAD)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	if (r->kind == PF_CREQ_RANGE) {
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64,
			 r->off + r->got, r->off + r->len - 1);
		curl_easy_setopt(e, CURLOPT_RANGE, range);
	}
	/* no Accept-Encoding: ranges are of the stored bytes */
	if (r->hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
		r->easy = NULL;
		easy_put(c, e);
		return -ENOMEM;
	}
	active_add(active, r);
	c->active++;
	return 0;
}

static void complete(struct pf_curl *c, struct pf_creq *r, int err)
{
	hdrs_free(r);
	if (!err && r->kind == PF_CREQ_RANGE) {
		int64_t us = (now_ns() - r->submit_ns) / 1000;

		pthread_mutex_lock(&c->lock);
		c->tot.range_gets++;
		c->tot.range_bytes += r->len;
		c->tot.range_us += us > 0 ? (uint64_t)us : 0;
		c->tot.range_ttfb_us += r->ttfb_us > 0 ? (uint64_t)r->ttfb_us
						       : 0;
		pthread_mutex_unlock(&c->lock);
	}
	if (err) {
		pthread_mutex_lock(&c->lock);
		c->tot.errors++;
		pthread_mutex_unlock(&c->lock);
		if (r->kind == PF_CREQ_DOC && r->status >= 200 &&
		    r->status < 300) {
			free(r->buf);
			r->buf = NULL;
			r->buflen = 0;
		}
	}
	r->done(r, err);
}

/* Error text of a failed status: S3's error code and message if any. */
static void status_msg(struct pf_creq *r)
{
	char code[64];
	char msg[160];

	if (r->errmsg[0])
		return;
	if (r->status >= 300 && r->status < 400 && r->status != 304) {
		/* only signed requests stop at a redirect */
		snprintf(r->errmsg, sizeof(r->errmsg), "HTTP %ld: a redirect, "
			 "not followed with credentials (check the region and "
			 "the endpoint)", r->status);
		return;
	}
	if (r->buf && pf_list_parse_s3_error(r->buf, r->buflen, code,
					     sizeof(code), msg,
					     sizeof(msg)) == 0)
		snprintf(r->errmsg, sizeof(r->errmsg), "HTTP %ld %s: %s",
			 r->status, code, msg);
	else
		snprintf(r->errmsg, sizeof(r->errmsg), "HTTP %ld", r->status);
}

/* The request's total deadline passed (any try, any state): -EIO. */
static void deadline_fail(struct pf_curl *c, struct pf_creq *r)
{
	char was[sizeof(r->errmsg)];

	memcpy(was, r->errmsg, sizeof(was));
	snprintf(r->errmsg, sizeof(r->errmsg), "no complete answer within "
		 "%.0f s (request_timeout)%s%.120s",
		 (double)(r->deadline_ns - r->submit_ns) / 1e9,
		 was[0] ? "; last: " : "", was);
	r->timed_out = true;
	complete(c, r, -EIO);
}

/* Queues @r for a later try; -ETIMEDOUT (not queued) when that try
 * would start past the request's deadline. */
static int schedule_retry(struct pf_curl *c, struct pf_creq *r)
{
	unsigned shift = r->tries < 8 ? r->tries : 8;
	int64_t base = (int64_t)c->cfg.backoff_ms << shift;
	int64_t ms;
	struct pf_creq **pp = &c->delayed;

	if (base > 5000)
		base = 5000;
	/* full jitter in [base/2, base] */
	ms = base / 2 + (base / 2 ? (int64_t)(random() % (base / 2 + 1)) : 0);
	if (r->retry_after_ms > ms)
		ms = r->retry_after_ms;
	if (now_ns() + ms * 1000000 >= r->deadline_ns)
		return -ETIMEDOUT;
	r->tries++;
	r->due_ns = now_ns() + ms * 1000000;
	while (*pp && (*pp)->due_ns <= r->due_ns)
		pp = &(*pp)->next;
	r->next = *pp;
	*pp = r;
	pthread_mutex_lock(&c->lock);
	c->tot.retries++;
	pthread_mutex_unlock(&c->lock);
	pf_debug("retrying %s in %" PRId64 " ms (try %u): %s", r->url, ms,
		 r->tries + 1, r->errmsg);
	return 0;
}

static bool curl_retryable(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
		return true;
	default:
		return false;
	}
}

/* A transfer of @r ended with @rc: done, resumed, retried or failed. */
static void finished(struct pf_curl *c, struct pf_creq *r, CURLcode rc,
		     uint64_t got_before, struct pf_creq **active)
{
	bool progress = r->got > got_before;
	bool retry = false;
	int err = 0;
	int ret;

	if (r->kind == PF_CREQ_RANGE && r->got == r->len) {
		complete(c, r, 0);
		return;
	}
	if (r->final_err) {
		complete(c, r, r->final_err);
		return;
	}
	if (rc == CURLE_WRITE_ERROR && r->hstate == H_ERRBODY)
		rc = CURLE_OK; /* an error body we cut (pf_curl_on_body) */

	if (rc == CURLE_OK && r->status >= 200 && r->status < 300) {
		if (r->kind != PF_CREQ_RANGE) {
			complete(c, r, 0);
			return;
		}
		/* fewer bytes than asked: resume from the first missing */
		snprintf(r->errmsg, sizeof(r->errmsg),
			 "body ended at %" PRIu64 " of %" PRIu64 " bytes",
			 r->got, r->len);
		if (progress)
			goto resume;
		retry = true;
		err = -EIO;
	} else if (rc == CURLE_OK) {
		if (r->status == 412 || r->status == 416)
			r->changed = 1;
		/* a lazily pinned object gone since its listing */
		if (r->pin && (r->status == 404 || r->status == 410))
			r->changed = 1;
		status_msg(r);
		retry = status_retryable(r->status);
		err = pf_curl_status_errno(r->status);
	} else {
		if (!r->errmsg[0])
			snprintf(r->errmsg, sizeof(r->errmsg), "%s",
				 curl_easy_strerror(rc));
		if (r->kind == PF_CREQ_RANGE && progress &&
		    curl_retryable(rc))
			goto resume;
		retry = curl_retryable(rc);
		err = -EIO;
	}
	if (now_ns() >= r->deadline_ns) {
		deadline_fail(c, r);
		return;
	}
	if (retry && r->tries < c->cfg.retries) {
		if (schedule_retry(c, r) < 0)
			deadline_fail(c, r);
		return;
	}
	complete(c, r, err);
	return;

resume:
	pthread_mutex_lock(&c->lock);
	c->tot.resumed++;
	pthread_mutex_unlock(&c->lock);
	pf_debug("resuming %s at byte %" PRIu64 ": %s", r->url,
		 r->off + r->got, r->errmsg);
	ret = start(c, r, active);
	if (ret == -ETIMEDOUT)
		deadline_fail(c, r);
	else if (ret < 0)
		complete(c, r, ret);
}

/* What the transfer of @e tells the totals: whether it opened a
 * connection, and a ranged GET's time to its first byte. */
static void transfer_info(struct pf_curl *c, struct pf_creq *r, CURL *e)
{
	long conns = 0;
	curl_off_t ttfb;

	if (curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns) != CURLE_OK)
		conns = 0;
	if (r->kind == PF_CREQ_RANGE &&
	    curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &ttfb) ==
		    CURLE_OK)
		r->ttfb_us = ttfb;
	if (conns > 0) {
		pthread_mutex_lock(&c->lock);
		c->tot.connects += (uint64_t)conns;
		pthread_mutex_unlock(&c->lock);
	}
}

static void drain(struct pf_curl *c, struct pf_creq **active)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(c->multi, &left))) {
		struct pf_creq *r = NULL;
		CURLcode rc = m->data.result;
		CURL *e = m->easy_handle;
		uint64_t before;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
		transfer_info(c, r, e);
		pf_curl_body_lowat_end(r);
		curl_multi_remove_handle(c->multi, e);
		active_del(active, r);
		c->active--;
		r->easy = NULL;
		easy_put(c, e);
		before = r->got_start;
		finished(c, r, rc, before, active);
	}
}

static void cancel_all(struct pf_curl *c, struct pf_creq **active)
{
	struct pf_creq *r;

	while ((r = *active)) {
		active_del(active, r);
		pf_curl_body_lowat_end(r);
		curl_multi_remove_handle(c->multi, r->easy);
		easy_put(c, r->easy);
		r->easy = NULL;
		c->active--;
		snprintf(r->errmsg, sizeof(r->errmsg), "cancelled");
		complete(c, r, -ECANCELED);
	}
	while ((r = c->delayed)) {
		c->delayed = r->next;
		complete(c, r, -ECANCELED);
	}
	pthread_mutex_lock(&c->lock);
	r = c->queue;
	c->queue = NULL;
	c->queue_tail = &c->queue;
	pthread_mutex_unlock(&c->lock);
	while (r) {
		struct pf_creq *n = r->next;

		complete(c, r, -ECANCELED);
		r = n;
	}
}

/* Start one try of @r, or fail it. */
static void launch(struct pf_curl *c, struct pf_creq *r,
		   struct pf_creq **active)
{
	int ret;

	r->next = NULL;
	ret = start(c, r, active);
	if (ret == -ETIMEDOUT) {
		deadline_fail(c, r);
		return;
	}
	if (ret < 0) {
		snprintf(r->errmsg, sizeof(r->errmsg), "%s", strerror(-ret));
		complete(c, r, ret);
		return;
	}
}

/* Wake the loop (any thread). */
static void wake(struct pf_curl *c)
{
	uint64_t one = 1;
	ssize_t n;

	do {
		n = write(c->evfd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
	/* EAGAIN: the counter is full, so the loop is woken anyway */
}

/*
 * CURLMOPT_SOCKETFUNCTION, on the loop thread (inside curl calls): watch
 * @s for what curl waits for.  The fd is the epoll key; a socket curl has
 * closed and a new one with its number are told apart by MOD failing
 * with ENOENT (a closed fd leaves the epoll set).
 */
static int on_socket(CURL *e, curl_socket_t s, int what, void *arg,
		     void *sockp)
{
	struct pf_curl *c = arg;
	struct epoll_event ev = { .data.fd = s };
	struct pf_creq *r = NULL;

	(void)sockp;
	if (e && curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r) ==
		 CURLE_OK && r)
		r->sock = what == CURL_POLL_REMOVE ? -1 : (int)s;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, s, &ev) < 0 &&
	    (errno != ENOENT ||
	     epoll_ctl(c->epfd, EPOLL_CTL_ADD, s, &ev) < 0)) {
		pf_err("curl loop: cannot watch socket %d: %s", (int)s,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* CURLMOPT_TIMERFUNCTION, on the loop thread: curl wants a timeout run
 * in @ms (-1: no timer).  The loop makes it; curl may not be called
 * from here. */
static int on_timer(CURLM *m, long ms, void *arg)
{
	struct pf_curl *c = arg;

	(void)m;
	c->timer_ns = ms < 0 ? -1 : now_ns() + (int64_t)ms * 1000000;
	return 0;
}

/* epoll_wait timeout in ms: until curl's timer or the first retry. */
static int wait_ms(const struct pf_curl *c)
{
	int64_t due = c->timer_ns;
	int64_t d;

	if (c->delayed && (due < 0 || c->delayed->due_ns < due))
		due = c->delayed->due_ns;
	if (due < 0)
		return IDLE_MS;
	d = due - now_ns();
	if (d <= 0)
		return 0;
	/* round up: waking before the time only loops once more */
	d = (d + 999999) / 1000000;
	return d < IDLE_MS ? (int)d : IDLE_MS;
}

static void *loop_main(void *arg)
{
	struct pf_curl *c = arg;
	struct pf_creq *active = NULL;
	struct epoll_event evs[MAX_EVENTS];
	int still;

	for (;;) {
		struct pf_creq *q;
		bool stop;
		int64_t now;
		int n;

		pthread_mutex_lock(&c->lock);
		q = c->queue;
		c->queue = NULL;
		c->queue_tail = &c->queue;
		stop = c->stopping;
		pthread_mutex_unlock(&c->lock);
		if (stop) {
			/* put back what was taken, cancel everything */
			while (q) {
				struct pf_creq *nx = q->next;

				complete(c, q, -ECANCELED);
				q = nx;
			}
			break;
		}
		while (q) {
			struct pf_creq *nx = q->next;

			launch(c, q, &active);
			q = nx;
		}
		now = now_ns();
		while (c->delayed && c->delayed->due_ns <= now) {
			struct pf_creq *r = c->delayed;

			c->delayed = r->next;
			launch(c, r, &active);
		}
		n = epoll_wait(c->epfd, evs, MAX_EVENTS, wait_ms(c));
		if (n < 0 && errno != EINTR) {
			pf_err("curl loop: epoll_wait: %s", strerror(errno));
			n = 0;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			int how = 0;

			if (fd == c->evfd) {
				uint64_t v;

				if (read(c->evfd, &v, sizeof(v)) < 0 &&
				    errno != EAGAIN)
					pf_err("curl loop: eventfd: %s",
					       strerror(errno));
				continue;
			}
			if (evs[i].events & (EPOLLIN | EPOLLHUP))
				how |= CURL_CSELECT_IN;
			if (evs[i].events & EPOLLOUT)
				how |= CURL_CSELECT_OUT;
			if (evs[i].events & EPOLLERR)
				how |= CURL_CSELECT_ERR;
			curl_multi_socket_action(c->multi, fd, how, &still);
		}
		if (c->timer_ns >= 0 && c->timer_ns <= now_ns()) {
			c->timer_ns = -1;
			curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT,
						 0, &still);
		}
		drain(c, &active);
	}
	cancel_all(c, &active);
	return NULL;
}

int pf_curl_new(const struct pf_curl_cfg *cfg, struct pf_curl **out)
{
	struct pf_curl *c = calloc(1, sizeof(*c));
	struct epoll_event ev = { .events = EPOLLIN };
	int ret = -ENOMEM;

	if (!c)
		return -ENOMEM;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK) {
		free(c);
		return -EIO;
	}
	c->cfg = *cfg;
	if (!c->cfg.max_conns)
		c->cfg.max_conns = 32;
	if (!c->cfg.timeout_s)
		c->cfg.timeout_s = 30;
	if (!c->cfg.connect_timeout_ms)
		c->cfg.connect_timeout_ms = 10000;
	if (!c->cfg.backoff_ms)
		c->cfg.backoff_ms = 100;
	if (cfg->sigv4 && !cfg->creds) {
		ret = -EINVAL;	/* signing needs the credentials */
		goto out;
	}
	if ((cfg->cacert && !(c->cacert = strdup(cfg->cacert))) ||
	    (cfg->sigv4 && !(c->sigv4 = strdup(cfg->sigv4))))
		goto out;
	c->creds = cfg->sigv4 ? cfg->creds : NULL;
	c->cfg.cacert = NULL;
	c->cfg.sigv4 = NULL;
	c->cfg.creds = NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->queue_tail = &c->queue;
	c->timer_ns = -1;
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->epfd < 0 || c->evfd < 0) {
		ret = -errno;
		goto out_fds;
	}
	ev.data.fd = c->evfd;
	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->evfd, &ev) < 0) {
		ret = -errno;
		goto out_fds;
	}
	ret = -ENOMEM;
	c->multi = curl_multi_init();
	if (!c->multi)
		goto out_fds;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_PIPELINING,
			  (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)c->cfg.max_conns);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			  (long)c->cfg.max_conns);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
			  (long)c->cfg.max_conns);
	ret = -pthread_create(&c->thread, NULL, loop_main, c);
	if (ret < 0)
		goto out_multi;
	pthread_setname_np(c->thread, "pf-http");
	c->started = true;
	*out = c;
	return 0;

out_multi:
	curl_multi_cleanup(c->multi);
out_fds:
	if (c->evfd >= 0)
		close(c->evfd);
	if (c->epfd >= 0)
		close(c->epfd);
	pthread_mutex_destroy(&c->lock);
out:
	free(c->cacert);
	free(c->sigv4);
	free(c);
	return ret;
}

void pf_curl_stop(struct pf_curl *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_mutex_unlock(&c->lock);
	wake(c);
	if (c->started) {
		pthread_join(c->thread, NULL);
		c->started = false;
	}
}

void pf_curl_free(struct pf_curl *c)
{
	if (!c)
		return;
	pf_curl_stop(c);
	for (unsigned i = 0; i < c->nfree; i++)
		curl_easy_cleanup(c->free_easy[i]);
	free(c->free_easy);
	/* after the multi: its cleanup may still tell on_socket() */
	curl_multi_cleanup(c->multi);
	close(c->evfd);
	close(c->epfd);
	pthread_mutex_destroy(&c->lock);
	free(c->cacert);
	free(c->sigv4);
	free(c);
}

/* A request's total time (see pf_curl.h, Deadlines). */
static int64_t request_budget_ns(const struct pf_curl *c,
				 const struct pf_creq *r)
{
	int64_t t = c->cfg.timeout_s;

	if (c->cfg.request_timeout_s)
		return (int64_t)c->cfg.request_timeout_s * 1000000000;
	if (r->kind == PF_CREQ_RANGE)
		return (2 * t + (int64_t)(r->len >> 18)) * 1000000000;
	if (r->kind == PF_CREQ_DOC)
		return 8 * t * 1000000000;
	return 2 * t * 1000000000;
}

int pf_curl_submit(struct pf_curl *c, struct pf_creq *r)
{
	bool was_empty;

	r->next = NULL;
	r->prev = NULL;
	r->got = 0;
	r->started_told = false;
	r->iov_i = 0;
	r->iov_pos = 0;
	r->tries = 0;
	r->buf = NULL;
	r->buflen = 0;
	r->hdrs = NULL;
	r->easy = NULL;
	r->status = 0;
	r->size = -1;
	r->mtime = -1;
	r->etag[0] = '\0';
	r->ctype[0] = '\0';
	r->errmsg[0] = '\0';
	r->changed = 0;
	r->ttfb_us = -1;
	r->submit_ns = now_ns();
	r->deadline_ns = r->submit_ns + request_budget_ns(c, r);
	pthread_mutex_lock(&c->lock);
	if (c->stopping) {
		pthread_mutex_unlock(&c->lock);
		return -ESHUTDOWN;
	}
	/* a queue with requests already has a wake-up pending */
	was_empty = !c->queue;
	*c->queue_tail = r;
	c->queue_tail = &r->next;
	c->tot.requests++;
	pthread_mutex_unlock(&c->lock);
	if (was_empty)
		wake(c);
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
};

static void run_done(struct pf_creq *r, int err)
{
	struct waiter *w = r->priv;

	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->err = err;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int pf_curl_run(struct pf_curl *c, struct pf_creq *r)
{
	struct waiter w = { .done = false };
	int ret;

	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	r->done = run_done;
	r->priv = &w;
	ret = pf_curl_submit(c, r);
	if (ret == 0) {
		pthread_mutex_lock(&w.lock);
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		ret = w.err;
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return ret;
}

void pf_curl_totals(struct pf_curl *c, struct pf_curl_totals *t)
{
	pthread_mutex_lock(&c->lock);
	*t = c->tot;
	pthread_mutex_unlock(&c->lock);
	t->active = c->active;
}
