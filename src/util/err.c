/*
 * err.c - one-line error messages into a caller's buffer (pf_err.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "pf_err.h"

void pf_err_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
