/*
 * pool.c - fixed-size buffers that are reused instead of freed.
 *
 * DESIGN: buffers are carved from slabs of up to 4 MiB obtained with mmap,
 * so a pool of tens of thousands of blocks costs a few hundred system
 * calls, and a freed buffer goes on a LIFO free list (the most recently
 * used buffer is the one most likely still in the CPU cache and mapped).
 * The free list is threaded through the buffers themselves.
 *
 * The warm-up (pf_pool_warm()) is one thread that maps slabs, faults their
 * pages in (MADV_POPULATE_WRITE, which writes nothing; huge pages where the
 * kernel has them, slab_populate()) and appends them to a FIFO of warm
 * slabs; pool_grow(), on the owner's side, takes the oldest warm slab
 * before it maps a cold one.  The slab count and the warm FIFO
 * are under p->wlock, the only state both sides touch: a slab is the
 * thread's until it is on the FIFO, the owner's once taken from it.
 * p->mapped counts every buffer of every slab, warm, being warmed or
 * carved, so that the two together never map more than max_bufs.  The
 * thread maps while the pool as a whole (its cold slabs too) has mapped
 * less than it was asked: when the owner outruns it and maps cold slabs,
 * those count, and the warm-up adds no memory on top of what the owner
 * needed.  pf_pool_free() stops and joins it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pf_clock.h"
#include "pf_pool.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SLAB_BYTES (4u << 20)

struct slab {
	struct slab *next;
	void *mem;
	size_t nbufs;
};

struct pf_pool {
	size_t buf_size;
	size_t max_bufs;
	size_t allocated;	/* buffers carved so far */
	size_t in_use;
	void *free_list;	/* each free buffer starts with the next ptr */
	struct slab *slabs;
	char *carve;		/* next uncarved byte in the newest slab */
	size_t carve_left;	/* buffers left to carve in it */
	bool carve_warm;	/* that slab came warm: the rest is resident */

	/* the warm-up: the fields below are guarded by wlock */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;	/* a warm slab came, or the warm-up ended */
	struct slab *warm;	/* warm slabs not carved yet, oldest first */
	struct slab *warm_tail;
	size_t warm_bufs;	/* buffers in the warm slabs */
	size_t mapped;		/* buffers in all slabs */
	size_t warm_upto;	/* the warm-up maps while fewer are mapped */
	size_t warming;		/* buffers of the slab it is faulting in */
	size_t warmed;		/* bytes it faulted in */
	bool stop;
	bool started;		/* set by the owner only */
	pthread_t thread;
};

int pf_pool_new(size_t buf_size, size_t max_bufs, struct pf_pool **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	pthread_condattr_t ca;
	struct pf_pool *p;

	if (buf_size == 0 || max_bufs == 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->buf_size = (buf_size + page - 1) / page * page;
	p->max_bufs = max_bufs;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&p->wlock, NULL);
	pthread_cond_init(&p->wcond, &ca);
	pthread_condattr_destroy(&ca);
	*out = p;
	return 0;
}

static void slabs_unmap(struct pf_pool *p, struct slab *s)
{
	while (s) {
		struct slab *next = s->next;

		munmap(s->mem, s->nbufs * p->buf_size);
		free(s);
		s = next;
	}
}

void pf_pool_free(struct pf_pool *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->wlock);
		p->stop = true;
		pthread_mutex_unlock(&p->wlock);
		pthread_join(p->thread, NULL);
	}
	slabs_unmap(p, p->warm);
	slabs_unmap(p, p->slabs);
	pthread_cond_destroy(&p->wcond);
	pthread_mutex_destroy(&p->wlock);
	free(p);
}

/* Buffers a new slab holds. */
static size_t slab_bufs(const struct pf_pool *p)
{
	size_t n = SLAB_BYTES / p->buf_size;

	return n ? n : 1;
}

static struct slab *slab_map(struct pf_pool *p, size_t n)
{
	struct slab *s = malloc(sizeof(*s));
	void *mem;

	if (!s)
		return NULL;
	mem = mmap(NULL, n * p->buf_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(s);
		return NULL;
	}
	s->next = NULL;
	s->mem = mem;
	s->nbufs = n;
	return s;
}

/*
 * Fault in every page of @s for writing; nobody else has it yet.  In huge
 * pages where the kernel has them (transparent huge pages "madvise", as
 * Debian ships): the pool's buffers are copied into from curl's buffer
 * and out of into the page cache, a TLB miss a 4 KiB page otherwise, and
 * pinning a reply's pages for the copy walks 16 page-table entries a
 * 64 KiB block.  Issue 14's four readers (160 ms), three rounds
 * alternated: daemon CPU 1.09-1.27 s/GiB against 1.26-1.54.  Only the
 * warm-up's slabs: a huge page may cost a compaction at its fault, which
 * this thread can afford and a fetch carving a cold slab cannot.
 */
static void slab_populate(struct pf_pool *p, struct slab *s)
{
	size_t bytes = s->nbufs * p->buf_size;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *c = s->mem;

	madvise(s->mem, bytes, MADV_HUGEPAGE);
	if (madvise(s->mem, bytes, MADV_POPULATE_WRITE) == 0)
		return;
	/* before Linux 5.14: a write per page does the same */
	for (size_t o = 0; o < bytes; o += page)
		c[o] = 0;
}

static void *warm_main(void *arg)
{
	struct pf_pool *p = arg;

	pthread_mutex_lock(&p->wlock);
	while (!p->stop && p->mapped < p->warm_upto) {
		size_t n = slab_bufs(p);
		struct slab *s;

		if (n > p->max_bufs - p->mapped)
			n = p->max_bufs - p->mapped;
		p->mapped += n;
		p->warming = n;
		pthread_mutex_unlock(&p->wlock);
		s = slab_map(p, n);
		if (s)
			slab_populate(p, s);
		pthread_mutex_lock(&p->wlock);
		p->warming = 0;
		if (!s) {
			p->mapped -= n;
			break;
		}
		if (p->warm_tail)
			p->warm_tail->next = s;
		else
			p->warm = s;
		p->warm_tail = s;
		p->warm_bufs += n;
		p->warmed += n * p->buf_size;
		pthread_cond_broadcast(&p->wcond);
	}
	p->warm_upto = 0;
	pthread_cond_broadcast(&p->wcond);
	pthread_mutex_unlock(&p->wlock);
	return NULL;
}

int pf_pool_warm(struct pf_pool *p, size_t bytes)
{
	int ret;

	if (p->started)
		return -EBUSY;
	if (bytes == 0)
		return 0;
	pthread_mutex_lock(&p->wlock);
	p->warm_upto = (bytes + p->buf_size - 1) / p->buf_size;
	if (p->warm_upto > p->max_bufs)
		p->warm_upto = p->max_bufs;
	pthread_mutex_unlock(&p->wlock);
	ret = -pthread_create(&p->thread, NULL, warm_main, p);
	if (ret < 0) {
		p->warm_upto = 0;
		return ret;
	}
	pthread_setname_np(p->thread, "pf-poolwarm");
	p->started = true;
	return 0;
}

bool pf_pool_warm_wait(struct pf_pool *p, unsigned ms)
{
	struct timespec dl = pf_deadline_ms(ms);
	bool done;

	pthread_mutex_lock(&p->wlock);
	while (p->warm_upto &&
	       pthread_cond_timedwait(&p->wcond, &p->wlock, &dl) == 0)
		;
	done = !p->warm_upto;
	pthread_mutex_unlock(&p->wlock);
	return done;
}

static int pool_grow(struct pf_pool *p)
{
	struct slab *s;
	size_t n;

	pthread_mutex_lock(&p->wlock);
	/* the warm-up holds the rest of the budget: its slab is near */
	while (!p->warm && p->warming && p->mapped >= p->max_bufs)
		pthread_cond_wait(&p->wcond, &p->wlock);
	s = p->warm;
	p->carve_warm = s != NULL;
	if (s) {
		p->warm = s->next;
		if (!p->warm)
			p->warm_tail = NULL;
		p->warm_bufs -= s->nbufs;
		pthread_mutex_unlock(&p->wlock);
		goto out;
	}
	n = slab_bufs(p);
	if (n > p->max_bufs - p->mapped)
		n = p->max_bufs - p->mapped;
	p->mapped += n;
	pthread_mutex_unlock(&p->wlock);
	s = n ? slab_map(p, n) : NULL;
	if (!s) {
		pthread_mutex_lock(&p->wlock);
		p->mapped -= n;
		pthread_mutex_unlock(&p->wlock);
		return -ENOMEM;
	}
out:
	s->next = p->slabs;
	p->slabs = s;
	p->carve = s->mem;
	p->carve_left = s->nbufs;
	return 0;
}

void *pf_pool_get(struct pf_pool *p)
{
	void *buf;

	if (p->free_list) {
		buf = p->free_list;
		p->free_list = *(void **)buf;
		p->in_use++;
		return buf;
	}
	if (p->carve_left == 0) {
		if (p->allocated >= p->max_bufs)
			return NULL;
		if (pool_grow(p) < 0)
			return NULL;
	}
	buf = p->carve;
	p->carve += p->buf_size;
	p->carve_left--;
	p->allocated++;
	p->in_use++;
	return buf;
}

void pf_pool_put(struct pf_pool *p, void *buf)
{
	*(void **)buf = p->free_list;
	p->free_list = buf;
	p->in_use--;
}

size_t pf_pool_buf_size(const struct pf_pool *p)
{
	return p->buf_size;
}

size_t pf_pool_max(const struct pf_pool *p)
{
	return p->max_bufs;
}

size_t pf_pool_in_use(const struct pf_pool *p)
{
	return p->in_use;
}

size_t pf_pool_allocated(const struct pf_pool *p)
{
	return p->allocated;
}

size_t pf_pool_resident(struct pf_pool *p)
{
	size_t n = p->allocated + (p->carve_warm ? p->carve_left : 0);

	pthread_mutex_lock(&p->wlock);
	n += p->warm_bufs;
	pthread_mutex_unlock(&p->wlock);
	return n * p->buf_size;
}

size_t pf_pool_warmed(struct pf_pool *p)
{
	size_t w;

	pthread_mutex_lock(&p->wlock);
	w = p->warmed;
	pthread_mutex_unlock(&p->wlock);
	return w;
}
