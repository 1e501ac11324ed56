/*
 * pf_json.h - a small JSON reader: text in, a tree of nodes out; and the
 * one string quoting the daemon's JSON writers (stats file, trace) share.
 *
 * For the tools that read the daemon's stats file (prefetchfs-stat), so
 * small documents; it is not a streaming parser.  The input is untrusted
 * in the sense that any byte string gives a tree or an error, never a
 * crash; nesting deeper than PF_JSON_MAX_DEPTH is an error.
 *
 * Ownership: pf_json_parse() returns a tree the caller frees with
 * pf_json_free(); every string in it belongs to the tree.  The lookup
 * functions return pointers into the tree (or the given default).  A tree
 * is not modified after parsing, so threads may read one concurrently.
 */
#ifndef PF_JSON_H
#define PF_JSON_H

#include <stddef.h>

#define PF_JSON_MAX_DEPTH 64

enum pf_json_type {
	PF_JSON_NULL,
	PF_JSON_BOOL,
	PF_JSON_NUM,
	PF_JSON_STR,
	PF_JSON_ARR,
	PF_JSON_OBJ,
};

struct pf_json {
	enum pf_json_type type;
	char *key;		/* member name when inside an object, else NULL */
	double num;		/* PF_JSON_NUM; PF_JSON_BOOL as 0 or 1 */
	char *str;		/* PF_JSON_STR, decoded to UTF-8, NUL-terminated */
	struct pf_json *child;	/* first element or member (ARR, OBJ) */
	struct pf_json *next;	/* next element or member of the parent */
};

/*
 * Parses @len bytes at @text (one value, surrounded by white space only).
 * Returns 0 and the tree in *out, -EINVAL if the text is not JSON, or
 * -ENOMEM.
 */
int pf_json_parse(const char *text, size_t len, struct pf_json **out);

void pf_json_free(struct pf_json *j);

/* The member @key of object @obj; NULL if @obj is not an object or has none. */
const struct pf_json *pf_json_get(const struct pf_json *obj, const char *key);

/* Member @key as a number (booleans count as 0/1), else @dflt. */
double pf_json_num(const struct pf_json *obj, const char *key, double dflt);

/* Member @key as a string, else @dflt. */
const char *pf_json_str(const struct pf_json *obj, const char *key,
			const char *dflt);

/*
 * The one JSON string decoder (this reader's and the listing parser's).
 * Decodes the string whose opening quote is at @p, reading no byte at or
 * past @end, and appends its contents to @sb (UTF-8; \u0000 as a NUL
 * byte) unless @sb is NULL; *@next receives the byte after the closing
 * quote.  Returns 0; PF_JSON_LONE_SURROGATE when the string is valid JSON
 * but holds an unpaired surrogate escape, which has no UTF-8 form and is
 * left out; -EINVAL when it is not a JSON string (unterminated, a control
 * byte, a bad escape).  Any thread.
 */
#define PF_JSON_LONE_SURROGATE 1
struct pf_strbuf;
int pf_json_string(const char *p, const char *end, struct pf_strbuf *sb,
		   const char **next);

/*
 * Writes @str as a quoted JSON string through @put, which gets the output
 * in order, piece by piece (@n bytes at @s, not NUL-terminated).  Strings
 * are bytes (file names): a byte that is not part of valid UTF-8 is written
 * as the code point of the same value (as Latin-1 would), so the output is
 * always valid JSON.  Any thread.
 */
typedef void (*pf_json_put_fn)(void *arg, const char *s, size_t n);
void pf_json_quote(const char *str, pf_json_put_fn put, void *arg);

#endif
