/*
 * pf_curl.h - HTTP(S) transfers for the object-storage backends: one curl
 * multi loop in one thread, many requests in flight.
 *
 * A request (struct pf_creq) is a GET of a byte range into the submitter's
 * iovec, a HEAD, or a GET of a whole small document (a listing) into a
 * buffer the loop grows.  The loop owns the CURLM, every easy handle and
 * an epoll set (curl_multi_socket_action: only ready sockets are worked
 * on); other threads queue requests and wake it (an eventfd).  It reuses
 * connections, multiplexes over HTTP/2 where the server offers it, and
 * keeps at most max_conns connections.
 *
 * Ranged GETs are checked before a byte reaches the iovec: a 206 must carry
 * a Content-Range that starts where we asked and whose total is the size
 * pinned at open; a 200 (a server that ignores Range) is accepted only
 * with the pinned length, and the loop takes the asked-for slice of the
 * body and stops the transfer; a response whose ETag differs from the
 * pinned one, a 412 (If-Match failed) or 416 means the object changed:
 * -EIO, never bytes of two versions.  A body cut short is resumed from the
 * first missing byte (If-Match keeps the version).
 *
 * A server that has no ETag (python -m http.server, some CDNs) is pinned
 * by Last-Modified instead: If-Unmodified-Since, and a response whose
 * Last-Modified differs from the pinned one is -EIO, as for an ETag.
 *
 * A lazy pin (struct pf_cpin): an open that knew the object's size but no
 * version gives its ranged GETs a shared pf_cpin instead of if_match.
 * The first answer that passes the checks above (its Content-Range total,
 * or a 200's length, is pin_size) pins the version: its ETag, else its
 * Last-Modified.  Every later answer is checked against that pin as an
 * If-Match one is, and every try started after it carries If-Match (or
 * If-Unmodified-Since).  Answers are judged one at a time on the loop
 * thread, so two answers of different versions cannot both pass.  A 404
 * or 410 to such a GET sets changed: the object went after the listing.
 *
 * Deadlines: cfg.timeout_s bounds a stall (no byte for that long); every
 * request also has a total deadline, retries, resumes and backoffs
 * included: cfg.request_timeout_s, or by default (0) twice timeout_s plus
 * one second per 256 KiB asked for a ranged GET (a 4 MiB fetch: 76 s with
 * timeout=30), twice timeout_s for a HEAD and eight times for a listing.
 * A request past its deadline fails -EIO ("no complete answer within N
 * s"), so a server that trickles bytes, or sends an error body without
 * end, never holds a caller for ever.  Error bodies are kept up to 4 KiB
 * and the transfer is then cut.
 *
 * Faults: connection errors, timeouts, 5xx, 429 and S3 SlowDown are retried
 * up to cfg.retries times after a backoff that doubles from cfg.backoff_ms
 * with full jitter (Retry-After is honoured up to 10 s).  After the last
 * try the request fails with the precise errno: 404/410 -ENOENT, 401/403
 * -EACCES, anything else (timeouts included) -EIO, with the reason in
 * r->errmsg.
 *
 * Threads: pf_curl_submit() and pf_curl_run() may be called from any
 * thread; done() runs on the loop thread and must not block on the loop
 * (no pf_curl_run() inside done()).  Ownership: the submitter owns the
 * request and everything it points to until done() is called.
 */
#ifndef PF_CURL_H
#define PF_CURL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct pf_creds;

struct pf_curl_cfg {
	unsigned max_conns;		/* connections at most */
	unsigned connect_timeout_ms;
	unsigned timeout_s;		/* no byte for this long: timeout */
	unsigned request_timeout_s;	/* a request's total time, retries
					 * included; 0: by the kind (above) */
	unsigned retries;		/* tries after the first */
	unsigned backoff_ms;		/* first backoff */
	const char *cacert;		/* CA bundle file, NULL: system's */
	int insecure;			/* do not verify TLS peers */
	/*
	 * S3 signing: "aws:amz:REGION:s3" and the credentials, or NULL.
	 * Every try of every request takes the current credentials from
	 * creds (pf_creds_sign()), so a renewal reaches retries too; a
	 * signed request never follows a redirect (its token and signature
	 * would go to another host).  The caller keeps creds alive until
	 * pf_curl_free().
	 */
	const char *sigv4;
	struct pf_creds *creds;
};

/*
 * A version learnt from the first answer (see above).  Zeroed by its
 * owner before the first request that points to it; from then on read
 * and written by the loop thread only.  The owner keeps it alive while
 * any request points to it.
 */
struct pf_cpin {
	int pinned;			/* the fields below are set */
	char etag[128];			/* "": none, mtime pins */
	int64_t mtime;			/* Last-Modified, -1 unknown */
};

enum pf_creq_kind {
	PF_CREQ_RANGE,		/* GET bytes [off, off + len) into iov */
	PF_CREQ_HEAD,		/* HEAD: status and headers only */
	PF_CREQ_DOC,		/* GET the whole body into buf */
};

struct pf_creq {
	/* set by the submitter */
	enum pf_creq_kind kind;
	const char *url;
	uint64_t off;			/* RANGE */
	uint64_t len;			/* RANGE: bytes wanted, > 0 */
	const struct iovec *iov;	/* RANGE: room for len bytes */
	int iovcnt;
	const char *if_match;		/* pinned ETag, or NULL */
	int64_t pin_size;		/* RANGE: pinned object size */
	int64_t pin_mtime;		/* > 0, no if_match: the pinned
					 * Last-Modified, sent as
					 * If-Unmodified-Since and checked */
	struct pf_cpin *pin;		/* RANGE, no if_match/pin_mtime:
					 * a lazy pin, or NULL */
	size_t doc_max;			/* DOC: largest body accepted */
	void (*done)(struct pf_creq *r, int err);	/* err 0 or -errno */
	/* RANGE, optional: called once, on the loop thread, when the
	 * first body bytes are in iov (before done()) */
	void (*started)(struct pf_creq *r);
	void *priv;

	/* results, valid in done() */
	long status;			/* last HTTP status, 0 if none */
	int64_t size;			/* object size (Content-Length of a
					 * 200 / HEAD, or Content-Range total),
					 * -1 unknown */
	int64_t mtime;			/* Last-Modified, -1 unknown */
	char etag[128];			/* "" unknown */
	char ctype[64];			/* Content-Type */
	char *buf;			/* DOC body (NUL-terminated; the
					 * submitter frees it), or for an
					 * error status its first bytes */
	size_t buflen;
	char errmsg[256];		/* why it failed, for the log */
	int changed;			/* the object is not the pinned
					 * version (ETag, size, Last-Modified
					 * differ; 412, 416) */
	bool timed_out;			/* it failed (-EIO) because its
					 * total deadline passed */

	/* the loop's */
	uint64_t got;			/* RANGE bytes in iov so far */
	int iov_i;			/* got is at iov[iov_i] + iov_pos */
	size_t iov_pos;
	uint64_t got_start;		/* got when this try started */
	int sock;			/* the socket curl watches for it */
	bool lowat;			/* SO_RCVLOWAT raised on it */
	bool started_told;		/* started() was called */
	unsigned tries;
	int64_t due_ns;			/* retry time */
	int hstate;			/* header parsing of this response */
	uint64_t skip;			/* body bytes to skip (a 200) */
	long retry_after_ms;
	int final_err;
	int64_t submit_ns;		/* monotonic */
	int64_t ttfb_us;		/* RANGE: last try's time to its
					 * first byte, -1 unknown */
	int64_t deadline_ns;		/* monotonic: the request fails then */
	struct pf_curl *loop;
	char crange[128];		/* Content-Range of this response */
	void *easy;
	struct curl_slist *hdrs;
	struct pf_creq *next;
	struct pf_creq *prev;		/* in the loop's active list */
};

struct pf_curl;

/* Starts the loop thread.  Copies the strings of @cfg. */
int pf_curl_new(const struct pf_curl_cfg *cfg, struct pf_curl **out);
/* Cancels (-ECANCELED) every request not finished and joins the loop;
 * later submits fail -ESHUTDOWN.  Idempotent. */
void pf_curl_stop(struct pf_curl *c);
/* pf_curl_stop(), then frees. */
void pf_curl_free(struct pf_curl *c);

/* Queues @r; done() comes later on the loop thread.  -ESHUTDOWN while
 * freeing (done() not called). */
int pf_curl_submit(struct pf_curl *c, struct pf_creq *r);

/* Submits @r and waits for it; returns what done() would get (r->done and
 * r->priv are overwritten).  Not from the loop thread. */
int pf_curl_run(struct pf_curl *c, struct pf_creq *r);

/* Totals for the stats file. */
struct pf_curl_totals {
	uint64_t requests;
	uint64_t retries;
	uint64_t errors;
	uint64_t resumed;	/* bodies cut short and resumed */
	uint64_t full_bodies;	/* 200s to ranged GETs */
	uint64_t connects;	/* connections opened (the rest reused one) */
	uint64_t lowat_bodies;	/* bodies read with SO_RCVLOWAT raised */
	/*
	 * Ranged GETs that completed, their bytes, and the sums of their
	 * times in microseconds: from submit to done (queueing, retries
	 * and resumes included), and from the start of the last try to its
	 * first body byte (the store's latency as the loop saw it).  The
	 * mean request is range_bytes / range_gets; a range_us far above
	 * range_ttfb_us plus the time the bytes take on the wire means
	 * the loop (or the machine) drained the sockets late.
	 */
	uint64_t range_gets;
	uint64_t range_bytes;
	uint64_t range_us;
	uint64_t range_ttfb_us;
	unsigned active;
};
void pf_curl_totals(struct pf_curl *c, struct pf_curl_totals *t);

/* errno for an HTTP status after the last try. */
int pf_curl_status_errno(long status);

#endif
