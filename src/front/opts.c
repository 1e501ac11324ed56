/*
 * opts.c - command line of the daemon: sizes with K/M/G suffixes, one
 * clear line for every bad value, and a --help listing every option with
 * its default and range.
 *
 * DESIGN: every -o option is one row of pf_opt_table[] (opts_table.c:
 * name, type, the field it sets by offsetof, bounds, default, help, and
 * the set and get of options with their own syntax), in the manner of
 * libfuse's passthrough_ll.c lo_opts[].  The parser, --help and
 * --help-table (docs/options.md's table, which tests/mount_install.sh also
 * compares with the man page) all read that table, so they cannot
 * disagree.  Defaults are printed from the values pf_opts_default() sets,
 * not written out, except where they depend on the machine.  No threads,
 * no state.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pf_inode.h"
#include "pf_opts.h"
#include "pf_suggest.h"

void pf_opts_default(struct pf_opts *o, uint64_t ram_bytes)
{
	memset(o, 0, sizeof(*o));
	pf_engine_cfg_default(&o->engine, ram_bytes);
	o->ram_bytes = ram_bytes;
	o->entry_timeout = 3600;
	o->attr_timeout = 3600;
	o->readahead_kb = 1024;
	o->max_threads = 16;
	o->keep_cache = 1;
	o->log_level = PF_LOG_INFO;
	o->connect_timeout = 10;
	o->timeout = 30;
	o->retries = 5;
	o->revalidate = 60;
	o->list_ahead = 1024;
	o->trace_seconds = 30;
	o->shared_timeout = 5;
	o->shared_lease = 2000;
}

int pf_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1ull << 40;
		end++;
		break;
	default:
		break;
	}
	if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	v *= (double)mult;
	if (v >= 18446744073709551616.0 || v != floor(v))
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static int parse_uint(const char *s, double lo, double hi, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || (double)v < lo || (hi > 0 && (double)v > hi) ||
	    v > 0xffffffffu)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

int pf_opts_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	if (!s || strcmp(s, "on") == 0 || strcmp(s, "1") == 0 ||
	    strcmp(s, "yes") == 0 || strcmp(s, "true") == 0) {
		*out = 1;
		return 0;
	}
	if (strcmp(s, "off") == 0 || strcmp(s, "0") == 0 ||
	    strcmp(s, "no") == 0 || strcmp(s, "false") == 0) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

uint64_t pf_opts_max_fetch(size_t block_size)
{
	/* a fetch is one vectored read (preadv, readv) of up to 2 more
	 * blocks than it spans whole, and a vector holds IOV_MAX */
	return (uint64_t)block_size * (IOV_MAX - 2);
}

/* "64K", "1M", "3G": the largest unit that divides @v exactly. */
void pf_format_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v && u < 3 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, v);
	else
		snprintf(buf, len, "%" PRIu64 "%c", v, units[u]);
}

const struct pf_opt *pf_opt_find(const char *name)
{
	for (const struct pf_opt *d = pf_opt_table; d->name; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* Meaningful to mount(8), fstab or systemd, not to the daemon. */
static const char *const ignored[] = {
	"ro", "_netdev", "nofail", "noauto", "auto", "user", "users",
	"nouser", "defaults", "exec", "noexec", "suid", "nosuid", "dev",
	"nodev", "atime", "noatime", "relatime", "nodiratime", NULL,
};

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

void pf_opt_range_text(const struct pf_opt *d, char *buf, size_t len)
{
	char lo[32];
	char hi[32];

	buf[0] = '\0';
	if (d->choices) {
		snprintf(buf, len, "%s", d->choices);
		return;
	}
	if (d->flags & PF_OF_GT0) {
		snprintf(buf, len, "more than 0");
		return;
	}
	switch (d->type) {
	case PF_OT_SIZE:
		pf_format_size((uint64_t)d->lo, lo, sizeof(lo));
		pf_format_size((uint64_t)d->hi, hi, sizeof(hi));
		if (d->flags & PF_OF_POW2)
			snprintf(buf, len, "a power of two from %s to %s", lo,
				 hi);
		else if (d->hi > 0)
			snprintf(buf, len, "%s to %s", lo, hi);
		else if (d->lo > 0)
			snprintf(buf, len, "at least %s", lo);
		break;
	case PF_OT_UINT:
	case PF_OT_FN:
		if (d->hi > 0)
			snprintf(buf, len, "%.0f to %.0f", d->lo, d->hi);
		break;
	default:
		break;
	}
}

void pf_opt_default_text(const struct pf_opt *d, const struct pf_opts *o,
			 char *buf, size_t len)
{
	const char *p = (const char *)o + d->off;
	uint64_t v;

	buf[0] = '\0';
	if (d->def) {
		snprintf(buf, len, "%s", d->def);
		return;
	}
	switch (d->type) {
	case PF_OT_BOOL:
		snprintf(buf, len, "%s", *(const int *)p ? "on" : "off");
		break;
	case PF_OT_SIZE:
		if (d->size == sizeof(uint64_t))
			memcpy(&v, p, sizeof(v));
		else
			v = *(const size_t *)p;
		pf_format_size(v, buf, len);
		break;
	case PF_OT_UINT:
		snprintf(buf, len, "%u", *(const unsigned *)p);
		break;
	case PF_OT_SECS:
		snprintf(buf, len, "%g", *(const double *)p);
		break;
	case PF_OT_FN:
		d->get(o, buf, len);
		break;
	default:
		break;
	}
}

static int add_fuse_opt(struct pf_opts *o, const char *opt, char *err,
			size_t errlen)
{
	size_t len = strlen(o->fuse_opts);

	if (len + strlen(opt) + 2 > sizeof(o->fuse_opts)) {
		snprintf(err, errlen, "too many options");
		return -EINVAL;
	}
	snprintf(o->fuse_opts + len, sizeof(o->fuse_opts) - len, "%s%s",
		 len ? "," : "", opt);
	return 0;
}

static bool has_fuse_opt(const struct pf_opts *o, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = o->fuse_opts; p && *p;) {
		if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

/* The option (or fstab word) @name is a typo of, or NULL. */
static const char *closest_option(const char *name)
{
	struct pf_suggest s;

	pf_suggest_init(&s, name);
	for (const struct pf_opt *d = pf_opt_table; d->name; d++)
		pf_suggest_offer(&s, d->name);
	for (const char *const *w = ignored; *w; w++)
		pf_suggest_offer(&s, *w);
	return pf_suggest_best(&s);
}

/*
 * What to say of an unknown command-line flag @a: a -o option given as
 * "--name=value" or a typo of a flag.  Writes "" when it knows nothing.
 */
static void unknown_flag_hint(const char *a, char *out, size_t len)
{
	static const char *const flags[] = {
		"help", "help-table", "version", "foreground", "debug", NULL,
	};
	const char *name = a + strspn(a, "-");
	size_t n = strcspn(name, "=");
	char word[PF_SUGGEST_MAX + 1];
	struct pf_suggest s;
	const char *near;

	out[0] = '\0';
	if (!n || n > PF_SUGGEST_MAX)
		return;
	memcpy(word, name, n);
	word[n] = '\0';
	if (pf_opt_find(word)) {
		snprintf(out, len, ": options go after -o (-o %s%s)", word,
			 name[n] ? name + n : pf_opt_find(word)->arg ? "=..." :
			 "");
		return;
	}
	pf_suggest_init(&s, word);
	for (const char *const *f = flags; *f; f++)
		pf_suggest_offer(&s, *f);
	near = pf_suggest_best(&s);
	if (near) {
		snprintf(out, len, ": did you mean '--%s'?", near);
		return;
	}
	near = closest_option(word);
	if (near)
		snprintf(out, len, ": did you mean '-o %s'?", near);
}

#define BAD(...)                                                   \
	do {                                                       \
		snprintf(err, errlen, __VA_ARGS__);                \
		return -EINVAL;                                    \
	} while (0)

/* Sets the field of @d from @val; -EINVAL if @val is out of range. */
static int set_value(struct pf_opts *o, const struct pf_opt *d,
		     const char *val)
{
	char *p = (char *)o + d->off;
	uint64_t sz;
	unsigned u;
	double s;
	int b;

	switch (d->type) {
	case PF_OT_BOOL:
		if (parse_bool(val, &b) < 0)
			return -EINVAL;
		*(int *)p = b;
		return 0;
	case PF_OT_SIZE:
		if (pf_parse_size(val, &sz) < 0 || (double)sz < d->lo ||
		    (d->hi > 0 && (double)sz > d->hi) ||
		    ((d->flags & PF_OF_POW2) && (sz & (sz - 1))))
			return -EINVAL;
		if (d->size == sizeof(uint64_t))
			memcpy(p, &sz, sizeof(sz));
		else
			*(size_t *)p = (size_t)sz;
		return 0;
	case PF_OT_UINT:
		if (parse_uint(val, d->lo, d->hi, &u) < 0)
			return -EINVAL;
		*(unsigned *)p = u;
		return 0;
	case PF_OT_SECS:
		if (pf_opts_parse_seconds(val, &s) < 0 ||
		    ((d->flags & PF_OF_GT0) && s <= 0))
			return -EINVAL;
		*(double *)p = s;
		return 0;
	case PF_OT_STR:
		if (!*val || strlen(val) >= d->size)
			return -EINVAL;
		memcpy(p, val, strlen(val) + 1);
		return 0;
	case PF_OT_FN:
		return d->set(o, val);
	default:
		return -EINVAL;
	}
}

/* One "name[=value]" of a -o list. */
static int parse_one(struct pf_opts *o, char *opt, char *err, size_t errlen)
{
	const struct pf_opt *d;
	char *val = strchr(opt, '=');
	char range[96];

	if (val)
		*val++ = '\0';
	if (in_list(ignored, opt) || strncmp(opt, "x-", 2) == 0 ||
	    strcmp(opt, "comment") == 0)
		return 0;
	if (strcmp(opt, "rw") == 0)
		BAD("prefetchfs mounts are read-only: option 'rw' is not "
		    "supported");
	d = pf_opt_find(opt);
	if (!d) {
		const char *near = closest_option(opt);

		if (near)
			BAD("unknown option '%s': did you mean '%s'? (see "
			    "--help)", opt, near);
		BAD("unknown option '%s' (see --help)", opt);
	}
	if (d->type == PF_OT_FUSE) {
		char buf[512];

		if (!d->arg && !val)
			return add_fuse_opt(o, opt, err, errlen);
		if (!d->arg)
			BAD("option '%s' takes no value", opt);
		if (!val)
			BAD("option '%s' needs a value (%s=...)", opt, opt);
		if (!*val || strchr(val, ','))
			BAD("bad value for %s: '%s'", opt, val);
		snprintf(buf, sizeof(buf), "%s=%s", opt, val);
		return add_fuse_opt(o, buf, err, errlen);
	}
	if (!val && d->type != PF_OT_BOOL)
		BAD("option '%s' needs a value (%s=...)", opt, opt);
	if (set_value(o, d, val) < 0) {
		pf_opt_range_text(d, range, sizeof(range));
		if (d->type == PF_OT_BOOL)
			snprintf(range, sizeof(range), "on or off");
		if (d->type == PF_OT_SIZE && !range[0])
			snprintf(range, sizeof(range), "a size, e.g. 8M");
		BAD("bad value for %s: '%s'%s%s%s", opt, val ? val : "",
		    range[0] ? " (" : "", range, range[0] ? ")" : "");
	}
	if (d->given)
		*(int *)((char *)o + d->given) = 1;
	return 0;
}

/*
 * The tokens after "shared_cache=HOST:PORT" that are HOST:PORT too (no
 * '=', a ':', no option's name) continue its list: -o splits at commas.
 */
static bool continues_list(const char *prev, const char *tok)
{
	return prev && !strchr(tok, '=') && strchr(tok, ':') &&
	       !pf_opt_find(tok) && !in_list(ignored, tok);
}

static int parse_list(struct pf_opts *o, const char *list, char *err,
		      size_t errlen)
{
	size_t len = strlen(list);
	char *copy = strdup(list);
	char *joined = malloc(len + 1);
	const char *prev = NULL;
	char *p = copy;
	int ret = 0;

	if (!copy || !joined) {
		free(copy);
		free(joined);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	joined[0] = '\0';
	while (p && ret == 0) {
		char *tok = p;

		p = strchr(p, ',');
		if (p)
			*p++ = '\0';
		if (!*tok)
			continue;
		if (continues_list(prev, tok)) {
			strcat(joined, ",");
			strcat(joined, tok);
			continue;
		}
		if (joined[0])
			ret = parse_one(o, joined, err, errlen);
		joined[0] = '\0';
		prev = NULL;
		if (ret < 0)
			break;
		if (strncmp(tok, "shared_cache=", 13) == 0 && tok[13] != '@') {
			strcpy(joined, tok);
			prev = tok;
			continue;
		}
		ret = parse_one(o, tok, err, errlen);
	}
	if (ret == 0 && joined[0])
		ret = parse_one(o, joined, err, errlen);
	free(joined);
	free(copy);
	return ret;
}

/*
 * SOURCE: a directory, or a URL of a scheme we speak.  A URL never
 * carries credentials: they would show in /proc/mounts, the log and the
 * stats file.  The message does not repeat the URL for that reason.
 */
/* The length of @s's URL scheme ("s3" of "s3://b"), 0 if not a URL. */
static size_t scheme_len(const char *s)
{
	const char *colon = strstr(s, "://");
	size_t n;

	if (!colon || colon == s)
		return 0;
	n = (size_t)(colon - s);
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') &&
		    !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(i > 0 && ((s[i] >= '0' && s[i] <= '9') ||
				s[i] == '+' || s[i] == '-' || s[i] == '.')))
			return 0;	/* a path with "://" in it */
	return n;
}

static int check_source_url(const char *src, char *err, size_t errlen)
{
	static const char *const schemes[] = { "http", "https", "s3", NULL };
	size_t n = scheme_len(src);
	const char *host;
	bool known = false;

	if (!n)
		return 0;
	for (const char *const *s = schemes; *s; s++)
		if (strlen(*s) == n && strncasecmp(src, *s, n) == 0)
			known = true;
	if (!known)
		BAD("source scheme '%.*s://' is not supported: SOURCE is a "
		    "directory, http://, https:// or s3://", (int)(n > 16 ?
		    16 : n), src);
	host = src + n + 3;
	n = strcspn(host, "/?#");
	if (memchr(host, '@', n))
		BAD("the source URL must not hold credentials (user:password@"
		    "): give S3 keys in AWS_ACCESS_KEY_ID and "
		    "AWS_SECRET_ACCESS_KEY or with -o profile=NAME (http:// "
		    "and https:// sources are read without credentials)");
	return 0;
}

int pf_opts_parse(struct pf_opts *o, int argc, char **argv, char *err,
		  size_t errlen)
{
	const char *pos[2];
	char have[32];
	char want[32];
	int npos = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			o->help = 1;
		} else if (strcmp(a, "--help-table") == 0) {
			o->help = 2;
		} else if (strcmp(a, "-V") == 0 ||
			   strcmp(a, "--version") == 0) {
			o->version = 1;
		} else if (strcmp(a, "-f") == 0 ||
			   strcmp(a, "--foreground") == 0) {
			o->foreground = 1;
		} else if (strcmp(a, "-d") == 0 || strcmp(a, "--debug") == 0) {
			o->debug = 1;
			o->foreground = 1;
			o->log_level = PF_LOG_DEBUG;
		} else if (strcmp(a, "-o") == 0) {
			if (i + 1 >= argc)
				BAD("option -o needs a list of options");
			ret = parse_list(o, argv[++i], err, errlen);
			if (ret < 0)
				return ret;
		} else if (strncmp(a, "-o", 2) == 0) {
			ret = parse_list(o, a + 2, err, errlen);
			if (ret < 0)
				return ret;
		} else if (a[0] == '-' && a[1] != '\0') {
			char hint[PF_SUGGEST_MAX + 64];

			unknown_flag_hint(a, hint, sizeof(hint));
			BAD("unknown option '%s'%s (see --help)", a, hint);
		} else {
			if (npos == 2)
				BAD("unexpected argument '%s': give SOURCE "
				    "and MOUNTPOINT only", a);
			pos[npos++] = a;
		}
	}
	if (o->help || o->version)
		return 0;
	if (npos < 2)
		BAD("missing %s (usage: prefetchfs [options] SOURCE "
		    "MOUNTPOINT)", npos == 0 ? "SOURCE and MOUNTPOINT" :
						"MOUNTPOINT");
	o->source = pos[0];
	o->mountpoint = pos[1];
	/* (the URL is not repeated: it may name a private bucket) */
	if (scheme_len(o->mountpoint))
		BAD("MOUNTPOINT is a URL (%.*s://...): SOURCE comes first, "
		    "then the directory to mount it on (prefetchfs [options] "
		    "SOURCE MOUNTPOINT)",
		    (int)(scheme_len(o->mountpoint) > 16 ?
			  16 : scheme_len(o->mountpoint)), o->mountpoint);
	ret = check_source_url(o->source, err, errlen);
	if (ret < 0)
		return ret;
	if (o->engine.fetch_size < o->engine.block_size)
		BAD("fetch_size (%" PRIu64 ") must be at least block_size "
		    "(%zu)", o->engine.fetch_size, o->engine.block_size);
	if (o->engine.fetch_size > pf_opts_max_fetch(o->engine.block_size)) {
		pf_format_size(o->engine.fetch_size, have, sizeof(have));
		/* suggest a round size: the largest power of two that fits */
		pf_format_size(1ull << (63 - __builtin_clzll(pf_opts_max_fetch(
					    o->engine.block_size))),
			       want, sizeof(want));
		BAD("fetch_size=%s is too many blocks of block_size for one "
		    "read (at most %d): give fetch_size=%s or less, or a "
		    "larger block_size", have, IOV_MAX, want);
	}
	if (o->engine.max_memory <
	    4 * o->engine.fetch_size + 4 * o->engine.block_size)
		BAD("max_memory (%" PRIu64 ") is too small for fetch_size "
		    "%" PRIu64 ": give at least 4 fetches' worth",
		    o->engine.max_memory, o->engine.fetch_size);
	if (o->max_memory_set && o->ram_bytes &&
	    o->engine.max_memory > o->ram_bytes) {
		pf_format_size(o->engine.max_memory, have, sizeof(have));
		BAD("max_memory=%s is more than this machine's memory (%.1fG)",
		    have, (double)o->ram_bytes / (1 << 30));
	}
	if (o->engine.min_window > o->engine.max_window)
		BAD("min_window is larger than max_window");
	if (o->shared_cache[0] && !o->shared_secret[0])
		BAD("shared_cache needs -o shared_secret=FILE, the same secret "
		    "on every node (head -c 32 /dev/urandom >FILE; chmod 600 "
		    "FILE)");
	if (!o->shared_cache[0] && (o->shared_secret[0] || o->shared_self[0]))
		BAD("shared_secret and shared_self are for shared_cache");
	/* nothing of a direct_io file is in the page cache to push to */
	if (o->direct_io)
		o->engine.push = 0;
	/* otherwise any user reads files that are 0600 in the source */
	if (has_fuse_opt(o, "allow_other") &&
	    !has_fuse_opt(o, "default_permissions")) {
		ret = add_fuse_opt(o, "default_permissions", err, errlen);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ---- --help and --help-table ----------------------------------------- */

static const char *const group_title[PF_OG_N] = {
	[PF_OG_PREFETCH] = "prefetch options (sizes take K, M, G suffixes):",
	[PF_OG_MOUNT] = "mount options:",
	[PF_OG_LOG] = "log and trace options:",
	[PF_OG_OBJECT] = "object storage options (http://, https://, s3://):",
	[PF_OG_SHARED] = "shared cache options (a tier on memcached for a "
			 "cluster):",
	[PF_OG_FUSE] = "FUSE options:",
};

/* "-o name=ARG" or "-o name" */
static void opt_label(const struct pf_opt *d, char *buf, size_t len)
{
	snprintf(buf, len, "-o %s%s%s", d->name, d->arg ? "=" : "",
		 d->arg ? d->arg : "");
}

/* The help text of @d with its default and range, as --help shows it. */
static void opt_text(const struct pf_opt *d, const struct pf_opts *def,
		     char *buf, size_t len)
{
	char dflt[128];
	char range[96];
	char here[32];
	size_t n;

	snprintf(buf, len, "%s", d->help);
	if (d->alias)
		return;
	pf_opt_default_text(d, def, dflt, sizeof(dflt));
	pf_opt_range_text(d, range, sizeof(range));
	if (d->choices)
		range[0] = '\0';	/* the help names them */
	if (!dflt[0] && !range[0])
		return;
	n = strlen(buf);
	snprintf(buf + n, len - n, " (%s%s", dflt[0] ? "default " : "", dflt);
	if (d->flags & PF_OF_MACHINE) {
		uint64_t v;

		memcpy(&v, (const char *)def + d->off, sizeof(v));
		snprintf(here, sizeof(here), "%" PRIu64 "M", v >> 20);
		n = strlen(buf);
		snprintf(buf + n, len - n, ": %s here", here);
	}
	n = strlen(buf);
	snprintf(buf + n, len - n, "%s%s)", dflt[0] && range[0] ? "; " : "",
		 range);
}

/* Prints @text from column @col, wrapped at 79, continuing at @col. */
static void print_wrapped(FILE *fp, const char *text, int col, int at)
{
	const char *p = text;

	while (*p) {
		int room = 79 - col;
		int n = (int)strlen(p);

		if (n > room) {
			n = room;
			while (n > 0 && p[n] != ' ')
				n--;
			if (n == 0)
				n = (int)strcspn(p, " ");
		}
		fprintf(fp, "%*s%.*s\n", at, "", n, p);
		p += n;
		while (*p == ' ')
			p++;
		at = col;
	}
}

void pf_opts_usage(const char *prog, uint64_t ram_bytes)
{
	struct pf_opts d;
	char label[64];
	char text[512];

	pf_opts_default(&d, ram_bytes);
	printf("usage: %s [options] SOURCE MOUNTPOINT\n"
	       "\n"
	       "Mounts the dataset at SOURCE read-only at MOUNTPOINT, learns "
	       "each\n"
	       "reader's access pattern and keeps batch-sized windows ahead "
	       "of it in memory.\n"
	       "SOURCE is a directory, http(s)://HOST/PREFIX/ (listed by the "
	       "server's directory\n"
	       "index or a manifest) or s3://BUCKET[/PREFIX].\n"
	       "Unmount with: fusermount3 -u MOUNTPOINT\n"
	       "\n"
	       "general options:\n"
	       "    -h, --help             print this help and exit\n"
	       "    -V, --version          print the version and exit\n"
	       "    -f, --foreground       stay in the foreground, log to "
	       "stderr\n"
	       "    -d, --debug            foreground, FUSE request log, "
	       "log_level=debug\n"
	       "    -o OPT[,OPT...]        options below\n"
	       "    --help-table           the options as a Markdown table\n",
	       prog);
	for (int g = 0; g < PF_OG_N; g++) {
		printf("\n%s\n", group_title[g]);
		for (const struct pf_opt *o = pf_opt_table; o->name; o++) {
			if ((int)o->group != g)
				continue;
			opt_label(o, label, sizeof(label));
			opt_text(o, &d, text, sizeof(text));
			printf("    %-22s", label);
			if (strlen(label) > 22) {
				printf("\n");
				print_wrapped(stdout, text, 27, 27);
			} else {
				print_wrapped(stdout, text, 27, 1);
			}
		}
	}
	printf("    -o ro, _netdev, nofail, noauto, x-*, ...\n"
	       "                           accepted and ignored (fstab, "
	       "systemd)\n"
	       "\n"
	       "The mount is read-only.  Statistics: MOUNTPOINT/%s/%s "
	       "(JSON).\n",
	       PF_META_DIR_NAME, PF_META_STATS_NAME);
}

/* "|" inside a Markdown table cell */
static void md_cell(FILE *fp, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', fp);
		fputc(*s, fp);
	}
}

void pf_opts_help_table(FILE *fp)
{
	struct pf_opts d;
	char label[64];
	char dflt[128];
	char range[96];

	/* a fixed machine: the table must not depend on this one */
	pf_opts_default(&d, 16ull << 30);
	fprintf(fp, "| option | default | range | meaning |\n"
		    "| --- | --- | --- | --- |\n");
	for (const struct pf_opt *o = pf_opt_table; o->name; o++) {
		opt_label(o, label, sizeof(label));
		pf_opt_default_text(o, &d, dflt, sizeof(dflt));
		pf_opt_range_text(o, range, sizeof(range));
		if (o->alias)
			dflt[0] = '\0';
		fputs("| `", fp);
		md_cell(fp, label);
		fputs("` | ", fp);
		md_cell(fp, dflt);
		fputs(" | ", fp);
		md_cell(fp, o->choices ? "" : range);
		fputs(" | ", fp);
		md_cell(fp, o->help);
		fputs(" |\n", fp);
	}
}
