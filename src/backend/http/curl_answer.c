/*
 * curl_answer.c - checking an HTTP answer and taking its body: the header
 * and body callbacks of every easy handle of the curl multi loop.  When
 * the blank line ending a final response's headers arrives, the status,
 * Content-Range and ETag decide whether the body may be written (hstate
 * H_BODY), skipped into the error buffer (H_ERRBODY), or the transfer
 * aborted (H_REJECT); the body goes to the request's iovec or document
 * buffer, bounded.
 *
 * DESIGN
 * Entered only by the loop thread, from inside curl (CURLOPT_HEADERFUNCTION,
 * CURLOPT_WRITEFUNCTION), on a request the loop owns while it is in the
 * multi: no lock is taken here.
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
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pf_clock.h"
#include "pf_creds.h"
#include "pf_curl.h"
#include "pf_listing.h"
#include "pf_log.h"
#include "curl_int.h"

/* ---- headers ------------------------------------------------------------ */

/* Case-insensitive "Name:" at the start of a header line; returns the
 * value with blanks trimmed into out. */
static bool header_is(const char *line, size_t len, const char *name,
		      char *out, size_t outlen)
{
	size_t n = strlen(name);
	size_t i;
	size_t o = 0;

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return false;
	i = n + 1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	while (len > i && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
			   line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	for (; i < len && o + 1 < outlen; i++)
		out[o++] = line[i];
	out[o] = '\0';
	return true;
}

static int parse_u64(const char *s, char **end, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*end = (char *)p;
	*out = v;
	return 0;
}

/* "bytes A-B/TOTAL" (TOTAL may be '*') */
static int parse_content_range(const char *v, uint64_t *a, uint64_t *b,
			       int64_t *total)
{
	char *p;
	uint64_t t;

	if (strncasecmp(v, "bytes ", 6) != 0)
		return -EINVAL;
	v += 6;
	while (*v == ' ')
		v++;
	if (parse_u64(v, &p, a) < 0 || *p != '-')
		return -EINVAL;
	if (parse_u64(p + 1, &p, b) < 0 || *p != '/' || *b < *a)
		return -EINVAL;
	p++;
	if (*p == '*') {
		*total = -1;
		return 0;
	}
	if (parse_u64(p, &p, &t) < 0 || t > INT64_MAX)
		return -EINVAL;
	*total = (int64_t)t;
	return 0;
}

static void reject(struct pf_creq *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reject(struct pf_creq *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	r->final_err = err;
	r->hstate = H_REJECT;
}

void pf_creq_validators(const struct pf_creq *r, const char **if_match,
			int64_t *pin_mtime)
{
	if (r->pin && r->pin->pinned) {
		*if_match = r->pin->etag[0] ? r->pin->etag : NULL;
		*pin_mtime = r->pin->etag[0] ? -1 : r->pin->mtime;
		return;
	}
	*if_match = r->if_match;
	*pin_mtime = r->pin_mtime;
}

/*
 * A ranged answer passed every check: if @r has a lazy pin not set yet,
 * this answer's version is the one its open reads from now on.
 */
static void lazy_pin(struct pf_creq *r)
{
	struct pf_cpin *p = r->pin;

	if (!p || p->pinned)
		return;
	snprintf(p->etag, sizeof(p->etag), "%s", r->etag);
	p->mtime = r->mtime;
	p->pinned = 1;
}

/* All headers of a final response are in: may its body be used? */
static void headers_done(struct pf_curl *c, struct pf_creq *r,
			 const char *crange)
{
	uint64_t a;
	uint64_t b;
	int64_t total;
	uint64_t want = r->off + r->got;
	const char *if_match;
	int64_t pin_mtime;

	if (r->status < 200 || r->status >= 300) {
		r->hstate = r->kind == PF_CREQ_HEAD ? H_SKIP : H_ERRBODY;
		return;
	}
	pf_creq_validators(r, &if_match, &pin_mtime);
	if (if_match && r->etag[0] && strcmp(r->etag, if_match) != 0) {
		r->changed = 1;
		reject(r, -EIO, "changed on the server (ETag %s, opened as "
		       "%s)", r->etag, if_match);
		return;
	}
	if (!if_match && pin_mtime > 0 && r->mtime > 0 &&
	    r->mtime != pin_mtime) {
		r->changed = 1;
		reject(r, -EIO, "changed on the server (Last-Modified %" PRId64
		       ", opened as %" PRId64 ")", r->mtime, pin_mtime);
		return;
	}
	if (r->kind != PF_CREQ_RANGE) {
		r->hstate = H_BODY;
		return;
	}
	if (r->status == 206) {
		if (!crange[0] ||
		    parse_content_range(crange, &a, &b, &total) < 0) {
			reject(r, -EIO, "206 with a bad Content-Range '%s'",
			       crange);
			return;
		}
		if (a != want) {
			reject(r, -EIO, "206 for bytes %" PRIu64 "-%" PRIu64
			       ", asked from %" PRIu64, a, b, want);
			return;
		}
		if (total >= 0 && r->pin_size >= 0 && total != r->pin_size) {
			r->changed = 1;
			reject(r, -EIO, "changed on the server (size %" PRId64
			       ", opened as %" PRId64 ")", total,
			       r->pin_size);
			return;
		}
		r->size = total;
		r->skip = 0;
		lazy_pin(r);
		r->hstate = H_BODY;
		return;
	}
	if (r->status == 200) {
		/* the server ignored Range: the body is the whole object */
		if (r->size >= 0 && r->pin_size >= 0 &&
		    r->size != r->pin_size) {
			r->changed = 1;
			reject(r, -EIO, "changed on the server (size %" PRId64
			       ", opened as %" PRId64 ")", r->size,
			       r->pin_size);
			return;
		}
		if (!atomic_exchange(&c->warned_full, true))
			pf_log_note("the server ignores Range requests "
				    "(200 with the whole object): every read "
				    "downloads from the start of its object");
		pthread_mutex_lock(&c->lock);
		c->tot.full_bodies++;
		pthread_mutex_unlock(&c->lock);
		r->skip = want;
		lazy_pin(r);
		r->hstate = H_BODY;
		return;
	}
	reject(r, -EIO, "unexpected status %ld to a range request", r->status);
}

size_t pf_curl_on_header(char *line, size_t size, size_t n, void *arg)
{
	struct pf_creq *r = arg;
	size_t len = size * n;
	char v[256];

	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		const char *sp = memchr(line, ' ', len);

		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		r->hstate = H_HEADERS;
		r->etag[0] = '\0';
		r->ctype[0] = '\0';
		r->size = -1;
		r->mtime = -1;
		r->retry_after_ms = 0;
		r->crange[0] = '\0';
		return len;
	}
	if (r->hstate != H_HEADERS)
		return len;
	if (len <= 2 && (line[0] == '\r' || line[0] == '\n')) {
		/* end of this response's headers */
		if (r->status < 200 || (r->status >= 300 && r->status < 400 &&
					r->status != 304)) {
			/* 1xx or a redirect curl follows */
			r->hstate = H_SKIP;
			return len;
		}
		headers_done(r->loop, r, r->crange);
		return len;
	}
	if (header_is(line, len, "ETag", r->etag, sizeof(r->etag))) {
		/* kept as sent */
	} else if (header_is(line, len, "Content-Range", r->crange,
			     sizeof(r->crange))) {
		/* parsed at the end */
	} else if (header_is(line, len, "Content-Length", v, sizeof(v))) {
		char *end;
		uint64_t u;

		if (parse_u64(v, &end, &u) == 0 && u <= INT64_MAX)
			r->size = (int64_t)u;
	} else if (header_is(line, len, "Last-Modified", v, sizeof(v))) {
		int64_t t;

		if (pf_parse_http_date(v, &t) == 0)
			r->mtime = t;
	} else if (header_is(line, len, "Content-Type", r->ctype,
			     sizeof(r->ctype))) {
		/* kept as sent */
	} else if (header_is(line, len, "Retry-After", v, sizeof(v))) {
		long s = strtol(v, NULL, 10);

		if (s > 0)
			r->retry_after_ms = s > 10 ? 10000 : s * 1000;
	}
	return len;
}

/* ---- body ----------------------------------------------------------------- */

static int buf_append(struct pf_creq *r, const char *p, size_t n, size_t max)
{
	if (r->buflen + n + 1 > max)
		return -EFBIG;
	char *nb = realloc(r->buf, r->buflen + n + 1);

	if (!nb)
		return -ENOMEM;
	r->buf = nb;
	memcpy(r->buf + r->buflen, p, n);
	r->buflen += n;
	r->buf[r->buflen] = '\0';
	return 0;
}

/* Copy @n bytes into the request's iovec at offset r->got, which is
 * iov[r->iov_i] + r->iov_pos (a fetch has dozens of block iovecs). */
static void iov_put(struct pf_creq *r, const char *p, size_t n)
{
	while (n && r->iov_i < r->iovcnt) {
		const struct iovec *v = &r->iov[r->iov_i];
		size_t k = v->iov_len - r->iov_pos < n ?
				   v->iov_len - r->iov_pos : n;

		memcpy((char *)v->iov_base + r->iov_pos, p, k);
		p += k;
		n -= k;
		r->got += k;
		r->iov_pos += k;
		if (r->iov_pos == v->iov_len) {
			r->iov_i++;
			r->iov_pos = 0;
		}
	}
}

/*
 * SO_RCVLOWAT while a ranged body has far to go: the socket wakes the loop
 * once LOWAT_BYTES are queued instead of at every paced burst (64 KiB a
 * millisecond at 64 MiB/s), and each wake-up's recv()s, curl's poll() and
 * epoll_wait() serve more bytes.  Issue 14's four readers (160 ms): 29.6 k
 * recv(), 30.4 k poll() and 23 k epoll_wait() for 2 GiB before.  Back to
 * 1 for the last LOWAT_BYTES + LOWAT_MARGIN: the mark never exceeds what
 * is still to come, less a margin for bytes a TLS library may have read
 * ahead, so a wake-up can never be missed.  HTTP/1 only: an HTTP/2 socket
 * carries other streams, and its flow control may hold back what the mark
 * waits for.  A connection is reused only after a body read to its end,
 * where the mark is 1 again; drain() lowers it after a transfer that ended
 * early, in case its connection stays.
 */
#define LOWAT_BYTES (256 << 10)
#define LOWAT_MARGIN (64 << 10)

static bool set_lowat(const struct pf_creq *r, int bytes)
{
	return r->sock >= 0 && setsockopt(r->sock, SOL_SOCKET, SO_RCVLOWAT,
					  &bytes, sizeof(bytes)) == 0;
}

static void body_lowat(struct pf_creq *r)
{
	bool high = r->len - r->got >= LOWAT_BYTES + LOWAT_MARGIN;
	struct pf_curl *c = r->loop;
	long ver;

	if (high == r->lowat)
		return;
	if (high && (curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &ver) !=
		     CURLE_OK || ver != CURL_HTTP_VERSION_1_1))
		return;
	if (!set_lowat(r, high ? LOWAT_BYTES : 1))
		return;
	r->lowat = high;
	if (high) {
		pthread_mutex_lock(&c->lock);
		c->tot.lowat_bodies++;
		pthread_mutex_unlock(&c->lock);
	}
}

void pf_curl_body_lowat_end(struct pf_creq *r)
{
	if (r->lowat)
		set_lowat(r, 1);
	r->lowat = false;
}

size_t pf_curl_on_body(char *p, size_t size, size_t n, void *arg)
{
	struct pf_creq *r = arg;
	size_t len = size * n;
	size_t take;

	switch (r->hstate) {
	case H_BODY:
		break;
	case H_ERRBODY:
		if (r->buflen >= ERRBODY_MAX)
			return 0;	/* enough to say why: cut it */
		buf_append(r, p, len < ERRBODY_MAX - r->buflen ? len :
			   ERRBODY_MAX - r->buflen, ERRBODY_MAX + 1);
		return len;
	case H_SKIP:
		return len;
	default:
		return 0;	/* H_REJECT: abort */
	}
	if (r->kind == PF_CREQ_DOC) {
		if (buf_append(r, p, len, r->doc_max) < 0) {
			snprintf(r->errmsg, sizeof(r->errmsg),
				 "document larger than %zu bytes", r->doc_max);
			r->final_err = -EFBIG;
			return 0;
		}
		return len;
	}
	if (r->kind != PF_CREQ_RANGE)
		return len;
	if (r->skip) {
		size_t s = r->skip < len ? (size_t)r->skip : len;

		r->skip -= s;
		p += s;
		len -= s;
		if (!len)
			return size * n;
	}
	take = r->len - r->got < len ? (size_t)(r->len - r->got) : len;
	iov_put(r, p, take);
	body_lowat(r);
	if (r->started && !r->started_told && take) {
		r->started_told = true;
		r->started(r);
	}
	if (r->got == r->len)
		return take == len ? size * n : 0; /* all there: stop a 200 */
	return size * n;
}
