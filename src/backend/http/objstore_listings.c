/*
 * objstore_listings.c - the listings file in -o cache_dir: the directory
 * listings written out (temp, fsync, rename; FNV-1a checksum) and read
 * back at the next mount, and the refresher thread that lists a stored
 * directory again once it is older than revalidate.
 *
 * DESIGN
 * Entered by the mounting thread (pf_obj_listings_start(): reads the file,
 * starts the refresher), by the refresher thread (refresh_dir(), saves
 * at most every LISTINGS_SAVE_S seconds after a change) and by the
 * destroying thread (pf_obj_listings_stop(): stops and joins the refresher,
 * saves a last time).  The refresher takes o->lock as the ops do and
 * never requests under it; o->save_lock orders the writers of the file
 * (refresher, destroy); o->tick wakes the refresher to stop.
 *
 * The file is opened relative to the cache directory's descriptor (checked
 * by main.c: the daemon's own, see diskcache_dir.c) and never through a
 * symlink: the temporary file is unlinked first and created O_EXCL, 0600,
 * and a file that is not a regular file of the daemon's uid is ignored.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "pf_hash.h"
#include "pf_backend.h"
#include "pf_curl.h"
#include "pf_listing.h"
#include "pf_log.h"
#include "pf_objstore.h"
#include "pf_creds.h"
#include "pf_s3conf.h"
#include "pf_strbuf.h"
#include "objstore_int.h"

/* ---- the listings file --------------------------------------------------- */

/* A monotonic second as wall-clock, and back; -1 stays -1. */
static int64_t to_wall(int64_t mono, int64_t mnow, int64_t wnow)
{
	return mono < 0 ? -1 : wnow - (mnow - mono);
}

static size_t ents_bytes(const struct ent *e, size_t n)
{
	size_t b = 0;

	for (size_t i = 0; i < n; i++)
		b += sizeof(*e) + strlen(e[i].name) + 1 +
		     (e[i].etag ? strlen(e[i].etag) + 1 : 0);
	return b;
}

/*
 * The file: LISTINGS_MAGIC, "source LEN\n" and the source, then per
 * directory "D WALL PATHLEN NENTS\n" and the path, per entry "E ISDIR SIZE
 * MTIME SEEN ETAGLEN NAMELEN\n", the ETag (ETAGLEN -1: none) and the name;
 * last "end HEX\n", HEX the FNV-1a of every byte before it.  WALL and SEEN
 * are wall-clock seconds (-1: no version).  Lengths, not separators:
 * names may hold any byte but NUL and '/'.
 */
static int listings_save(struct obj *o)
{
	struct pf_strbuf sb;
	char tmp[NAME_MAX + 1];
	int64_t mnow = pf_obj_mono_s();
	int64_t wnow = (int64_t)time(NULL);
	size_t len;
	char *buf;
	int fd;
	int ret = 0;

	pthread_mutex_lock(&o->save_lock);
	pf_strbuf_init(&sb, 1 << 16);
	pf_strbuf_addstr(&sb, LISTINGS_MAGIC);
	pf_strbuf_addf(&sb, "source %zu\n", strlen(o->source));
	pf_strbuf_addstr(&sb, o->source);
	pthread_mutex_lock(&o->lock);
	o->dirty = false;
	for (size_t i = 0; i < o->nbuckets; i++) {
		for (struct dir *d = o->dirs[i]; d; d = d->hnext) {
			if (d->state != D_LOADED)
				continue;
			pf_strbuf_addf(&sb, "D %" PRId64 " %zu %zu\n",
				       to_wall(d->learned, mnow, wnow),
				       strlen(d->path), d->n);
			pf_strbuf_addstr(&sb, d->path);
			for (size_t j = 0; j < d->n; j++) {
				const struct ent *e = &d->ents[j];

				ssize_t el = e->etag ?
					(ssize_t)strlen(e->etag) : -1;

				pf_strbuf_addf(&sb, "E %d %" PRId64 " %" PRId64
					       " %" PRId64 " %zd %zu\n",
					       e->is_dir, e->size, e->mtime,
					       to_wall(e->seen, mnow, wnow), el,
					       strlen(e->name));
				if (e->etag)
					pf_strbuf_addstr(&sb, e->etag);
				pf_strbuf_addstr(&sb, e->name);
			}
		}
	}
	pthread_mutex_unlock(&o->lock);
	buf = pf_strbuf_detach(&sb, &len);
	if (!buf) {
		pthread_mutex_unlock(&o->save_lock);
		return -ENOMEM;
	}
	snprintf(tmp, sizeof(tmp), "%.200s.%ld.tmp", o->listings_name,
		 (long)getpid());
	/* a symlink of that name goes, never what it names */
	if (unlinkat(o->listings_dirfd, tmp, 0) < 0 && errno != ENOENT)
		fd = -1;
	else
		fd = openat(o->listings_dirfd, tmp, O_WRONLY | O_CREAT |
			    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
	} else {
		char end[32];
		int n = snprintf(end, sizeof(end), "end %016" PRIx64 "\n",
				 pf_hash_mem((const char *)buf, len));
		size_t off = 0;

		while (off < len && ret == 0) {
			ssize_t w = write(fd, buf + off, len - off);

			if (w < 0)
				ret = -errno;
			else
				off += (size_t)w;
		}
		if (ret == 0 && write(fd, end, (size_t)n) != n)
			ret = errno ? -errno : -EIO;
		if (ret == 0 && fsync(fd) < 0)
			ret = -errno;
		close(fd);
		if (ret == 0 && renameat(o->listings_dirfd, tmp,
					 o->listings_dirfd,
					 o->listings_name) < 0)
			ret = -errno;
		if (ret < 0)
			unlinkat(o->listings_dirfd, tmp, 0);
	}
	free(buf);
	/* the rename itself is durable once the directory is synced */
	if (ret == 0)
		fsync(o->listings_dirfd);
	if (ret < 0) {
		pthread_mutex_lock(&o->lock);
		o->dirty = true;
		pthread_mutex_unlock(&o->lock);
		pf_warn("cannot write the listings to '%s': %s", o->listings,
			strerror(-ret));
	}
	pthread_mutex_unlock(&o->save_lock);
	return ret;
}

/* The next "WORD ...\n" header of the file at *p into line; NULL at
 * the end of buf or if it is too long. */
static const char *next_line(const char **p, const char *end, char *line,
			     size_t size)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n;

	if (!nl || (size_t)(nl - *p) >= size)
		return NULL;
	n = (size_t)(nl - *p);
	memcpy(line, *p, n);
	line[n] = '\0';
	*p = nl + 1;
	return line;
}

/* @n bytes at *p as a new string; NULL if past end or out of memory. */
static char *take(const char **p, const char *end, long long n)
{
	char *s;

	if (n < 0 || n > end - *p || memchr(*p, '\0', (size_t)n))
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, *p, (size_t)n);
	s[n] = '\0';
	*p += n;
	return s;
}

struct sdir {
	char *path;
	int64_t learned;
	struct listing l;
};

/* Parses the whole file; 0 and the directories, or -EPROTO. */
static int listings_parse(struct obj *o, const char *buf, size_t len,
			  struct sdir **out, size_t *nout)
{
	const char *p = buf;
	const char *end;
	char line[160];
	char *src = NULL;
	struct sdir *sd = NULL;
	size_t nsd = 0;
	size_t bytes = 0;
	int64_t mnow = pf_obj_mono_s();
	int64_t wnow = (int64_t)time(NULL);
	unsigned long long sum;
	long long n;
	int ret = -EPROTO;

	/* the checksum line, then everything before it */
	if (len < 22 || buf[len - 1] != '\n' ||
	    sscanf(buf + len - 21, "end %16llx", &sum) != 1 ||
	    memcmp(buf + len - 21, "end ", 4) != 0 ||
	    pf_hash_mem((const char *)buf, len - 21) != (uint64_t)sum)
		return -EPROTO;
	end = buf + len - 21;
	if ((size_t)(end - p) < strlen(LISTINGS_MAGIC) ||
	    memcmp(p, LISTINGS_MAGIC, strlen(LISTINGS_MAGIC)) != 0)
		return -EPROTO;
	p += strlen(LISTINGS_MAGIC);
	if (!next_line(&p, end, line, sizeof(line)) ||
	    sscanf(line, "source %lld", &n) != 1)
		return -EPROTO;
	src = take(&p, end, n);
	if (!src || strcmp(src, o->source) != 0)
		goto out;	/* another source of the same hash */
	while (p < end) {
		long long wall, pl, ne;
		struct sdir *d;

		if (!next_line(&p, end, line, sizeof(line)) ||
		    sscanf(line, "D %lld %lld %lld", &wall, &pl, &ne) != 3 ||
		    ne < 0)
			goto out;
		d = realloc(sd, (nsd + 1) * sizeof(*sd));
		if (!d)
			goto out;
		sd = d;
		d = &sd[nsd++];
		memset(d, 0, sizeof(*d));
		d->path = take(&p, end, pl);
		if (!d->path)
			goto out;
		/* clock gone back, or unknown: due for a refresh at once */
		d->learned = wall >= 0 && wall <= wnow ?
				     mnow - (wnow - wall) :
				     mnow - (int64_t)o->revalidate_s - 1;
		d->l.max = o->list_max > bytes ? o->list_max - bytes : 1;
		for (long long i = 0; i < ne; i++) {
			long long isdir, size, mtime, seen, el, nl;
			char *etag = NULL;
			char *name;
			struct ent *e;

			if (!next_line(&p, end, line, sizeof(line)) ||
			    sscanf(line, "E %lld %lld %lld %lld %lld %lld",
				   &isdir, &size, &mtime, &seen, &el,
				   &nl) != 6)
				goto out;
			if (el >= 128 ||
			    (el >= 0 && !(etag = take(&p, end, el))))
				goto out;
			name = take(&p, end, nl);
			if (!name || !name[0] || strchr(name, '/')) {
				free(name);
				free(etag);
				goto out;
			}
			ret = pf_obj_listing_add(
				&d->l, name, isdir != 0, size, mtime);
			free(name);
			if (ret < 0) {
				free(etag);
				goto out;
			}
			ret = -EPROTO;
			e = &d->l.ents[d->l.n - 1];
			e->etag = etag;
			e->nsec = pf_obj_etag_nsec(etag);
			d->l.bytes += etag ? strlen(etag) + 1 : 0;
			e->seen = seen >= 0 && seen <= wnow ?
					  mnow - (wnow - seen) : -1;
		}
		bytes += d->l.bytes;
		/* the file was written sorted; a hand-made one need not be */
		pf_obj_listing_finish(&d->l, d->path);
	}
	ret = 0;
out:
	free(src);
	if (ret < 0) {
		for (size_t i = 0; i < nsd; i++) {
			free(sd[i].path);
			pf_obj_ents_free(sd[i].l.ents, sd[i].l.n);
		}
		free(sd);
		return ret;
	}
	*out = sd;
	*nout = nsd;
	return 0;
}

/* Reads the listings file once: every directory not listed yet. */
static void listings_load(struct obj *o)
{
	struct sdir *sd = NULL;
	size_t nsd = 0;
	struct stat st;
	char *buf;
	ssize_t got;
	size_t loaded = 0;
	int fd = openat(o->listings_dirfd, o->listings_name, O_RDONLY |
			O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int ret;

	if (fd < 0 && errno == ENOENT)
		return;		/* the first mount with this cache dir */
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid()) {
		if (fd >= 0)
			close(fd);
		pf_warn("listings file '%s' is not a regular file of this "
			"user: ignored, directories are listed again",
			o->listings);
		return;
	}
	if (st.st_size <= 0 ||
	    (uint64_t)st.st_size > 2 * (uint64_t)o->list_max + (1u << 20)) {
		close(fd);
		pf_warn("listings file '%s' is empty or too large: ignored, "
			"directories are listed again", o->listings);
		return;
	}
	buf = malloc((size_t)st.st_size);
	got = buf ? pread(fd, buf, (size_t)st.st_size, 0) : -1;
	close(fd);
	ret = got == st.st_size ? listings_parse(o, buf, (size_t)got, &sd, &nsd)
				: -EIO;
	free(buf);
	if (ret < 0) {
		pf_warn("listings file '%s' is damaged (%s): ignored, "
			"directories are listed again", o->listings,
			ret == -EPROTO ? "bad checksum or format" :
					 strerror(-ret));
		return;
	}
	pthread_mutex_lock(&o->lock);
	for (size_t i = 0; i < nsd; i++) {
		struct dir *d = pf_obj_dir_find(o, sd[i].path);

		if (d || o->list_bytes + sd[i].l.bytes > o->list_max ||
		    !(d = pf_obj_dir_add(o, sd[i].path))) {
			pf_obj_ents_free(sd[i].l.ents, sd[i].l.n);
		} else {
			d->ents = sd[i].l.ents;
			d->n = sd[i].l.n;
			d->cap = sd[i].l.cap;
			d->state = D_LOADED;
			d->learned = sd[i].learned;
			d->stored = true;
			o->nstored++;
			o->list_bytes += sd[i].l.bytes;
			loaded++;
		}
		free(sd[i].path);
	}
	pthread_mutex_unlock(&o->lock);
	free(sd);
	pf_info("listings of %zu directories read from '%s'", loaded,
		o->listings);
}

/* Lists the stored directory @path again and takes the new listing. */
static void refresh_dir(struct obj *o, const char *path)
{
	struct listing l = { 0 };
	char why[300] = "";
	struct dir *d;
	int ret = pf_obj_list_dir(o, path, &l, why, sizeof(why));

	if (ret == 0)
		pf_obj_listing_finish(&l, path);
	pthread_mutex_lock(&o->lock);
	d = pf_obj_dir_find(o, path);
	if (ret == 0 && d && d->state == D_LOADED) {
		size_t old = ents_bytes(d->ents, d->n);

		if (o->list_bytes - old + l.bytes > o->list_max) {
			ret = -ENOMEM;
		} else {
			struct ent *oe = d->ents;
			size_t on = d->n;

			d->ents = l.ents;
			d->n = l.n;
			d->cap = l.cap;
			l.ents = oe;
			l.n = on;
			o->list_bytes = o->list_bytes - old + l.bytes;
			d->learned = l.seen;
			d->stored = false;
			o->nstored--;
			o->dirty = true;
		}
	}
	if (ret < 0 && d)	/* again later; learned stays true */
		d->retry = pf_obj_mono_s() + (o->revalidate_s > 10 ?
					       (int64_t)o->revalidate_s : 10);
	pthread_mutex_unlock(&o->lock);
	pf_obj_ents_free(l.ents, l.n);
	if (ret < 0)
		pf_warn("cannot list '%s/' again: %s%s%s (its stored listing "
			"stays)", path, strerror(-ret), why[0] ? ": " : "",
			why);
}

static void *refresher(void *arg)
{
	struct obj *o = arg;
	int64_t saved = pf_obj_mono_s();
	int64_t due = o->revalidate_s ? (int64_t)o->revalidate_s : 1;

	pthread_mutex_lock(&o->lock);
	while (!o->stop) {
		int64_t now = pf_obj_mono_s();
		char *path = NULL;

		for (size_t i = 0; o->nstored && !path && i < o->nbuckets;
		     i++)
			for (struct dir *d = o->dirs[i]; d && !path;
			     d = d->hnext)
				if (d->stored && now - d->learned >= due &&
				    now >= d->retry)
					path = strdup(d->path);
		if (path) {
			pthread_mutex_unlock(&o->lock);
			refresh_dir(o, path);
			free(path);
			pthread_mutex_lock(&o->lock);
			continue;
		}
		if (o->dirty && now - saved >= LISTINGS_SAVE_S) {
			pthread_mutex_unlock(&o->lock);
			listings_save(o);
			saved = pf_obj_mono_s();
			pthread_mutex_lock(&o->lock);
			continue;
		}
		{
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&o->tick, &o->lock, &ts);
		}
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

/* After the root is listed: read the file, start the refresher.  Without
 * memory or a thread the mount goes on without the file. */
void pf_obj_listings_start(struct obj *o, const char *source, int dirfd,
			   const char *path)
{
	const char *slash;

	if (!path)
		return;
	slash = strrchr(path, '/');
	o->listings_name = slash ? slash + 1 : path;
	o->listings_dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	o->listings = strdup(path);
	o->source = strdup(source);
	if (o->listings_dirfd < 0 || !o->listings || !o->source) {
		pf_warn("cannot keep the listings in '%s': %s", path,
			strerror(errno ? errno : ENOMEM));
		if (o->listings_dirfd >= 0)
			close(o->listings_dirfd);
		o->listings_dirfd = -1;
		free(o->listings);
		o->listings = NULL;
		return;
	}
	/* the name, in the copy this object owns */
	o->listings_name = o->listings + (o->listings_name - path);
	listings_load(o);
	if (pthread_create(&o->refresher, NULL, refresher, o) != 0) {
		pf_warn("cannot start the listings thread: listings are not "
			"kept in '%s'", path);
		return;
	}
	pthread_setname_np(o->refresher, "pf-listings");
	o->refresher_on = true;
}

void pf_obj_listings_stop(struct obj *o)
{
	if (!o->refresher_on)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->tick);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->refresher, NULL);
	o->refresher_on = false;
	if (o->dirty)
		listings_save(o);
}
