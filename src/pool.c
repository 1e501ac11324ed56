/*
 * pool.c - fixed-size buffers that are reused instead of freed.
 *
 * DESIGN: buffers are carved from slabs of up to 4 MiB obtained with mmap,
 * so a pool of tens of thousands of blocks costs a few hundred system
 * calls, and a freed buffer goes on a LIFO free list (the most recently
 * used buffer is the one most likely still in the CPU cache and mapped).
 * The free list is threaded through the buffers themselves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pf_pool.h"

#define SLAB_BYTES (4u << 20)

struct slab {
	struct slab *next;
	void *mem;
	size_t bytes;
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
};

int pf_pool_new(size_t buf_size, size_t max_bufs, struct pf_pool **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct pf_pool *p;

	if (buf_size == 0 || max_bufs == 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->buf_size = (buf_size + page - 1) / page * page;
	p->max_bufs = max_bufs;
	*out = p;
	return 0;
}

void pf_pool_free(struct pf_pool *p)
{
	struct slab *s;

	if (!p)
		return;
	while (p->slabs) {
		s = p->slabs;
		p->slabs = s->next;
		munmap(s->mem, s->bytes);
		free(s);
	}
	free(p);
}

static int pool_grow(struct pf_pool *p)
{
	size_t n = SLAB_BYTES / p->buf_size;
	struct slab *s;
	void *mem;

	if (n == 0)
		n = 1;
	if (n > p->max_bufs - p->allocated)
		n = p->max_bufs - p->allocated;
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	mem = mmap(NULL, n * p->buf_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(s);
		return -ENOMEM;
	}
	s->mem = mem;
	s->bytes = n * p->buf_size;
	s->next = p->slabs;
	p->slabs = s;
	p->carve = mem;
	p->carve_left = n;
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
