/*
 * listing_html.c - the HTML directory index parser
 * (pf_list_parse_html()): nginx, Apache, lighttpd and python http.server
 * indexes, with the sizes and dates nginx's columns carry.
 *
 * DESIGN
 * A scanner over a (pointer, end) pair that never reads the byte at end.
 * HTML has no notion of complete: links are reported as they are found,
 * and the names reported are kept in a per-call hash set (struct
 * nameset, freed before returning) to skip a second link to one name.
 * Threads: none of its own, no locks, no global state that changes; any
 * thread may call it (the objstore backend's FUSE workers and listings
 * refresher, fuzz_html, the tests).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pf_hash.h"
#include "pf_listing.h"
#include "pf_strbuf.h"
#include "listing_int.h"

/* room for the longest NUL-terminated href we decode */
#define HREF_MAX 8192

/* ------------------------------------------------------------------ */
/* HTML indexes                                                        */

/* The names reported so far, for skipping a second link to one. */
struct nameset {
	char *arena;
	size_t used;
	size_t size;
	/* open addressing; 0 is an empty slot, else arena offset + 1 */
	size_t *slot;
	size_t nslots;
	size_t count;
};

/* Arena records are the name and its NUL. */
static bool ns_match(const struct nameset *ns, size_t off, const char *s,
		     size_t n)
{
	return ns->used - off > n && memcmp(ns->arena + off, s, n) == 0 &&
	       ns->arena[off + n] == '\0';
}

/* 1 if the name was there, 0 if added, -ENOMEM. */
static int ns_add(struct nameset *ns, const char *s, size_t n)
{
	size_t i;

	if (ns->count * 2 >= ns->nslots) {
		size_t nn = ns->nslots ? ns->nslots * 2 : 64;
		size_t *ns2 = calloc(nn, sizeof(*ns2));

		if (!ns2)
			return -ENOMEM;
		for (size_t k = 0; k < ns->nslots; k++) {
			size_t o = ns->slot[k];

			if (!o)
				continue;
			i = pf_hash_mem(ns->arena + o - 1,
					strlen(ns->arena + o - 1)) & (nn - 1);
			while (ns2[i])
				i = (i + 1) & (nn - 1);
			ns2[i] = o;
		}
		free(ns->slot);
		ns->slot = ns2;
		ns->nslots = nn;
	}
	i = pf_hash_mem(s, n) & (ns->nslots - 1);
	while (ns->slot[i]) {
		if (ns_match(ns, ns->slot[i] - 1, s, n))
			return 1;
		i = (i + 1) & (ns->nslots - 1);
	}
	if (ns->size - ns->used < n + 1) {
		size_t nsize = ns->size ? ns->size : 4096;
		char *a;

		while (nsize - ns->used < n + 1)
			nsize *= 2;
		a = realloc(ns->arena, nsize);
		if (!a)
			return -ENOMEM;
		ns->arena = a;
		ns->size = nsize;
	}
	memcpy(ns->arena + ns->used, s, n);
	ns->arena[ns->used + n] = '\0';
	ns->slot[i] = ns->used + 1;
	ns->used += n + 1;
	ns->count++;
	return 0;
}

/* The end of the tag at p ('<'), quotes respected; NULL if none. */
static const char *tag_end(const char *p, const char *end)
{
	while (p < end && *p != '>') {
		if (*p == '"' || *p == '\'') {
			const char *q;

			q = memchr(p + 1, *p, (size_t)(end - p - 1));
			if (!q)
				return NULL;
			p = q;
		}
		p++;
	}
	return p < end ? p : NULL;
}

/* The href value of the <a> tag [p, tend), or false. */
static bool a_href(const char *p, const char *tend, const char **v,
		   size_t *vn)
{
	p += 2;
	while (p < tend) {
		const char *name;
		size_t nn;

		while (p < tend && (is_space((unsigned char)*p) || *p == '/'))
			p++;
		name = p;
		while (p < tend && !is_space((unsigned char)*p) && *p != '=' &&
		       *p != '/')
			p++;
		nn = (size_t)(p - name);
		while (p < tend && is_space((unsigned char)*p))
			p++;
		if (p >= tend || *p != '=') {
			if (nn == 0 && p < tend)
				p++;
			continue;
		}
		p++;
		while (p < tend && is_space((unsigned char)*p))
			p++;
		if (p < tend && (*p == '"' || *p == '\'')) {
			const char *q;

			q = memchr(p + 1, *p, (size_t)(tend - p - 1));
			if (!q)
				return false;
			*v = p + 1;
			*vn = (size_t)(q - p - 1);
			p = q + 1;
		} else {
			*v = p;
			while (p < tend && !is_space((unsigned char)*p))
				p++;
			*vn = (size_t)(p - *v);
		}
		if (nn == 4 && starts_ci(name, tend, "href"))
			return true;
	}
	return false;
}

/*
 * The child an href names: decoded into @name, with *is_dir; false for
 * anything but a single relative name.
 */
static bool href_name(const char *v, size_t vn, struct pf_strbuf *name,
		      int *is_dir)
{
	char raw[HREF_MAX];
	struct pf_strbuf r;
	const char *p;
	size_t n;
	const char *colon;
	const char *slash;

	pf_strbuf_init_fixed(&r, raw, sizeof(raw));
	pf_list_xml_decode(&r, v, vn);
	if (r.failed)
		return false;
	p = r.buf;
	n = r.len;
	while (n && is_space((unsigned char)*p)) {
		p++;
		n--;
	}
	while (n && is_space((unsigned char)p[n - 1]))
		n--;
	if (memchr(p, '?', n) || memchr(p, '#', n))
		return false;
	/* "scheme:..." (Apache writes "./a:b" for the file "a:b") */
	slash = memchr(p, '/', n);
	colon = memchr(p, ':', n);
	if (colon && (!slash || colon < slash))
		return false;
	if (n >= 2 && p[0] == '.' && p[1] == '/') {
		p += 2;
		n -= 2;
	}
	*is_dir = n && p[n - 1] == '/';
	if (*is_dir)
		n--;
	if (memchr(p, '/', n))
		return false;
	pf_strbuf_reset(name);
	pf_list_pct_decode(name, p, n, false);
	return !name->failed && name_ok(name->buf, name->len);
}

/*
 * Script and style hold text, not markup (a script may well build links):
 * the first @lit (lower case, starting '<') from p on, or end.
 */
static const char *skip_to_ci(const char *p, const char *end,
			      const char *lit)
{
	while (p < end) {
		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			return end;
		if (starts_ci(p, end, lit))
			return p;
		p++;
	}
	return end;
}

/*
 * After an <a> tag: just past the "</a>" that closes it, or NULL when
 * another <a> (or the end) comes first.  Linear over the page in all.
 */
static const char *a_close(const char *p, const char *end)
{
	while (p < end) {
		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			return NULL;
		if (starts_ci(p, end, "</a>"))
			return p + 4;
		if (starts_ci(p, end, "<a") && p + 2 < end &&
		    is_space((unsigned char)p[2]))
			return NULL;
		p++;
	}
	return NULL;
}

int pf_list_parse_html(const char *buf, size_t len, pf_list_fn fn,
		       void *arg)
{
	const char *p = buf;
	const char *end = buf + len;
	struct nameset ns;
	struct pf_strbuf name;
	char *nameb;
	int count = 0;
	int ret;

	if (!buf && len)
		return -EINVAL;
	if (starts_with(p, end, "\xef\xbb\xbf"))
		p += 3;
	while (p < end && is_space((unsigned char)*p))
		p++;
	if (p >= end || *p != '<')
		return -EPROTO;
	nameb = malloc(PF_LIST_NAME_MAX + 1);
	if (!nameb)
		return -ENOMEM;
	memset(&ns, 0, sizeof(ns));
	while (p < end) {
		struct pf_listent e;
		const char *tend;
		const char *v;
		const char *close;
		size_t vn;
		int is_dir;

		p = memchr(p, '<', (size_t)(end - p));
		if (!p)
			break;
		if (starts_with(p, end, "<!--")) {
			const char *q = find(p + 4, end, "-->");

			p = q ? q + 3 : end;
			continue;
		}
		if (starts_ci(p, end, "<script")) {
			p = skip_to_ci(p + 1, end, "</script");
			continue;
		}
		if (starts_ci(p, end, "<style")) {
			p = skip_to_ci(p + 1, end, "</style");
			continue;
		}
		if (!starts_ci(p, end, "<a") || p + 2 >= end ||
		    !is_space((unsigned char)p[2])) {
			p++;
			continue;
		}
		tend = tag_end(p, end);
		if (!tend)
			break;
		pf_strbuf_init_fixed(&name, nameb, PF_LIST_NAME_MAX + 1);
		if (!a_href(p, tend, &v, &vn) ||
		    !href_name(v, vn, &name, &is_dir)) {
			p = tend + 1;
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.name = name.buf;
		e.is_dir = is_dir;
		e.size = -1;
		e.mtime = -1;
		close = a_close(tend + 1, end);
		if (close) {
			p = close;
			pf_list_nginx_columns(p, end, &e.size, &e.mtime);
			if (is_dir)
				e.size = -1;
		} else {
			p = tend + 1;
		}
		ret = ns_add(&ns, name.buf, name.len);
		if (ret < 0)
			goto out;
		if (ret)
			continue;
		count = count_up(count);
		ret = fn(arg, &e);
		if (ret)
			goto out;
	}
	ret = count;
out:
	free(ns.slot);
	free(ns.arena);
	free(nameb);
	return ret;
}
