/*
 * curl_int.h - private to the curl multi loop (curl_loop.c,
 * curl_answer.c): the loop instance (struct pf_curl), the states of a
 * response's checking, and what each file lends the other.  Not part of
 * the library's interface: callers use pf_curl.h.
 *
 * DESIGN
 * See curl_loop.c.  c->lock guards the queue, the stopping flag and the
 * totals and is never held across a curl call or done(); the fields
 * marked "loop thread only", and every request in the multi, belong to
 * the loop thread.
 */
#ifndef PF_CURL_INT_H
#define PF_CURL_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pf_creds.h"
#include "pf_curl.h"

enum {
	H_STATUS = 0,	/* waiting for a status line */
	H_HEADERS,	/* in the headers of a response */
	H_BODY,		/* body goes to the request */
	H_ERRBODY,	/* body of an error status: keep its start */
	H_REJECT,	/* response refused: abort the transfer */
	H_SKIP,		/* body of an interim/redirect response */
};

#define ERRBODY_MAX 4096
#define MAX_EVENTS 64
#define IDLE_MS 1000		/* epoll timeout with nothing due */

struct pf_curl {
	struct pf_curl_cfg cfg;
	char *cacert;
	char *sigv4;
	struct pf_creds *creds;		/* S3: read at every try */
	CURLM *multi;
	int epfd;			/* the loop's epoll set */
	int evfd;			/* eventfd: the queue has requests */
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;
	struct pf_creq *queue;		/* under lock: FIFO of new requests */
	struct pf_creq **queue_tail;
	bool stopping;			/* under lock */
	struct pf_curl_totals tot;	/* under lock */

	/* loop thread only */
	struct pf_creq *delayed;	/* sorted by due_ns */
	int64_t timer_ns;		/* curl's next timeout run, -1 none */
	CURL **free_easy;
	unsigned nfree;
	unsigned capfree;
	atomic_uint active;
	atomic_bool warned_full;
};

/* ---- curl_answer.c: checking a response's headers, taking its body ---- */

/* The version @r is pinned to now: its lazy pin's once that is set, else
 * what the submitter gave (if_match, pin_mtime).  Loop thread only. */
void pf_creq_validators(const struct pf_creq *r, const char **if_match,
			int64_t *pin_mtime);
size_t pf_curl_on_header(char *line, size_t size, size_t n, void *arg);
size_t pf_curl_on_body(char *p, size_t size, size_t n, void *arg);
void pf_curl_body_lowat_end(struct pf_creq *r);

#endif
