/*
 * pf_list.h - the daemon's intrusive doubly linked list: a struct list
 * member in each element, a struct list head that is its own neighbour
 * when empty, container_of() back to the element.  The engine's LRUs,
 * files and plan handles, and the FUSE front end's open handles.
 */
#ifndef PF_LIST_H
#define PF_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
	struct list *prev;
	struct list *next;
};

static inline void list_init(struct list *l)
{
	l->prev = l;
	l->next = l;
}

static inline void list_add_tail(struct list *head, struct list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n;
	n->next = n;
}

static inline bool list_empty(const struct list *l)
{
	return l->next == l;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#endif
