/*
 * pf_listing.h - parsers for the listings of object stores and web servers.
 *
 * Pure functions over a buffer: no I/O, no allocation that outlives a call,
 * no global state; safe from any thread.  Every parser takes untrusted
 * input (a server's response) and must neither crash nor read out of
 * bounds on any byte string; each has a libFuzzer target under tests/fuzz/.
 *
 * Entries are reported one at a time to a callback.  A name handed to the
 * callback is decoded (XML entities, percent escapes, JSON escapes) and
 * NUL-terminated; it lives only during the call.  Names that cannot be a
 * file name of the mount are skipped silently: empty, ".", "..", containing
 * '/' (except as the path separator of a manifest path) or NUL.
 *
 * Errors: >= 0 on success (the number of entries reported), -EPROTO when
 * the input is not a listing of the expected kind, -errno else.  The S3,
 * JSON and manifest parsers check the whole input before reporting the
 * first entry, so on any error (a body cut short, a bad manifest line) the
 * callback was never called.  The HTML parser reports as it goes.
 *
 * A buffer is never read at or past buf + len (it need not end in NUL);
 * buf may be NULL when len is 0.
 */
#ifndef PF_LISTING_H
#define PF_LISTING_H

#include <stddef.h>
#include <stdint.h>

/* The longest name reported (FUSE's limit on a name), and the longest
 * manifest path, NUL not counted; longer ones are skipped. */
#define PF_LIST_NAME_MAX 1024
#define PF_LIST_PATH_MAX 4096

struct pf_listent {
	const char *name;	/* decoded; see above */
	int is_dir;
	int64_t size;		/* bytes; -1 unknown or not exact */
	int64_t mtime;		/* seconds since the epoch; -1 unknown */
	const char *etag;	/* as sent, quotes included; NULL unknown */
};

/* Return non-zero to stop; the parser then returns that value. */
typedef int (*pf_list_fn)(void *arg, const struct pf_listent *e);

/*
 * An S3 ListObjectsV2 response (ListBucketResult).  Keys must start with
 * @prefix (the request's prefix, "" for the bucket root), which is removed;
 * keys not under it are skipped.  With a delimiter request, Contents are
 * files and CommonPrefixes directories (name without the trailing '/');
 * a key equal to the prefix itself (a "directory marker") is skipped.
 * *truncated receives IsTruncated; when true, the NextContinuationToken is
 * copied to tok (decoded, NUL-terminated); -ENAMETOOLONG if it does not
 * fit in toklen, -EPROTO if it is missing or empty.  truncated may be
 * NULL, tok too when toklen is 0.  With <EncodingType>url</EncodingType>
 * (the request's encoding-type=url) keys and prefixes are %-decoded, '+'
 * as a space.  Size and LastModified give size and mtime (-1 when absent
 * or unreadable), ETag the etag; CommonPrefixes have size -1, no etag.
 * The root element must be ListBucketResult and the document complete,
 * else -EPROTO (an <Error> body included: see pf_list_parse_s3_error()).
 */
int pf_list_parse_s3(const char *buf, size_t len, const char *prefix,
		     pf_list_fn fn, void *arg, int *truncated, char *tok,
		     size_t toklen);

/*
 * An S3 error body (<Error><Code>...</Code><Message>...</Message>...).
 * Copies Code and Message (truncated to fit, never inside a UTF-8
 * character, NUL-terminated; msg may be NULL).  0 if it is an error body,
 * even one cut short (what was there is copied), -EPROTO otherwise (code
 * and msg then "").  code must not be NULL nor codelen 0 (-EINVAL).
 */
int pf_list_parse_s3_error(const char *buf, size_t len, char *code,
			   size_t codelen, char *msg, size_t msglen);

/*
 * An HTML directory index: nginx autoindex, Apache mod_autoindex (both
 * layouts), lighttpd, python -m http.server, and in general a page whose
 * <a href="..."> links name the children.  A link is an entry when its
 * href, percent-decoded, is a single relative name, optionally ending in
 * '/' (a directory); parent links, absolute and host links, query and
 * fragment links (Apache's sort links "?C=N;O=D") are skipped, and so is
 * a second link to the same name.  The size is taken from nginx's exact
 * byte column when it is there (the default "autoindex_exact_size on"),
 * else -1; mtime likewise from nginx's "23-Nov-2026 09:44" column (UTC,
 * unless the server set autoindex_localtime).  Directories have size -1.
 * Hrefs are taken for names, never the link text (nginx cuts long names
 * there); "./name" is accepted (Apache, Caddy).  Text inside comments,
 * <script> and <style> is not looked at.  -EPROTO if the first byte that
 * is not white space (after a UTF-8 BOM) is not '<'; -ENOMEM.
 */
int pf_list_parse_html(const char *buf, size_t len, pf_list_fn fn,
		       void *arg);

/*
 * nginx "autoindex_format json": an array of objects with "name", "type"
 * ("file", "directory", "other"), "mtime" (an HTTP date) and, for files,
 * "size".  "other" entries are skipped, and so are objects without a
 * string "name" or whose type is none of these.  A size that is not a
 * non-negative integer, or an mtime that is not a date, is -1.  Any JSON
 * syntax error, nesting deeper than 32, or anything but an array of
 * objects is -EPROTO.
 */
int pf_list_parse_json(const char *buf, size_t len, pf_list_fn fn,
		       void *arg);

/*
 * A manifest: one "PATH SIZE" per line, SIZE the decimal byte count after
 * the last run of blanks, PATH everything before it (it may contain
 * blanks, and '/' between components).  Blank lines and lines starting
 * with '#' are skipped; a leading "./" or "/" is removed; CRLF is
 * accepted.  Entries are files (is_dir 0) named by their whole path.  A
 * line that is not "PATH SIZE", or whose path has an empty, "." or ".."
 * component, makes the whole manifest invalid: -EINVAL, and *bad_line (if
 * not NULL) receives its 1-based number.  Blank means spaces and tabs; a
 * comment is a line whose first byte is '#'; a path keeps its leading
 * blanks.  Entries have mtime -1.  A path with a component longer than
 * PF_LIST_NAME_MAX, longer than PF_LIST_PATH_MAX in all, or holding a NUL
 * is skipped.  Duplicate paths are reported as they come.
 */
int pf_list_parse_manifest(const char *buf, size_t len, pf_list_fn fn,
			   void *arg, unsigned *bad_line);

/* An HTTP date (IMF-fixdate, RFC 850 or asctime form) -> seconds since
 * the epoch.  -EINVAL if it is none of these, exactly (case, spacing, GMT;
 * the day of the week is not checked against the date).  RFC 850's
 * two-digit years are 1970-2069. */
int pf_parse_http_date(const char *s, int64_t *out);

/* ISO 8601 as S3 writes it ("2026-11-23T09:44:02.000Z", fraction and
 * 'Z' optional) -> seconds since the epoch.  -EINVAL otherwise. */
int pf_parse_iso8601(const char *s, int64_t *out);

#endif
