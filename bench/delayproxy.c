/*
 * delayproxy - a TCP proxy that makes a local HTTP server (nginx, an S3
 * server on 127.0.0.1) behave like a remote object store: every response
 * starts late, and every connection is paced to a bandwidth cap.
 *
 * Usage:
 *   bench/delayproxy [-l LISTEN_PORT] [-L LATENCY_MS] [-b BYTES_PER_SEC]
 *                    [-p PORTFILE] UPSTREAM_HOST:PORT
 *
 *   -l PORT   listen on 127.0.0.1:PORT (default 0: the kernel chooses)
 *   -L MS     first-byte latency of every response, in milliseconds
 *             (fractions allowed; default 0)
 *   -b RATE   per-connection cap on server->client bytes per second:
 *             4096, 512K, 64M, 1G (binary units: 64M = 64 MiB/s);
 *             0 (the default) means no cap
 *   -p FILE   write the listening port to FILE (atomically) once ready
 *   -u        pace in user space only (see below; for comparison)
 *
 * It prints one line to stderr once it listens, e.g.
 *   delayproxy: 127.0.0.1:41234 -> 127.0.0.1:8080, first-byte latency
 *   50 ms, 64 MiB/s per connection
 * (on one line), and runs until SIGTERM or SIGINT, then prints its totals
 * (connections, responses, bytes each way) and exits 0.  SIGUSR1 prints
 * the same totals line (counted since the start) and keeps running, so a
 * benchmark can take the bytes of one run as the difference of two lines.
 *
 * Timing model.  Request boundaries are found from the traffic alone (no
 * HTTP parsing, so it works for any request/response protocol without
 * pipelining): bytes from the client that arrive after the response to
 * the previous request has started open a new request, and the arrival of
 * its last byte is remembered.  The first bytes the server sends after
 * that are held until that moment plus the latency; the server's own
 * think time overlaps the latency, as on a real link.  Server->client
 * bytes go out in chunks of about 1 ms worth at the cap (4 KiB to
 * 256 KiB: 64 KiB at 64M): the first chunk of a response at its start
 * time, each further one at the moment its last byte would have arrived
 * over a link of that rate, so a 1 MiB response at 64M arrives smoothly
 * from latency to latency + 15.6 ms.  A chunk sent late (the thread woke
 * late on a busy machine, or the server was slow) lets the next ones
 * catch up, by at most 5 ms worth (a token bucket of that depth).
 * Client->server bytes are forwarded at once.  A reset from either side
 * is passed on as a reset.
 *
 * Kernel pacing.  Waking every millisecond per connection cost ~0.7 s of
 * CPU per GiB carried in bench/objstore.sh's scan (~0.25 s with kernel
 * pacing), on the machine the client runs on.  So unless -u is given, the
 * client socket gets SO_MAX_PACING_RATE = the cap and the kernel's TCP
 * pacing (an hrtimer per segment, no qdisc needed) spaces the bytes:
 * segments of about 1 ms worth (64 KiB at 64M on loopback), each sent when
 * the previous one's last byte would have left at the cap, with a
 * catch-up after a late timer of at most half a segment's time.  The
 * kernel does not pace a connection's first 10 segments, so the user-space
 * pacer above still paces the first 10 x MSS bytes of every connection
 * (its first response); after that the proxy only holds each response's
 * first byte for the latency and moves the rest in pipe-sized steps as
 * fast as the paced socket takes them.  Either way, over any window of W
 * a connection carries at most the cap x W plus one step (~1 ms worth)
 * plus the catch-up; a client measures within 10% of the cap over every
 * 100 ms window (bench/delayproxy_check.sh, check 7).  The startup line
 * says which pacing is used.
 *
 * DESIGN: one thread per direction of each connection, blocking I/O, and
 * clock_nanosleep(TIMER_ABSTIME) for the latency and user-space pacing
 * (timer slack 1 us).  The
 * bytes move with splice() through a pipe, so the proxy copies nothing in
 * user space; if a pipe cannot be had it falls back to read()/write().
 * The two threads of a connection share only the request state
 * (struct link, under its mutex); the one that finishes last closes the
 * sockets.  The main thread only waits for the signal; a separate thread
 * accepts, and each connection's first thread connects upstream, so a
 * slow upstream never blocks accepting.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define NSEC_PER_SEC 1000000000ULL
#define MIB (1024.0 * 1024.0)
#define PACE_SLICE_NS 1000000ULL	/* target duration of one chunk */
#define PACE_CREDIT_NS 5000000ULL	/* lateness the pacer makes up for */
#define MIN_CHUNK (4u << 10)
#define MAX_CHUNK (256u << 10)
#define PIPE_SIZE (256u << 10)		/* server->client pipe */
#define C2S_CHUNK (64u << 10)
#define THREAD_STACK (256u << 10)

static struct {
	uint64_t latency_ns;
	double ns_per_byte;		/* 0: no cap */
	uint64_t rate;			/* bytes per second, 0: no cap */
	int user_pace;			/* -u: no SO_MAX_PACING_RATE */
	size_t chunk;			/* server->client bytes per step */
	struct addrinfo *up;		/* upstream address */
	int lfd;

	atomic_ulong conns;
	atomic_ulong conn_errors;
	atomic_ulong responses;
	atomic_ulong bytes_up;
	atomic_ulong bytes_down;
} dp;

/* One client connection and its upstream connection. */
struct link {
	int cfd;			/* client */
	int ufd;			/* upstream */
	atomic_int refs;		/* threads still running; last frees */

	pthread_mutex_t lock;
	/* protected by lock */
	int awaiting;			/* a request has no response yet */
	uint64_t req_end_ns;		/* arrival of its last byte so far */
};

/* One direction of a link: the pipe (or buffer) the bytes go through. */
struct pump {
	int in;
	int out;
	int pipe[2];			/* -1 when buffer is used instead */
	char *buf;
	size_t max;			/* bytes per step */
	size_t cap;			/* bytes the pipe (or buf) holds */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / NSEC_PER_SEC),
		.tv_nsec = (long)(t % NSEC_PER_SEC),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static int pump_init(struct pump *p, int in, int out, size_t max,
		     int big_pipe)
{
	p->in = in;
	p->out = out;
	p->max = max;
	p->cap = big_pipe ? PIPE_SIZE : max;
	p->buf = NULL;
	if (pipe2(p->pipe, O_CLOEXEC) == 0) {
		/* A smaller pipe only means smaller steps: not an error. */
		if (big_pipe &&
		    fcntl(p->pipe[1], F_SETPIPE_SZ, (int)PIPE_SIZE) < 0) {
			p->cap = 65536;
			if (p->max > 65536)
				p->max = 65536;
		}
		return 0;
	}
	p->pipe[0] = -1;
	p->pipe[1] = -1;
	p->cap = max;
	p->buf = malloc(max);
	return p->buf ? 0 : -ENOMEM;
}

static void pump_destroy(struct pump *p)
{
	if (p->pipe[0] >= 0) {
		close(p->pipe[0]);
		close(p->pipe[1]);
	}
	free(p->buf);
}

/* Take up to p->max bytes from p->in; the count, 0 at EOF, or -errno. */
static ssize_t pump_in(struct pump *p)
{
	ssize_t n;

	do {
		if (p->buf)
			n = read(p->in, p->buf, p->max);
		else
			n = splice(p->in, NULL, p->pipe[1], NULL, p->max,
				   SPLICE_F_MOVE);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Give the @len bytes taken by pump_in() to p->out; 0 or -errno. */
static int pump_out(struct pump *p, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		if (p->buf)
			n = send(p->out, p->buf + done, len - done,
				 MSG_NOSIGNAL);
		else
			n = splice(p->pipe[0], NULL, p->out, NULL, len - done,
				   SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		done += (size_t)n;
	}
	return 0;
}

/* Close both sockets once neither thread uses them. */
static void link_put(struct link *l)
{
	if (atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	close(l->cfd);
	if (l->ufd >= 0)
		close(l->ufd);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/*
 * A direction failed (a peer reset, or we could not go on): both sockets
 * will close with a RST (SO_LINGER 0), and the other thread is woken by
 * SHUT_RD, which sends nothing: SHUT_WR or SHUT_RDWR would send a FIN,
 * and a client would take the cut for a clean end of the body.
 */
static void link_abort(struct link *l)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(l->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	shutdown(l->cfd, SHUT_RD);
	if (l->ufd >= 0) {
		setsockopt(l->ufd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		shutdown(l->ufd, SHUT_RD);
	}
}

/*
 * Let the kernel pace @fd at the cap.  Returns how many bytes the
 * user-space pacer must still pace (the kernel leaves a connection's
 * first 10 segments unpaced), or UINT64_MAX if the kernel cannot pace.
 */
static uint64_t kernel_pace(int fd)
{
	uint64_t rate = dp.rate;
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (dp.user_pace || setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE,
				       &rate, sizeof(rate)) < 0)
		return UINT64_MAX;
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 ||
	    mss <= 0)
		mss = 65536;
	return 10 * (uint64_t)mss;
}

/* Server -> client: delay the start of each response, pace the bytes. */
static void *server_to_client(void *arg)
{
	struct link *l = arg;
	struct pump p;
	uint64_t next = 0;	/* end of the last chunk's slot at the cap */
	uint64_t user = 0;	/* bytes left to pace in user space */
	uint64_t t;
	ssize_t n;

	if (pump_init(&p, l->ufd, l->cfd, dp.chunk, 1) < 0) {
		link_abort(l);
		link_put(l);
		return NULL;
	}
	if (dp.ns_per_byte > 0)
		user = kernel_pace(l->cfd);
	for (;;) {
		uint64_t start = 0;

		n = pump_in(&p);
		if (n <= 0)
			break;
		pthread_mutex_lock(&l->lock);
		if (l->awaiting) {
			l->awaiting = 0;
			start = l->req_end_ns + dp.latency_ns;
		}
		pthread_mutex_unlock(&l->lock);
		if (start)
			atomic_fetch_add(&dp.responses, 1);
		if (dp.ns_per_byte > 0 && user) {
			/*
			 * Token bucket of PACE_CREDIT_NS: a chunk released
			 * late (the thread woke late, or waited for the
			 * server) lets the next ones catch up with the
			 * schedule, but a response starts with no credit.
			 */
			t = now_ns();
			if (start) {
				/* The first byte is due at start itself. */
				next = start > t ? start : t;
				sleep_until_ns(next);
				next += (uint64_t)((double)n * dp.ns_per_byte);
			} else {
				if (next + PACE_CREDIT_NS < t)
					next = t - PACE_CREDIT_NS;
				next += (uint64_t)((double)n * dp.ns_per_byte);
				sleep_until_ns(next);
			}
			if (user != UINT64_MAX) {
				user = user > (uint64_t)n ? user - (uint64_t)n
							  : 0;
				if (!user)
					p.max = p.cap;	/* kernel paces */
			}
		} else if (start && dp.latency_ns) {
			sleep_until_ns(start);
		}
		if (pump_out(&p, (size_t)n) < 0) {
			n = -1;
			break;
		}
		atomic_fetch_add(&dp.bytes_down, (unsigned long)n);
	}
	if (n == 0)
		shutdown(l->cfd, SHUT_WR);	/* pass the server's FIN on */
	else
		link_abort(l);
	pump_destroy(&p);
	link_put(l);
	return NULL;
}

/* Client -> server: note request boundaries, forward at once. */
static void client_to_server(struct link *l)
{
	struct pump p;
	ssize_t n;

	if (pump_init(&p, l->cfd, l->ufd, C2S_CHUNK, 0) < 0) {
		link_abort(l);
		return;
	}
	for (;;) {
		n = pump_in(&p);
		if (n <= 0)
			break;
		/* Before forwarding: the answer must not overtake this. */
		pthread_mutex_lock(&l->lock);
		l->awaiting = 1;
		l->req_end_ns = now_ns();
		pthread_mutex_unlock(&l->lock);
		if (pump_out(&p, (size_t)n) < 0) {
			n = -1;
			break;
		}
		atomic_fetch_add(&dp.bytes_up, (unsigned long)n);
	}
	if (n == 0)
		shutdown(l->ufd, SHUT_WR);	/* pass the client's FIN on */
	else
		link_abort(l);
	pump_destroy(&p);
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_upstream(void)
{
	struct addrinfo *ai;
	int fd = -1;

	for (ai = dp.up; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *link_main(void *arg)
{
	struct link *l = arg;
	pthread_attr_t attr;
	pthread_t tid;
	int err;

	l->ufd = connect_upstream();
	if (l->ufd < 0) {
		/* The client sees a reset, as from a dead server. */
		if (atomic_fetch_add(&dp.conn_errors, 1) == 0)
			fprintf(stderr, "delayproxy: cannot connect upstream: "
				"%s (further failures not shown)\n",
				strerror(errno));
		link_abort(l);
		atomic_store(&l->refs, 1);
		link_put(l);
		return NULL;
	}
	set_nodelay(l->ufd);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&tid, &attr, server_to_client, l);
	pthread_attr_destroy(&attr);
	if (err) {
		link_abort(l);
		atomic_store(&l->refs, 1);
		link_put(l);
		return NULL;
	}
	client_to_server(l);
	link_put(l);
	return NULL;
}

static void *accept_loop(void *arg)
{
	pthread_attr_t attr;
	pthread_t tid;

	(void)arg;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct link *l;
		int fd = accept4(dp.lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				usleep(10000);	/* out of resources: back off */
			continue;
		}
		set_nodelay(fd);
		l = calloc(1, sizeof(*l));
		if (!l) {
			close(fd);
			continue;
		}
		l->cfd = fd;
		l->ufd = -1;
		atomic_init(&l->refs, 2);
		pthread_mutex_init(&l->lock, NULL);
		atomic_fetch_add(&dp.conns, 1);
		if (pthread_create(&tid, &attr, link_main, l) != 0) {
			close(fd);
			pthread_mutex_destroy(&l->lock);
			free(l);
			usleep(10000);
		}
	}
	return NULL;
}

/* Does this kernel take SO_MAX_PACING_RATE on a TCP socket? */
static int kernel_pace_works(void)
{
	uint64_t rate = dp.rate;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ok;

	if (fd < 0)
		return 0;
	ok = setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate,
			sizeof(rate)) == 0;
	close(fd);
	return ok;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: delayproxy [-l LISTEN_PORT] [-L LATENCY_MS] [-b BYTES_PER_SEC]\n"
"                  [-p PORTFILE] [-u] UPSTREAM_HOST:PORT\n"
"\n"
"TCP proxy on 127.0.0.1 that delays the first byte of every response by\n"
"LATENCY_MS (from the arrival of the request's last byte) and paces each\n"
"connection's server->client bytes to BYTES_PER_SEC (64M = 64 MiB/s,\n"
"0 = no cap).  Runs until SIGTERM or SIGINT; SIGUSR1\n"
"prints the byte totals so far.\n"
"\n"
"    -l PORT     listen port (default 0: chosen by the kernel)\n"
"    -L MS       first-byte latency in ms (default 0)\n"
"    -b RATE     per-connection bandwidth, K/M/G suffixes (default 0)\n"
"    -p FILE     write the port to FILE once listening\n"
"    -u          pace in user space only (default: the kernel's TCP\n"
"                pacing, SO_MAX_PACING_RATE, after a connection's first\n"
"                10 segments)\n"
"    -h          this help\n");
}

static int parse_upstream(const char *arg)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	char host[256];
	const char *colon = strrchr(arg, ':');
	size_t hl;
	int err;

	if (!colon || colon == arg || !colon[1])
		return -1;
	hl = (size_t)(colon - arg);
	if (arg[0] == '[' && colon[-1] == ']') {	/* [::1]:80 */
		arg++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, arg, hl);
	host[hl] = '\0';
	err = getaddrinfo(host, colon + 1, &hints, &dp.up);
	if (err) {
		fprintf(stderr, "delayproxy: %s: %s\n", arg, gai_strerror(err));
		return -1;
	}
	return 0;
}

static int write_portfile(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int err = errno;

		unlink(tmp);
		return -err;
	}
	return 0;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	socklen_t len = sizeof(sa);
	int one = 1;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	dp.lfd = fd;
	return ntohs(sa.sin_port);
}

int main(int argc, char **argv)
{
	const char *portfile = NULL;
	double latency_ms = 0;
	uint64_t rate = 0;
	long lport = 0;
	char bw[64];
	pthread_t tid;
	sigset_t sigs;
	char *end;
	int c, port, sig;

	while ((c = getopt(argc, argv, "l:L:b:p:uh")) != -1) {
		switch (c) {
		case 'l':
			lport = strtol(optarg, &end, 10);
			if (*end || end == optarg || lport < 0 ||
			    lport > 65535) {
				fprintf(stderr, "delayproxy: bad port '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'L':
			latency_ms = strtod(optarg, &end);
			if (*end || end == optarg || !(latency_ms >= 0) ||
			    latency_ms > 3600e3) {
				fprintf(stderr, "delayproxy: bad latency "
					"'%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			if (parse_size(optarg, &rate) < 0) {
				fprintf(stderr, "delayproxy: bad bandwidth "
					"'%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			portfile = optarg;
			break;
		case 'u':
			dp.user_pace = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (parse_upstream(argv[optind]) < 0) {
		fprintf(stderr, "delayproxy: bad upstream '%s' (want "
			"HOST:PORT)\n", argv[optind]);
		return 2;
	}
	dp.latency_ns = (uint64_t)(latency_ms * 1e6);
	if (rate) {
		double c_bytes = (double)rate * PACE_SLICE_NS / NSEC_PER_SEC;

		dp.ns_per_byte = 1e9 / (double)rate;
		dp.rate = rate;
		dp.chunk = c_bytes < MIN_CHUNK ? MIN_CHUNK :
			   c_bytes > MAX_CHUNK ? MAX_CHUNK : (size_t)c_bytes;
	} else {
		dp.chunk = PIPE_SIZE;
	}

	/*
	 * Only this thread takes the signals (the others inherit the mask),
	 * and a peer's reset must not kill the proxy.
	 */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* Pacing sleeps are short: the default 50 us slack would show. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);

	port = listen_on((int)lport);
	if (port < 0) {
		fprintf(stderr, "delayproxy: cannot listen on 127.0.0.1:%ld: "
			"%s\n", lport, strerror(-port));
		return 1;
	}
	if (pthread_create(&tid, NULL, accept_loop, NULL) != 0) {
		fprintf(stderr, "delayproxy: cannot start a thread\n");
		return 1;
	}
	if (rate && !dp.user_pace && !kernel_pace_works())
		dp.user_pace = 1;
	if (rate % (1 << 20) == 0 && rate)
		snprintf(bw, sizeof(bw), "%llu MiB/s per connection",
			 (unsigned long long)(rate >> 20));
	else if (rate)
		snprintf(bw, sizeof(bw), "%.3f MiB/s per connection",
			 (double)rate / MIB);
	else
		snprintf(bw, sizeof(bw), "unlimited bandwidth");
	fprintf(stderr, "delayproxy: 127.0.0.1:%d -> %s, first-byte latency "
		"%g ms, %s%s\n", port, argv[optind], latency_ms, bw,
		!rate ? "" :
		dp.user_pace ? " (paced in user space, ~1 ms steps)" :
			       " (paced by kernel TCP pacing, ~1 ms segments)");
	fflush(stderr);
	if (portfile) {
		int err = write_portfile(portfile, port);

		if (err < 0) {
			fprintf(stderr, "delayproxy: cannot write %s: %s\n",
				portfile, strerror(-err));
			return 1;
		}
	}

	for (;;) {
		c = sigwait(&sigs, &sig);
		if (c != 0)
			continue;
		fprintf(stderr, "delayproxy: %lu connections (%lu upstream "
			"failures), %lu responses, %lu bytes to the server, "
			"%lu bytes to clients\n", atomic_load(&dp.conns),
			atomic_load(&dp.conn_errors),
			atomic_load(&dp.responses), atomic_load(&dp.bytes_up),
			atomic_load(&dp.bytes_down));
		fflush(stderr);
		if (sig != SIGUSR1)
			break;
	}
	freeaddrinfo(dp.up);
	return 0;
}
