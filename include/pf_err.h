/*
 * pf_err.h - the one-line error messages the parsers and resolvers hand
 * back to their callers in a buffer the caller owns.
 */
#ifndef PF_ERR_H
#define PF_ERR_H

#include <stddef.h>

/* Formats into @err (at most @errlen bytes, NUL-terminated); does nothing
 * when @err is NULL or @errlen is 0.  Any thread. */
void pf_err_set(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
