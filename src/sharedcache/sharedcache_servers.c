/*
 * sharedcache_servers.c - the shared tier's list of memcached servers: the
 * option's syntax (HOST:PORT[,HOST:PORT...], or @FILE with one a line),
 * and which server of the list is this node's own (-o shared_self, or the
 * one server with a local address).
 *
 * No state, no threads of its own; called at start-up.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "pf_sharedcache.h"
#include "sharedcache_int.h"

#define DEFAULT_PORT 11211

static bool host_char(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* One "HOST[:PORT]" or "[V6][:PORT]" of @n bytes at @s. */
static int parse_one(const char *s, size_t n, struct pf_sc_server *sv,
		     char *err, size_t errlen)
{
	const char *host = s;
	size_t hlen;
	const char *port = NULL;
	unsigned long p = DEFAULT_PORT;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close || close == s + 1)
			goto bad;
		host = s + 1;
		hlen = (size_t)(close - host);
		for (size_t i = 0; i < hlen; i++)
			if (!isxdigit((unsigned char)host[i]) &&
			    host[i] != ':' && host[i] != '.')
				goto bad;
		if ((size_t)(close + 1 - s) < n) {
			if (close[1] != ':')
				goto bad;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', n);

		hlen = colon ? (size_t)(colon - s) : n;
		if (colon)
			port = colon + 1;
		for (size_t i = 0; i < hlen; i++)
			if (!host_char(host[i]))
				goto bad;
	}
	if (hlen == 0 || hlen >= sizeof(sv->host))
		goto bad;
	if (port) {
		size_t plen = (size_t)(s + n - port);

		if (plen == 0 || plen > 5)
			goto bad;
		p = 0;
		for (size_t i = 0; i < plen; i++) {
			if (!isdigit((unsigned char)port[i]))
				goto bad;
			p = p * 10 + (unsigned long)(port[i] - '0');
		}
		if (p == 0 || p > 65535)
			goto bad;
	}
	memcpy(sv->host, host, hlen);
	sv->host[hlen] = '\0';
	sv->port = (unsigned)p;
	return 0;
bad:
	snprintf(err, errlen, "bad server '%.*s' in shared_cache (HOST:PORT, "
		 "[IPV6]:PORT)", (int)(n > 80 ? 80 : n), s);
	return -EINVAL;
}

/* Adds the entry of @n bytes at @s (blanks around it cut) to @out. */
static int add_entry(const char *s, size_t n, struct pf_sc_server *out,
		     unsigned max, unsigned *cnt, char *err, size_t errlen)
{
	struct pf_sc_server sv;
	int ret;

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0) {
		snprintf(err, errlen, "empty server in shared_cache");
		return -EINVAL;
	}
	ret = parse_one(s, n, &sv, err, errlen);
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < *cnt; i++)
		if (out[i].port == sv.port &&
		    strcmp(out[i].host, sv.host) == 0) {
			snprintf(err, errlen, "server %s:%u is twice in "
				 "shared_cache", sv.host, sv.port);
			return -EINVAL;
		}
	if (*cnt >= max) {
		snprintf(err, errlen, "more than %u servers in shared_cache",
			 max);
		return -E2BIG;
	}
	out[(*cnt)++] = sv;
	return 0;
}

int pf_sc_servers_parse(const char *list, struct pf_sc_server *out,
			unsigned max, unsigned *n, char *err, size_t errlen)
{
	const char *p = list;
	int ret;

	*n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");

		ret = add_entry(p, len, out, max, n, err, errlen);
		if (ret < 0)
			return ret;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* One server a line of the file @path; blank lines and '#...' skipped. */
static int servers_file(const char *path, struct pf_sc_server *out,
			unsigned max, unsigned *n, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	char line[512];
	unsigned lineno = 0;
	int ret = 0;

	*n = 0;
	if (!fp) {
		ret = -errno;
		snprintf(err, errlen, "shared_cache file '%s': %s", path,
			 strerror(-ret));
		return ret;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *hash = strchr(line, '#');
		char *s = line;
		char lerr[200];

		lineno++;
		if (hash)
			*hash = '\0';
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		ret = add_entry(s, strlen(s), out, max, n, lerr, sizeof(lerr));
		if (ret < 0) {
			snprintf(err, errlen, "shared_cache file '%s', line "
				 "%u: %s", path, lineno, lerr);
			break;
		}
	}
	fclose(fp);
	if (ret == 0 && *n == 0) {
		snprintf(err, errlen, "shared_cache file '%s' names no server",
			 path);
		ret = -EINVAL;
	}
	return ret;
}

int pf_sc_servers_load(const char *spec, struct pf_sc_server *out,
		       unsigned max, unsigned *n, char *err, size_t errlen)
{
	if (spec[0] == '@')
		return servers_file(spec + 1, out, max, n, err, errlen);
	return pf_sc_servers_parse(spec, out, max, n, err, errlen);
}

/* ---- which server is this node's own ---------------------------------- */

/* Whether @a and @b hold the same IP address. */
static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

/* Whether @sv and @host:@port name the same address and port. */
static bool same_server(const struct pf_sc_server *sv,
			const struct pf_sc_server *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *a = NULL;
	struct addrinfo *b = NULL;
	bool same = false;

	if (sv->port != o->port)
		return false;
	if (strcmp(sv->host, o->host) == 0)
		return true;
	if (getaddrinfo(sv->host, NULL, &hints, &a) != 0 ||
	    getaddrinfo(o->host, NULL, &hints, &b) != 0)
		goto out;
	for (struct addrinfo *x = a; x && !same; x = x->ai_next)
		for (struct addrinfo *y = b; y && !same; y = y->ai_next)
			same = same_addr(x->ai_addr, y->ai_addr);
out:
	if (a)
		freeaddrinfo(a);
	if (b)
		freeaddrinfo(b);
	return same;
}

/* Whether @host resolves to an address of this machine's interfaces. */
static bool is_local(const char *host, const struct ifaddrs *ifs)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *a = NULL;
	bool local = false;

	if (getaddrinfo(host, NULL, &hints, &a) != 0)
		return false;
	for (struct addrinfo *x = a; x && !local; x = x->ai_next) {
		const struct sockaddr_in *in =
			(const struct sockaddr_in *)x->ai_addr;

		/* all of 127/8 is this machine's, one address a node in
		 * tests and the bench */
		if (x->ai_family == AF_INET &&
		    (ntohl(in->sin_addr.s_addr) >> 24) == 127)
			local = true;
		for (const struct ifaddrs *i = ifs; i && !local;
		     i = i->ifa_next)
			if (i->ifa_addr && same_addr(x->ai_addr, i->ifa_addr))
				local = true;
	}
	freeaddrinfo(a);
	return local;
}

int pf_sc_self_index(const struct pf_sc_server *sv, unsigned n,
		     const char *self, int *idx, char *err, size_t errlen)
{
	struct pf_sc_server me;
	struct ifaddrs *ifs = NULL;
	int found = -1;
	int ret;

	*idx = -1;
	if (self) {
		ret = parse_one(self, strlen(self), &me, err, errlen);
		if (ret < 0) {
			snprintf(err, errlen, "bad shared_self '%s' "
				 "(HOST:PORT)", self);
			return ret;
		}
		for (unsigned i = 0; i < n; i++)
			if (same_server(&sv[i], &me)) {
				*idx = (int)i;
				return 0;
			}
		snprintf(err, errlen, "shared_self %s:%u is not in the "
			 "shared_cache list", me.host, me.port);
		return -EINVAL;
	}
	if (getifaddrs(&ifs) < 0)
		return 0;	/* not known: no fill coordination */
	for (unsigned i = 0; i < n; i++) {
		if (!is_local(sv[i].host, ifs))
			continue;
		if (found >= 0) {	/* two: which one is not known */
			found = -1;
			break;
		}
		found = (int)i;
	}
	freeifaddrs(ifs);
	*idx = found;
	return 0;
}
