/*
 * pf_strbuf.h - a string being built: appended to, always NUL-terminated.
 *
 * Two kinds, one API:
 *  - growable (pf_strbuf_init): the buffer is the strbuf's, on the heap,
 *    grown as needed; pf_strbuf_release() frees it, pf_strbuf_detach()
 *    hands it to the caller;
 *  - fixed (pf_strbuf_init_fixed): the caller's array of @cap bytes, never
 *    grown or freed; what does not fit is cut off (the bytes that fit are
 *    kept, so a field can be truncated on purpose).
 *
 * Errors are sticky, so a sequence of appends needs one check at the end:
 * the first append that cannot be made whole (out of memory, or out of room
 * in a fixed buffer) sets sb->failed, and every later append does nothing.
 * Each append also returns 0 or that error (-ENOMEM, -ENOSPC).
 *
 * sb->buf is a valid NUL-terminated string of sb->len bytes at any time,
 * also before the first append (a shared empty string then: do not write
 * through it).  Contents may hold NUL bytes (pf_strbuf_add).
 *
 * Thread safety: none; a strbuf belongs to one thread at a time.
 *
 *	struct pf_strbuf sb;
 *
 *	pf_strbuf_init(&sb, 4096);
 *	pf_strbuf_addf(&sb, "{\"file\": ");
 *	pf_strbuf_add_json(&sb, path);
 *	pf_strbuf_addch(&sb, '}');
 *	return pf_strbuf_detach(&sb, NULL);	(NULL if anything failed)
 */
#ifndef PF_STRBUF_H
#define PF_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct pf_strbuf {
	char *buf;	/* the contents, NUL-terminated */
	size_t len;	/* bytes in buf before the NUL */
	size_t alloc;	/* bytes at buf; 0 while buf is the shared "" */
	bool fixed;	/* buf is the caller's array */
	bool failed;	/* an append did not fit: later ones are ignored */
};

/*
 * A growable strbuf, empty; @hint bytes are allocated at the first append
 * (0: a default).  Never fails.
 */
void pf_strbuf_init(struct pf_strbuf *sb, size_t hint);

/* A strbuf writing into @buf of @cap >= 1 bytes, owned by the caller;
 * sets buf[0] to NUL. */
void pf_strbuf_init_fixed(struct pf_strbuf *sb, char *buf, size_t cap);

/* Empties @sb (keeping its memory) and clears sb->failed. */
void pf_strbuf_reset(struct pf_strbuf *sb);

/* Appenders: 0, or -ENOMEM / -ENOSPC (and sb->failed set) */
int pf_strbuf_add(struct pf_strbuf *sb, const void *data, size_t len);
int pf_strbuf_addstr(struct pf_strbuf *sb, const char *s);
/* one byte; inline, as the decoders call it per character */
static inline int pf_strbuf_addch(struct pf_strbuf *sb, int c)
{
	char ch = (char)c;

	if (!sb->failed && sb->len + 1 < sb->alloc) {
		sb->buf[sb->len++] = ch;
		sb->buf[sb->len] = '\0';
		return 0;
	}
	return pf_strbuf_add(sb, &ch, 1);
}
int pf_strbuf_addf(struct pf_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Code point @cp (at most 0x10ffff) encoded as UTF-8. */
int pf_strbuf_add_utf8(struct pf_strbuf *sb, unsigned cp);
/* @s as a quoted JSON string (the rules of pf_json_quote()). */
int pf_strbuf_add_json(struct pf_strbuf *sb, const char *s);

/*
 * Frees a growable strbuf's memory; leaves @sb empty and usable, as after
 * pf_strbuf_init(sb, 0).  For a fixed one, the same as pf_strbuf_reset().
 */
void pf_strbuf_release(struct pf_strbuf *sb);

/*
 * The contents of a growable strbuf as a malloc'd string the caller frees,
 * its length in *len if @len is not NULL; @sb is left empty and usable.
 * NULL if an append failed (the memory is released) or if allocating an
 * empty string failed; a fixed strbuf gives NULL too (its array is the
 * caller's already).
 */
char *pf_strbuf_detach(struct pf_strbuf *sb, size_t *len);

#endif
