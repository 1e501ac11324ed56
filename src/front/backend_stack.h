/*
 * backend_stack.h - the daemon's backend stack (backend_stack.c, not in
 * the core library).
 */
#ifndef PF_BACKEND_STACK_H
#define PF_BACKEND_STACK_H

#include <stddef.h>

#include "pf_backend.h"
#include "pf_opts.h"

/*
 * What SOURCE names, and the backend stack over it:
 * @src is SOURCE's absolute path or its URL; @o's max_memory loses what
 * the disk cache takes; @desc gets the stack's description.  On failure
 * prints one line to stderr and returns < 0, with nothing left to free.
 */
enum src_kind { SRC_POSIX, SRC_HTTP, SRC_S3 };

enum src_kind pf_backend_stack_kind(const char *src);
int pf_backend_stack_new(struct pf_opts *o, enum src_kind kind,
			 const char *src, struct pf_backend **be, char *desc,
			 size_t desclen);

#endif
