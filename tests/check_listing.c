/*
 * check_listing.c - the listing parsers: S3 XML, HTML indexes, nginx JSON,
 * manifests, dates.  Real server output lives in tests/data/listing/
 * (captured from nginx 1.22.1 and python 3.11 http.server on Debian 12);
 * every parse runs on an exact-size heap copy, so reading one byte past
 * the buffer is caught under SANITIZE=address and valgrind.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pf_listing.h"

#define DATA_DIR "tests/data/listing/"

struct got {
	char name[PF_LIST_PATH_MAX + 1];
	int is_dir;
	int64_t size;
	int64_t mtime;
	char etag[64];
	int has_etag;
};

struct coll {
	struct got *e;
	int n;
	int cap;
	int stop_at;	/* return 7 at this entry (1-based); 0 never */
};

static int collect(void *arg, const struct pf_listent *e)
{
	struct coll *c = arg;
	struct got *g;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->e = realloc(c->e, (size_t)c->cap * sizeof(*c->e));
		ck_assert_ptr_nonnull(c->e);
	}
	g = &c->e[c->n++];
	ck_assert_uint_le(strlen(e->name), PF_LIST_PATH_MAX);
	strcpy(g->name, e->name);
	g->is_dir = e->is_dir;
	g->size = e->size;
	g->mtime = e->mtime;
	g->has_etag = e->etag != NULL;
	if (e->etag) {
		ck_assert_uint_lt(strlen(e->etag), sizeof(g->etag));
		strcpy(g->etag, e->etag);
	}
	return c->n == c->stop_at ? 7 : 0;
}

static void coll_free(struct coll *c)
{
	free(c->e);
	memset(c, 0, sizeof(*c));
}

static const struct got *find(const struct coll *c, const char *name)
{
	for (int i = 0; i < c->n; i++) {
		if (strcmp(c->e[i].name, name) == 0)
			return &c->e[i];
	}
	ck_abort_msg("no entry \"%s\"", name);
	return NULL;
}

/* An exact-size copy: the parsers must not read past it. */
static char *dup_exact(const char *s, size_t n)
{
	char *b = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, s, n);
	return b;
}

static char *slurp(const char *name, size_t *len)
{
	char path[256];
	FILE *f;
	char *b;
	long n;

	snprintf(path, sizeof(path), DATA_DIR "%s", name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s: run from the top of the tree", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	b = malloc((size_t)n);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int s3(const char *xml, const char *prefix, struct coll *c,
	      int *trunc, char *tok, size_t toklen)
{
	size_t n = strlen(xml);
	char *b = dup_exact(xml, n);
	int ret = pf_list_parse_s3(b, n, prefix, collect, c, trunc, tok,
				   toklen);

	free(b);
	return ret;
}

static int html(const char *s, struct coll *c)
{
	size_t n = strlen(s);
	char *b = dup_exact(s, n);
	int ret = pf_list_parse_html(b, n, collect, c);

	free(b);
	return ret;
}

static int json(const char *s, struct coll *c)
{
	size_t n = strlen(s);
	char *b = dup_exact(s, n);
	int ret = pf_list_parse_json(b, n, collect, c);

	free(b);
	return ret;
}

static int manifest(const char *s, struct coll *c, unsigned *bad)
{
	size_t n = strlen(s);
	char *b = dup_exact(s, n);
	int ret = pf_list_parse_manifest(b, n, collect, c, bad);

	free(b);
	return ret;
}

static int64_t utc(int y, int mon, int d, int h, int m, int s)
{
	struct tm tm = {
		.tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d,
		.tm_hour = h, .tm_min = m, .tm_sec = s,
	};

	return (int64_t)timegm(&tm);
}

/* ------------------------------------------------------------------ */
/* S3                                                                  */

/* As AWS answers ?list-type=2&prefix=data/&delimiter=/ */
static const char s3_page[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>bucket</Name><Prefix>data/</Prefix>"
	"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="
	"</NextContinuationToken><KeyCount>7</KeyCount><MaxKeys>1000</MaxKeys>"
	"<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
	"<Contents><Key>data/</Key>"
	"<LastModified>2026-11-23T09:44:02.000Z</LastModified>"
	"<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag>"
	"<Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>data/train-000.tar</Key>"
	"<LastModified>2026-11-23T09:44:02.000Z</LastModified>"
	"<ETag>&quot;9b2cf535f27731c974343645a3985328-12&quot;</ETag>"
	"<Size>104857600</Size><StorageClass>STANDARD</StorageClass>"
	"</Contents>"
	"<Contents><Key>data/a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;"
	"</Key><LastModified>2024-02-29T23:59:59Z</LastModified>"
	"<ETag>&quot;x&quot;</ETag><Size>5</Size></Contents>"
	"<Contents><Key>data/caf&#233; &#x65E5;&#X672c; &#128512;</Key>"
	"<LastModified>bogus</LastModified><Size>12</Size></Contents>"
	"<Contents><Key>data/nosize</Key></Contents>"
	"<CommonPrefixes><Prefix>data/images/</Prefix></CommonPrefixes>"
	"<CommonPrefixes><Prefix>data/a b%/</Prefix></CommonPrefixes>"
	"</ListBucketResult>";

START_TEST(test_s3_page)
{
	struct coll c = { 0 };
	const struct got *g;
	char tok[128];
	int trunc = -1;

	ck_assert_int_eq(s3(s3_page, "data/", &c, &trunc, tok, sizeof(tok)),
			 6);
	ck_assert_int_eq(c.n, 6);
	ck_assert_int_eq(trunc, 1);
	ck_assert_str_eq(tok, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");

	g = find(&c, "train-000.tar");
	ck_assert_int_eq(g->is_dir, 0);
	ck_assert_int_eq(g->size, 104857600);
	ck_assert_int_eq(g->mtime, utc(2026, 11, 23, 9, 44, 2));
	ck_assert(g->has_etag);
	ck_assert_str_eq(g->etag, "\"9b2cf535f27731c974343645a3985328-12\"");

	g = find(&c, "a & b <c> \"d\" 'e'");
	ck_assert_int_eq(g->size, 5);
	ck_assert_int_eq(g->mtime, utc(2024, 2, 29, 23, 59, 59));

	g = find(&c, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
	ck_assert_int_eq(g->size, 12);
	ck_assert_int_eq(g->mtime, -1);
	ck_assert(!g->has_etag);

	g = find(&c, "nosize");
	ck_assert_int_eq(g->size, -1);
	ck_assert_int_eq(g->mtime, -1);

	g = find(&c, "images");
	ck_assert_int_eq(g->is_dir, 1);
	ck_assert_int_eq(g->size, -1);
	ck_assert(!g->has_etag);
	g = find(&c, "a b%");
	ck_assert_int_eq(g->is_dir, 1);
	/* document order, and the marker "data/" is not an entry */
	ck_assert_str_eq(c.e[0].name, "train-000.tar");
	ck_assert_str_eq(c.e[5].name, "a b%");
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_last_page_and_root)
{
	static const char xml[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/"
		"2006-03-01/\">\r\n"
		"  <Name>bucket</Name>\r\n  <Prefix/>\r\n"
		"  <KeyCount>2</KeyCount>\r\n"
		"  <IsTruncated> false </IsTruncated>\r\n"
		"  <Contents>\r\n    <Key>top.bin</Key>\r\n"
		"    <Size> 7\n</Size>\r\n  </Contents>\r\n"
		"  <CommonPrefixes>\r\n    <Prefix>dir/</Prefix>\r\n"
		"  </CommonPrefixes>\r\n"
		"</ListBucketResult>\r\n";
	struct coll c = { 0 };
	char tok[16] = "stale";
	int trunc = -1;

	ck_assert_int_eq(s3(xml, "", &c, &trunc, tok, sizeof(tok)), 2);
	ck_assert_int_eq(trunc, 0);
	ck_assert_str_eq(c.e[0].name, "top.bin");
	ck_assert_int_eq(c.e[0].size, 7);
	ck_assert_str_eq(c.e[1].name, "dir");
	ck_assert_int_eq(c.e[1].is_dir, 1);
	coll_free(&c);

	/* NULL prefix is the root; NULL truncated and token are allowed */
	ck_assert_int_eq(s3(xml, NULL, &c, NULL, NULL, 0), 2);
	coll_free(&c);

	/* an empty page */
	ck_assert_int_eq(s3("<ListBucketResult><IsTruncated>false"
			    "</IsTruncated></ListBucketResult>",
			    "x/", &c, &trunc, tok, sizeof(tok)),
			 0);
	ck_assert_int_eq(c.n, 0);
	ck_assert_int_eq(s3("<ListBucketResult/>", "", &c, &trunc, NULL, 0),
			 0);
	ck_assert_int_eq(trunc, 0);
}
END_TEST

START_TEST(test_s3_skipped_keys)
{
	static const char xml[] =
		"<ListBucketResult>"
		"<Contents><Key>data/ok</Key><Size>1</Size></Contents>"
		"<Contents><Key>other/x</Key><Size>1</Size></Contents>"
		"<Contents><Key>dat</Key><Size>1</Size></Contents>"
		"<Contents><Key>data/a//b</Key><Size>1</Size></Contents>"
		"<Contents><Key>data/a/b</Key><Size>1</Size></Contents>"
		"<Contents><Key>data/..</Key><Size>1</Size></Contents>"
		"<Contents><Key>data/.</Key><Size>1</Size></Contents>"
		"<Contents><Key>data/sub/</Key><Size>0</Size></Contents>"
		"<Contents><Key>data/nul&#0;x</Key><Size>1</Size></Contents>"
		"<Contents><Size>1</Size></Contents>"
		"<Contents><Key>data/<b>x</b></Key><Size>1</Size></Contents>"
		"<CommonPrefixes><Prefix>data//</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/../</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/./</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/x/y/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/noslash</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>elsewhere/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>data/d/</Prefix></CommonPrefixes>"
		"</ListBucketResult>";
	struct coll c = { 0 };

	ck_assert_int_eq(s3(xml, "data/", &c, NULL, NULL, 0), 2);
	ck_assert_str_eq(c.e[0].name, "ok");
	ck_assert_str_eq(c.e[1].name, "d");
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_name_length)
{
	char xml[8192];
	char name[PF_LIST_NAME_MAX + 2];
	struct coll c = { 0 };

	memset(name, 'n', sizeof(name));
	name[PF_LIST_NAME_MAX] = '\0';
	snprintf(xml, sizeof(xml),
		 "<ListBucketResult><Contents><Key>p/%s</Key></Contents>"
		 "<Contents><Key>p/%sX</Key></Contents></ListBucketResult>",
		 name, name);
	ck_assert_int_eq(s3(xml, "p/", &c, NULL, NULL, 0), 1);
	ck_assert_uint_eq(strlen(c.e[0].name), PF_LIST_NAME_MAX);
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_token)
{
	static const char xml[] =
		"<ListBucketResult><IsTruncated>true</IsTruncated>"
		"<Contents><Key>a</Key></Contents>"
		"<NextContinuationToken>abc&amp;def</NextContinuationToken>"
		"</ListBucketResult>";
	struct coll c = { 0 };
	char tok[16];
	int trunc = -1;

	ck_assert_int_eq(s3(xml, "", &c, &trunc, tok, sizeof(tok)), 1);
	ck_assert_int_eq(trunc, 1);
	ck_assert_str_eq(tok, "abc&def");
	coll_free(&c);

	/* 7 bytes and the NUL do not fit in 7: nothing reported */
	ck_assert_int_eq(s3(xml, "", &c, &trunc, tok, 7), -ENAMETOOLONG);
	ck_assert_int_eq(s3(xml, "", &c, &trunc, tok, 8), 1);
	ck_assert_int_eq(s3(xml, "", &c, &trunc, NULL, 0), -ENAMETOOLONG);
	ck_assert_int_eq(c.n, 1);
	coll_free(&c);

	/* truncated without a token, or with an empty one */
	ck_assert_int_eq(s3("<ListBucketResult><IsTruncated>true</IsTruncated>"
			    "<Contents><Key>a</Key></Contents>"
			    "</ListBucketResult>",
			    "", &c, &trunc, tok, sizeof(tok)),
			 -EPROTO);
	ck_assert_int_eq(s3("<ListBucketResult><IsTruncated>true</IsTruncated>"
			    "<NextContinuationToken/></ListBucketResult>",
			    "", &c, &trunc, tok, sizeof(tok)),
			 -EPROTO);
	ck_assert_int_eq(s3("<ListBucketResult><IsTruncated>true</IsTruncated>"
			    "<NextContinuationToken>&#0;x</NextContinuationToken>"
			    "</ListBucketResult>",
			    "", &c, &trunc, tok, sizeof(tok)),
			 -EPROTO);
	ck_assert_int_eq(c.n, 0);

	/* a token on the last page is no error, whatever its size */
	ck_assert_int_eq(s3("<ListBucketResult><IsTruncated>false</IsTruncated>"
			    "<NextContinuationToken>0123456789abcdef0123"
			    "</NextContinuationToken></ListBucketResult>",
			    "", &c, &trunc, tok, 4),
			 0);
	ck_assert_int_eq(trunc, 0);
}
END_TEST

START_TEST(test_s3_url_encoding)
{
	/* encoding-type=url: keys and prefixes are %-encoded, '+' a space
	 * (what botocore undoes with unquote_plus) */
	static const char xml[] =
		"<ListBucketResult><Name>b</Name><Prefix>d%2F</Prefix>"
		"<Contents><Key>d/with+space%2Bplus%26.txt</Key><Size>3</Size>"
		"</Contents>"
		"<Contents><Key>d/%F0%9F%98%80</Key><Size>4</Size></Contents>"
		"<Contents><Key>d/a%2Fb</Key><Size>4</Size></Contents>"
		"<CommonPrefixes><Prefix>d/sub%20dir%2F</Prefix>"
		"</CommonPrefixes>"
		"<EncodingType>url</EncodingType>"
		"<IsTruncated>false</IsTruncated></ListBucketResult>";
	struct coll c = { 0 };

	ck_assert_int_eq(s3(xml, "d/", &c, NULL, NULL, 0), 3);
	ck_assert_str_eq(c.e[0].name, "with space+plus&.txt");
	ck_assert_str_eq(c.e[1].name, "\xf0\x9f\x98\x80");
	ck_assert_str_eq(c.e[2].name, "sub dir");
	ck_assert_int_eq(c.e[2].is_dir, 1);
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_xml_forms)
{
	/* BOM, comments, CDATA, namespace prefixes, attributes with '>' */
	static const char xml[] =
		"\xef\xbb\xbf<?xml version='1.0'?>\n"
		"<!DOCTYPE ListBucketResult>\n<!-- a > comment -->\n"
		"<s3:ListBucketResult xmlns:s3=\"urn:x\" a='>'>"
		"<s3:Contents><s3:Key><![CDATA[a&amp;<b>]]>c</s3:Key>"
		"<!-- inside --><s3:Size>9</s3:Size></s3:Contents>"
		"<Contents ><Key >k2</Key ><Size>1</Size></Contents >"
		"</s3:ListBucketResult>\n  \n";
	struct coll c = { 0 };

	ck_assert_int_eq(s3(xml, "", &c, NULL, NULL, 0), 2);
	ck_assert_str_eq(c.e[0].name, "a&amp;<b>c");
	ck_assert_int_eq(c.e[0].size, 9);
	ck_assert_str_eq(c.e[1].name, "k2");
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_not_a_listing)
{
	static const char *const bad[] = {
		"",
		"   ",
		"<?xml version=\"1.0\"?>",
		"<Error><Code>AccessDenied</Code></Error>",
		"<ListBucketResult><Contents><Key>a</Key></Contents>",
		"<ListBucketResult><Contents><Key>a</Key></Contents>"
		"</ListBucketResult><ListBucketResult/>",
		"<ListBucketResult><Contents><Key>a</Key></Contents>"
		"</ListBucketResult>junk",
		"<ListBucketResult><Contents><Key>a</Contents>"
		"</ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key></Contents>"
		"</ListBucketResult",
		"<ListBucketResult><!-- unterminated",
		"<ListBucketResult><![CDATA[x</ListBucketResult>",
		"<ListBucketResult a=\"b></ListBucketResult>",
		"<ListBucketResult></>",
		"<ListBucketResult><a:/></ListBucketResult>",
		"[{\"name\":\"a\"}]",
		"<html><body><a href=\"x\">x</a></body></html>",
	};
	struct coll c = { 0 };
	char tok[8];
	char deep[2048] = "<ListBucketResult>";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(s3(bad[i], "", &c, NULL, tok, sizeof(tok)) ==
				      -EPROTO,
			      "accepted: %s", bad[i]);
		ck_assert_int_eq(c.n, 0); /* nothing from a partial body */
	}
	for (int i = 0; i < 100; i++)
		strcat(deep, "<x>");
	ck_assert_int_eq(s3(deep, "", &c, NULL, NULL, 0), -EPROTO);
	/* and a page cut anywhere is never taken */
	for (size_t cut = 0; cut < sizeof(s3_page) - 1; cut++) {
		char *b = dup_exact(s3_page, cut);

		ck_assert_int_eq(pf_list_parse_s3(b, cut, "data/", collect, &c,
						  NULL, tok, sizeof(tok)),
				 -EPROTO);
		free(b);
	}
	ck_assert_int_eq(c.n, 0);
}
END_TEST

START_TEST(test_s3_stop)
{
	struct coll c = { .stop_at = 2 };
	char tok[128];
	int trunc = -1;

	ck_assert_int_eq(s3(s3_page, "data/", &c, &trunc, tok, sizeof(tok)),
			 7);
	ck_assert_int_eq(c.n, 2);
	ck_assert_int_eq(trunc, 1);
	coll_free(&c);
}
END_TEST

START_TEST(test_s3_error)
{
	static const char body[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<Error><Code>NoSuchBucket</Code>"
		"<Message>The specified bucket does not exist &amp; "
		"caf\xc3\xa9</Message><BucketName>nope</BucketName>"
		"<RequestId>4442587FB7D0A2F9</RequestId>"
		"<HostId>h</HostId></Error>";
	char code[64];
	char msg[128];
	char small[9];
	char *b;
	size_t n = strlen(body);

	b = dup_exact(body, n);
	ck_assert_int_eq(pf_list_parse_s3_error(b, n, code, sizeof(code), msg,
						sizeof(msg)),
			 0);
	ck_assert_str_eq(code, "NoSuchBucket");
	ck_assert_str_eq(msg, "The specified bucket does not exist & "
			      "caf\xc3\xa9");
	/* msg may be NULL */
	ck_assert_int_eq(pf_list_parse_s3_error(b, n, code, sizeof(code), NULL,
						0),
			 0);
	ck_assert_str_eq(code, "NoSuchBucket");
	/* truncated to fit, never in the middle of a character */
	ck_assert_int_eq(pf_list_parse_s3_error(b, n, small, sizeof(small),
						msg, 42),
			 0);
	ck_assert_str_eq(small, "NoSuchBu");
	ck_assert_str_eq(msg, "The specified bucket does not exist & caf");
	ck_assert_int_eq(pf_list_parse_s3_error(b, n, small, sizeof(small),
						msg, 43),
			 0);
	ck_assert_str_eq(msg, "The specified bucket does not exist & caf");
	ck_assert_int_eq(pf_list_parse_s3_error(b, n, small, sizeof(small),
						msg, 44),
			 0);
	ck_assert_str_eq(msg, "The specified bucket does not exist & "
			      "caf\xc3\xa9");
	/* a body cut short still says what it can */
	ck_assert_int_eq(pf_list_parse_s3_error(b, 80, code, sizeof(code), msg,
						sizeof(msg)),
			 0);
	ck_assert_str_eq(code, "NoSuchBucket");
	free(b);

	b = dup_exact(s3_page, sizeof(s3_page) - 1);
	ck_assert_int_eq(pf_list_parse_s3_error(b, sizeof(s3_page) - 1, code,
						sizeof(code), msg, sizeof(msg)),
			 -EPROTO);
	ck_assert_str_eq(code, "");
	free(b);
	b = dup_exact("Forbidden", 9);
	ck_assert_int_eq(pf_list_parse_s3_error(b, 9, code, sizeof(code), msg,
						sizeof(msg)),
			 -EPROTO);
	free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* HTML                                                                */

/* Everything in the captured nginx directory, as nginx 1.22 lists it. */
static const struct {
	const char *name;
	int is_dir;
	int64_t size;
} nginx_dir[] = {
	{ "sub dir", 1, -1 },
	{ "sub&dir", 1, -1 },
	{ "\xc3\x96", 1, -1 },
	{ "100%.txt", 0, 2 },
	{ "<lt>&gt;.html", 0, 3 },
	{ "a&b.txt", 0, 2 },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.txt", 0,
	  4 },
	{ "back\\slash.txt", 0, 3 },
	{ "big.dat", 0, 1048576 },
	{ "co:lon.txt", 0, 2 },
	{ "empty", 0, 0 },
	{ "hash#tag", 0, 2 },
	{ "new\nline", 0, 3 },
	{ "plain.txt", 0, 6 },
	{ "plus+sign.txt", 0, 5 },
	{ "quote\"double", 0, 2 },
	{ "semi;colon.txt", 0, 5 },
	{ "single'quote", 0, 2 },
	{ "tab\there", 0, 4 },
	{ "trail ", 0, 2 },
	{ "what?.txt", 0, 2 },
	{ "with space.bin", 0, 5 },
	{ "\xc3\xbcn\xc3\xaf\x63\xc3\xb8\x64\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac"
	  ".txt",
	  0, 2 },
	{ "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"
	  "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"
	  "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"
	  "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"
	  "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc"
	  ".txt",
	  0, 5 },
};

#define NGINX_N ((int)(sizeof(nginx_dir) / sizeof(nginx_dir[0])))

/* Checks @c holds the captured directory; sizes only when @sizes. */
static void check_nginx_dir(const struct coll *c, int sizes)
{
	ck_assert_int_eq(c->n, NGINX_N);
	for (int i = 0; i < NGINX_N; i++) {
		const struct got *g = find(c, nginx_dir[i].name);

		ck_assert_int_eq(g->is_dir, nginx_dir[i].is_dir);
		if (sizes)
			ck_assert_int_eq(g->size, nginx_dir[i].size);
		ck_assert(!g->has_etag);
	}
}

static int parse_file(const char *file, int kind, struct coll *c)
{
	size_t n;
	char *b = slurp(file, &n);
	int ret = kind ? pf_list_parse_json(b, n, collect, c) :
			 pf_list_parse_html(b, n, collect, c);

	free(b);
	return ret;
}

START_TEST(test_html_nginx)
{
	struct coll c = { 0 };
	const struct got *g;

	ck_assert_int_eq(parse_file("nginx-1.22.html", 0, &c), NGINX_N);
	check_nginx_dir(&c, 1);
	/* nginx lists directories first, in its order */
	ck_assert_str_eq(c.e[0].name, "sub dir");
	/* mtime from the "03-Feb-2023 04:05" column (GMT, no seconds) */
	g = find(&c, "plain.txt");
	ck_assert_int_eq(g->mtime, utc(2023, 2, 3, 4, 5, 0));
	g = find(&c, "sub dir");
	ck_assert_int_eq(g->mtime, utc(2026, 11, 23, 10, 38, 0));
	/* the link text of a long name is cut ("aaa..&gt;"); href is not */
	g = find(&c, "new\nline");
	ck_assert_int_eq(g->mtime, utc(2026, 11, 23, 10, 38, 0));
	coll_free(&c);

	ck_assert_int_eq(parse_file("nginx-1.22-empty.html", 0, &c), 0);

	/* autoindex_exact_size off: "1M" is no size, small ones are exact */
	ck_assert_int_eq(parse_file("nginx-1.22-approx.html", 0, &c), NGINX_N);
	g = find(&c, "big.dat");
	ck_assert_int_eq(g->size, -1);
	g = find(&c, "plain.txt");
	ck_assert_int_eq(g->size, 6);
	ck_assert_int_eq(g->mtime, utc(2023, 2, 3, 4, 5, 0));
	coll_free(&c);
}
END_TEST

START_TEST(test_html_python)
{
	struct coll c = { 0 };

	ck_assert_int_eq(parse_file("python-3.11.html", 0, &c), NGINX_N);
	check_nginx_dir(&c, 0);
	for (int i = 0; i < c.n; i++) {
		ck_assert_int_eq(c.e[i].size, -1);
		ck_assert_int_eq(c.e[i].mtime, -1);
	}
	coll_free(&c);
}
END_TEST

/* Apache 2.4 mod_autoindex, "IndexOptions FancyIndexing HTMLTable" (the
 * Debian default) */
static const char apache_table[] =
	"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n"
	"<html>\n <head>\n  <title>Index of /data</title>\n </head>\n"
	" <body>\n<h1>Index of /data</h1>\n  <table>\n"
	"   <tr><th valign=\"top\"><img src=\"/icons/blank.gif\" "
	"alt=\"[ICO]\"></th><th><a href=\"?C=N;O=D\">Name</a></th>"
	"<th><a href=\"?C=M;O=A\">Last modified</a></th>"
	"<th><a href=\"?C=S;O=A\">Size</a></th>"
	"<th><a href=\"?C=D;O=A\">Description</a></th></tr>\n"
	"   <tr><th colspan=\"5\"><hr></th></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/back.gif\" "
	"alt=\"[PARENTDIR]\"></td><td><a href=\"/\">Parent Directory</a>"
	"</td><td>&nbsp;</td><td align=\"right\">  - </td>"
	"<td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/text.gif\" alt=\"[TXT]\">"
	"</td><td><a href=\"a&amp;b.txt\">a&amp;b.txt</a></td>"
	"<td align=\"right\">2023-02-03 04:05  </td>"
	"<td align=\"right\">  2 </td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/unknown.gif\" "
	"alt=\"[   ]\"></td><td><a href=\"./co:lon.txt\">co:lon.txt</a>"
	"</td><td align=\"right\">2023-02-03 04:05  </td>"
	"<td align=\"right\">  2 </td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/unknown.gif\" "
	"alt=\"[   ]\"></td><td><a href=\"big%20file.dat\">big file.dat</a>"
	"</td><td align=\"right\">2023-02-03 04:05  </td>"
	"<td align=\"right\">1.0M</td><td>&nbsp;</td></tr>\n"
	"<tr><td valign=\"top\"><img src=\"/icons/folder.gif\" "
	"alt=\"[DIR]\"></td><td><a href=\"sub%20dir/\">sub dir/</a></td>"
	"<td align=\"right\">2023-02-03 04:05  </td>"
	"<td align=\"right\">  - </td><td>&nbsp;</td></tr>\n"
	"   <tr><th colspan=\"5\"><hr></th></tr>\n</table>\n"
	"<address>Apache/2.4.62 (Debian) Server at 127.0.0.1 Port 80"
	"</address>\n</body></html>\n";

/* FancyIndexing without HTMLTable: a <pre> with icons */
static const char apache_pre[] =
	"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n"
	"<html>\n <head>\n  <title>Index of /data</title>\n </head>\n"
	" <body>\n<h1>Index of /data</h1>\n"
	"<pre><img src=\"/icons/blank.gif\" alt=\"Icon \"> "
	"<a href=\"?C=N;O=D\">Name</a>                    "
	"<a href=\"?C=M;O=A\">Last modified</a>      "
	"<a href=\"?C=S;O=A\">Size</a>  <a href=\"?C=D;O=A\">Description</a>"
	"<hr><img src=\"/icons/back.gif\" alt=\"[PARENTDIR]\"> "
	"<a href=\"/\">Parent Directory</a>                             -   \n"
	"<img src=\"/icons/text.gif\" alt=\"[TXT]\"> "
	"<a href=\"a&amp;b.txt\">a&amp;b.txt</a>                 "
	"2023-02-03 04:05    2   \n"
	"<img src=\"/icons/unknown.gif\" alt=\"[   ]\"> "
	"<a href=\"./co:lon.txt\">co:lon.txt</a>              "
	"2023-02-03 04:05    2   \n"
	"<img src=\"/icons/unknown.gif\" alt=\"[   ]\"> "
	"<a href=\"big%20file.dat\">big file.dat</a>            "
	"2023-02-03 04:05  1.0M  \n"
	"<img src=\"/icons/folder.gif\" alt=\"[DIR]\"> "
	"<a href=\"sub%20dir/\">sub dir/</a>                "
	"2023-02-03 04:05    -   \n"
	"<hr></pre>\n</body></html>\n";

/* No FancyIndexing */
static const char apache_plain[] =
	"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n"
	"<html>\n <head>\n  <title>Index of /data</title>\n </head>\n"
	" <body>\n<h1>Index of /data</h1>\n"
	"<ul><li><a href=\"/\"> Parent Directory</a></li>\n"
	"<li><a href=\"a&amp;b.txt\"> a&amp;b.txt</a></li>\n"
	"<li><a href=\"./co:lon.txt\"> co:lon.txt</a></li>\n"
	"<li><a href=\"big%20file.dat\"> big file.dat</a></li>\n"
	"<li><a href=\"sub%20dir/\"> sub dir/</a></li>\n"
	"</ul>\n</body></html>\n";

/* lighttpd mod_dirlisting */
static const char lighttpd[] =
	"<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"UTF-8\">\n"
	"<title>Index of /data/</title>\n<style type=\"text/css\">\n"
	"a, a:active {text-decoration: none; color: blue;}\n</style>\n"
	"</head>\n<body>\n<h2>Index of /data/</h2>\n"
	"<div class=\"list\">\n<table summary=\"Directory Listing\" "
	"cellpadding=\"0\" cellspacing=\"0\">\n"
	"<thead><tr><th class=\"n\">Name</th><th class=\"m\">Last Modified"
	"</th><th class=\"s\">Size</th><th class=\"t\">Type</th></tr>"
	"</thead>\n<tbody>\n"
	"<tr class=\"d\"><td class=\"n\"><a href=\"../\">..</a>/</td>"
	"<td class=\"m\">&nbsp;</td><td class=\"s\">- &nbsp;</td>"
	"<td class=\"t\">Directory</td></tr>\n"
	"<tr class=\"d\"><td class=\"n\"><a href=\"sub%20dir/\">sub dir</a>/"
	"</td><td class=\"m\">2023-Feb-03 04:05:06</td>"
	"<td class=\"s\">- &nbsp;</td><td class=\"t\">Directory</td></tr>\n"
	"<tr><td class=\"n\"><a href=\"a%26b.txt\">a&amp;b.txt</a></td>"
	"<td class=\"m\">2023-Feb-03 04:05:06</td>"
	"<td class=\"s\">0.1K</td><td class=\"t\">text/plain</td></tr>\n"
	"<tr><td class=\"n\"><a href=\"co%3alon.txt\">co:lon.txt</a></td>"
	"<td class=\"m\">2023-Feb-03 04:05:06</td>"
	"<td class=\"s\">0.1K</td><td class=\"t\">text/plain</td></tr>\n"
	"<tr><td class=\"n\"><a href=\"big%20file.dat\">big file.dat</a>"
	"</td><td class=\"m\">2023-Feb-03 04:05:06</td>"
	"<td class=\"s\">1.0M</td><td class=\"t\">application/octet-stream"
	"</td></tr>\n"
	"</tbody>\n</table>\n</div>\n"
	"<script type=\"text/javascript\">\n"
	"// <!--\nvar s = '<a href=\"bogus\">';\n// -->\n</script>\n"
	"<div class=\"foot\">lighttpd/1.4.69</div>\n</body>\n</html>\n";

static void check_apache(const char *page)
{
	static const char *const names[] = {
		"a&b.txt", "co:lon.txt", "big file.dat", "sub dir",
	};
	struct coll c = { 0 };

	ck_assert_int_eq(html(page, &c), 4);
	for (int i = 0; i < 4; i++) {
		const struct got *g = find(&c, names[i]);

		ck_assert_int_eq(g->is_dir, i == 3);
		/* Apache's sizes are rounded ("1.0M"), its dates local */
		ck_assert_int_eq(g->size, -1);
		ck_assert_int_eq(g->mtime, -1);
	}
	coll_free(&c);
}

START_TEST(test_html_apache_lighttpd)
{
	check_apache(apache_table);
	check_apache(apache_pre);
	check_apache(apache_plain);
	check_apache(lighttpd);
}
END_TEST

START_TEST(test_html_links)
{
	static const char page[] =
		"<html><body>\n"
		"<a href=\"?C=N;O=D\">sort</a>\n"
		"<a href=\"#top\">top</a>\n"
		"<a href=\"x#frag\">x</a>\n"
		"<a href=\"y?z=1\">y</a>\n"
		"<a href=\"/abs\">abs</a>\n"
		"<a href=\"//host/p\">host</a>\n"
		"<a href=\"http://host/f\">f</a>\n"
		"<a href=\"mailto:me@x\">me</a>\n"
		"<a href=\"../\">up</a>\n<a href=\"..\">up</a>\n"
		"<a href=\"./\">here</a>\n<a href=\".\">here</a>\n"
		"<a href=\"%2E%2E\">dotdot</a>\n"
		"<a href=\"sub/file\">deep</a>\n"
		"<a href=\"a%2Fb\">slash</a>\n"
		"<a href=\"nul%00x\">nul</a>\n"
		"<a href=\"\">empty</a>\n"
		"<a name=\"anchor\">no href</a>\n"
		"<a>bare</a>\n"
		"<!-- <a href=\"commented\">c</a> -->\n"
		"<abbr href=\"notalink\">n</abbr>\n"
		"<A HREF=\"Upper.TXT\">u</A>\n"
		"<a class=x href='single%27q'>s</a>\n"
		"<a\n\thref = unquoted.txt title=\"t\">u</a>\n"
		"<a title=\"href=no\" href=\"real\">r</a>\n"
		"<a href=\"./dot:colon\">c</a>\n"
		"<a href=\"bad%zzpct%4\">p</a>\n"
		"<a href=\"dir%2F/\">d</a>\n"
		"<a href=\"&#x41;&#66;&lt;\">e</a>\n"
		"<a href=\"Upper.TXT\">again</a>\n"
		"<a href=\"Upper.TXT/\">again as dir</a>\n"
		"<a href=\" spaced \">s</a>\n"
		"<a href=\"last\">no close";
	static const char *const want[] = {
		"Upper.TXT", "single'q", "unquoted.txt", "real", "dot:colon",
		"bad%zzpct%4", "AB<", "spaced", "last",
	};
	struct coll c = { 0 };

	ck_assert_int_eq(html(page, &c), 9);
	for (int i = 0; i < 9; i++) {
		ck_assert_str_eq(c.e[i].name, want[i]);
		ck_assert_int_eq(c.e[i].is_dir, 0);
		ck_assert_int_eq(c.e[i].size, -1);
	}
	coll_free(&c);
}
END_TEST

START_TEST(test_html_many_and_dups)
{
	size_t cap = 4000 * 64;
	char *page = malloc(cap);
	size_t n = 0;
	struct coll c = { 0 };

	ck_assert_ptr_nonnull(page);
	n += (size_t)snprintf(page + n, cap - n, "<html><pre>\n");
	/* every name twice: an icon link then the name link */
	for (int i = 0; i < 3000; i++)
		n += (size_t)snprintf(page + n, cap - n,
				      "<a href=\"f%d\"><img></a> "
				      "<a href=\"f%d\">f%d</a>\n",
				      i, i, i);
	ck_assert_int_eq(html(page, &c), 3000);
	for (int i = 0; i < 3000; i++) {
		char want[16];

		snprintf(want, sizeof(want), "f%d", i);
		ck_assert_str_eq(c.e[i].name, want);
	}
	coll_free(&c);
	free(page);
}
END_TEST

START_TEST(test_html_edges)
{
	struct coll c = { .stop_at = 3 };
	char name[PF_LIST_NAME_MAX + 2];
	char page[4096];
	size_t n;
	char *b;

	/* stop */
	ck_assert_int_eq(parse_file("nginx-1.22.html", 0, &c), 7);
	ck_assert_int_eq(c.n, 3);
	coll_free(&c);
	/* not HTML */
	ck_assert_int_eq(html("", &c), -EPROTO);
	ck_assert_int_eq(html(" \r\n", &c), -EPROTO);
	ck_assert_int_eq(html("[{\"name\":\"x\"}]", &c), -EPROTO);
	ck_assert_int_eq(html("a b 12\n", &c), -EPROTO);
	/* the longest name fits, one more byte does not */
	memset(name, 'n', sizeof(name));
	name[PF_LIST_NAME_MAX] = '\0';
	snprintf(page, sizeof(page), "<a href=\"%s\">a</a><a href=\"%sX\">",
		 name, name);
	ck_assert_int_eq(html(page, &c), 1);
	ck_assert_uint_eq(strlen(c.e[0].name), PF_LIST_NAME_MAX);
	coll_free(&c);
	/* a page cut at every byte never reads past the end */
	b = slurp("nginx-1.22.html", &n);
	for (size_t cut = 0; cut <= n; cut++) {
		char *d = dup_exact(b, cut);
		int ret = pf_list_parse_html(d, cut, collect, &c);

		ck_assert(ret == -EPROTO || (ret >= 0 && ret <= NGINX_N));
		free(d);
		coll_free(&c);
	}
	free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* JSON                                                                */

START_TEST(test_json_nginx)
{
	struct coll c = { 0 };
	const struct got *g;

	ck_assert_int_eq(parse_file("nginx-1.22.json", 1, &c), NGINX_N);
	check_nginx_dir(&c, 1);
	g = find(&c, "plain.txt");
	ck_assert_int_eq(g->mtime, utc(2023, 2, 3, 4, 5, 6));
	g = find(&c, "sub dir");
	ck_assert_int_eq(g->size, -1);
	ck_assert_int_eq(g->mtime, utc(2026, 11, 23, 10, 38, 45));
	coll_free(&c);
	ck_assert_int_eq(parse_file("nginx-1.22-empty.json", 1, &c), 0);
}
END_TEST

START_TEST(test_json_escapes)
{
	static const char js[] =
		"[{\"name\":\"caf\\u00e9\",\"type\":\"file\",\"size\":1},"
		"{\"name\":\"\\ud83d\\ude00\",\"type\":\"file\",\"size\":2},"
		"{\"name\":\"\\u65E5\\\"\\\\\\b\\f\\n\\r\\t\",\"type\":"
		"\"file\",\"size\":3},"
		"{\"name\":\"lone\\ud83d\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"lone\\ude00\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"hi\\ud83dx\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"hi\\ud83d\\u0041\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"nul\\u0000\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"a\\/b\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"..\",\"type\":\"directory\"},"
		"{\"name\":\"\",\"type\":\"file\",\"size\":4},"
		"{\"name\":\"sock\",\"type\":\"other\"},"
		"{\"name\":\"what\",\"type\":\"fifo\"},"
		"{\"type\":\"file\",\"size\":4},"
		"{\"name\":7,\"type\":\"file\"},"
		"{},"
		"{\"extra\":{\"a\":[1,2.5e3,-0.1,true,false,null,{}]},"
		" \"size\" : 12.0 , \"name\" : \"late\" , \"type\":\"file\","
		" \"mtime\":\"Sunday, 06-Nov-94 08:49:37 GMT\"},"
		"{\"name\":\"neg\",\"type\":\"file\",\"size\":-5},"
		"{\"name\":\"huge\",\"type\":\"file\","
		"\"size\":99999999999999999999},"
		"{\"name\":\"d\",\"type\":\"directory\",\"size\":9,"
		"\"mtime\":\"garbage\"}"
		"]\n";
	struct coll c = { 0 };

	ck_assert_int_eq(json(js, &c), 7);
	ck_assert_str_eq(c.e[0].name, "caf\xc3\xa9");
	ck_assert_int_eq(c.e[0].size, 1);
	ck_assert_int_eq(c.e[0].mtime, -1);
	ck_assert_str_eq(c.e[1].name, "\xf0\x9f\x98\x80");
	ck_assert_str_eq(c.e[2].name, "\xe6\x97\xa5\"\\\b\f\n\r\t");
	ck_assert_str_eq(c.e[3].name, "late");
	ck_assert_int_eq(c.e[3].size, -1);
	ck_assert_int_eq(c.e[3].mtime, 784111777);
	ck_assert_str_eq(c.e[4].name, "neg");
	ck_assert_int_eq(c.e[4].size, -1);
	ck_assert_str_eq(c.e[5].name, "huge");
	ck_assert_int_eq(c.e[5].size, -1);
	ck_assert_str_eq(c.e[6].name, "d");
	ck_assert_int_eq(c.e[6].is_dir, 1);
	ck_assert_int_eq(c.e[6].size, -1);
	ck_assert_int_eq(c.e[6].mtime, -1);
	coll_free(&c);
}
END_TEST

START_TEST(test_json_invalid)
{
	static const char *const bad[] = {
		"",
		"  ",
		"{}",
		"[",
		"[{\"name\":\"a\",\"type\":\"file\"}",
		"[{\"name\":\"a\",\"type\":\"file\"},]",
		"[{\"name\":\"a\",\"type\":\"file\"}] x",
		"[{\"name\":\"a\",\"type\":\"file\"}][]",
		"[{\"name\":\"a\" \"type\":\"file\"}]",
		"[{\"name\":\"a\",\"type\":\"file\",}]",
		"[{\"name\":\"a\tb\",\"type\":\"file\"}]",
		"[{\"name\":\"a\\x\",\"type\":\"file\"}]",
		"[{\"name\":\"a\\u12\",\"type\":\"file\"}]",
		"[{\"name\":\"a\",\"size\":01}]",
		"[{\"name\":\"a\",\"size\":1.}]",
		"[{\"name\":\"a\",\"size\":-}]",
		"[{\"name\":\"a\",\"size\":1e}]",
		"[{\"name\":\"a\",\"x\":tru}]",
		"[{\"name\":\"a\",\"x\":nul}]",
		"[{\"name\":\"a\",\"x\":[1,]}]",
		"[{name:\"a\"}]",
		"[\"a\"]",
		"[1]",
		"<html></html>",
	};
	struct coll c = { 0 };
	char deep[4096] = "[{\"x\":";
	size_t n;
	char *b;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(json(bad[i], &c) == -EPROTO, "accepted: %s",
			      bad[i]);
		ck_assert_int_eq(c.n, 0);
	}
	for (int i = 0; i < 1000; i++)
		strcat(deep, "[");
	ck_assert_int_eq(json(deep, &c), -EPROTO);
	/* cut anywhere: nothing reported */
	b = slurp("nginx-1.22.json", &n);
	for (size_t cut = 0; cut < n; cut++) {
		char *d = dup_exact(b, cut);

		ck_assert_int_eq(pf_list_parse_json(d, cut, collect, &c),
				 -EPROTO);
		free(d);
	}
	ck_assert_int_eq(c.n, 0);
	/* stop */
	c.stop_at = 1;
	ck_assert_int_eq(pf_list_parse_json(b, n, collect, &c), 7);
	ck_assert_int_eq(c.n, 1);
	coll_free(&c);
	free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Manifests                                                           */

START_TEST(test_manifest)
{
	static const char m[] =
		"# prefetchfs manifest\r\n"
		"\r\n"
		"train/000.tar 104857600\r\n"
		"./train/001.tar\t42\n"
		"/val/with space.bin   \t 7   \n"
		"   \t\n"
		"# 12\n"
		"a 0\n"
		"caf\xc3\xa9/\xe6\x97\xa5 1\n"
		"name with 2 numbers 3 4\n"
		"#comment without newline at the end is fine too\n"
		"last 9223372036854775807";
	struct coll c = { 0 };
	unsigned bad = 99;

	ck_assert_int_eq(manifest(m, &c, &bad), 7);
	ck_assert_uint_eq(bad, 99);
	ck_assert_str_eq(c.e[0].name, "train/000.tar");
	ck_assert_int_eq(c.e[0].size, 104857600);
	ck_assert_str_eq(c.e[1].name, "train/001.tar");
	ck_assert_int_eq(c.e[1].size, 42);
	ck_assert_str_eq(c.e[2].name, "val/with space.bin");
	ck_assert_int_eq(c.e[2].size, 7);
	ck_assert_str_eq(c.e[3].name, "a");
	ck_assert_int_eq(c.e[3].size, 0);
	ck_assert_str_eq(c.e[4].name, "caf\xc3\xa9/\xe6\x97\xa5");
	ck_assert_str_eq(c.e[5].name, "name with 2 numbers 3");
	ck_assert_int_eq(c.e[5].size, 4);
	ck_assert_str_eq(c.e[6].name, "last");
	ck_assert_int_eq(c.e[6].size, INT64_MAX);
	for (int i = 0; i < 7; i++) {
		ck_assert_int_eq(c.e[i].is_dir, 0);
		ck_assert_int_eq(c.e[i].mtime, -1);
		ck_assert(!c.e[i].has_etag);
	}
	coll_free(&c);

	ck_assert_int_eq(manifest("", &c, &bad), 0);
	ck_assert_int_eq(manifest("\n\n# only comments\r\n", &c, NULL), 0);
	c.stop_at = 2;
	ck_assert_int_eq(manifest(m, &c, NULL), 7);
	ck_assert_int_eq(c.n, 2);
	coll_free(&c);
}
END_TEST

START_TEST(test_manifest_bad)
{
	static const struct {
		const char *text;
		unsigned line;
	} bad[] = {
		{ "nosize\n", 1 },
		{ "a 1\n\nb\n", 3 },
		{ "a 1\r\n12\r\n", 2 },
		{ "a -1\n", 1 },
		{ "a +1\n", 1 },
		{ "a 1k\n", 1 },
		{ "a 0x10\n", 1 },
		{ "a 9223372036854775808\n", 1 },
		{ "a 1\nb 2\na//b 3\n", 3 },
		{ "a/../b 1\n", 1 },
		{ "../b 1\n", 1 },
		{ "./ 1\n", 1 },
		{ "/ 1\n", 1 },
		{ "// 1\n", 1 },
		{ ".//a 1\n", 1 },
		{ "a/. 1\n", 1 },
		{ "a/ 1\n", 1 },
		{ "./. 1\n", 1 },
		{ " 1\n", 1 },
		{ "a 1 \n \t 7", 2 },
		{ "ok 1\n# c\n\nx\ty", 4 },
	};
	struct coll c = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned line = 0;

		ck_assert_msg(manifest(bad[i].text, &c, &line) == -EINVAL,
			      "accepted: %s", bad[i].text);
		ck_assert_msg(line == bad[i].line, "%s: line %u", bad[i].text,
			      line);
		ck_assert_int_eq(c.n, 0); /* the whole manifest is refused */
		ck_assert_int_eq(manifest(bad[i].text, &c, NULL), -EINVAL);
	}
}
END_TEST

START_TEST(test_manifest_skips)
{
	char m[8192];
	char comp[PF_LIST_NAME_MAX + 2];
	struct coll c = { 0 };
	size_t n;
	char *b;

	memset(comp, 'c', sizeof(comp));
	comp[PF_LIST_NAME_MAX] = '\0';
	snprintf(m, sizeof(m), "d/%s 1\nd/%sX 2\nok 3\n", comp, comp);
	ck_assert_int_eq(manifest(m, &c, NULL), 2);
	ck_assert_uint_eq(strlen(c.e[0].name), 2 + PF_LIST_NAME_MAX);
	ck_assert_str_eq(c.e[1].name, "ok");
	coll_free(&c);
	/* a NUL in a path: skipped, the rest stands */
	n = sizeof("a\0b 1\nok 2\n") - 1;
	b = dup_exact("a\0b 1\nok 2\n", n);
	ck_assert_int_eq(pf_list_parse_manifest(b, n, collect, &c, NULL), 1);
	ck_assert_str_eq(c.e[0].name, "ok");
	free(b);
	coll_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Dates                                                               */

START_TEST(test_http_date)
{
	int64_t t = 0;

	ck_assert_int_eq(pf_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT",
					    &t),
			 0);
	ck_assert_int_eq(t, 784111777);
	t = 0;
	ck_assert_int_eq(pf_parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT",
					    &t),
			 0);
	ck_assert_int_eq(t, 784111777);
	t = 0;
	ck_assert_int_eq(pf_parse_http_date("Sun Nov  6 08:49:37 1994", &t),
			 0);
	ck_assert_int_eq(t, 784111777);
	ck_assert_int_eq(pf_parse_http_date("Thu Nov 16 08:49:37 1994", &t),
			 0);
	ck_assert_int_eq(t, 784111777 + 10 * 86400);
	ck_assert_int_eq(pf_parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT",
					    &t),
			 0);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(pf_parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT",
					    &t),
			 0);
	ck_assert_int_eq(t, utc(2024, 2, 29, 23, 59, 59));
	ck_assert_int_eq(pf_parse_http_date("Tue, 05-Jan-05 00:00:00 GMT",
					    &t),
			 -EINVAL); /* RFC 850 wants the whole day name */
	ck_assert_int_eq(pf_parse_http_date("Wednesday, 05-Jan-05 00:00:00 "
					    "GMT",
					    &t),
			 0);
	ck_assert_int_eq(t, utc(2005, 1, 5, 0, 0, 0));

	static const char *const bad[] = {
		"",
		"Sun, 06 Nov 1994 08:49:37",
		"Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nov 1994 08:49:37 GMT ",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 nov 1994 08:49:37 GMT",
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Sun, 30 Feb 1994 08:49:37 GMT",
		"Sun, 29 Feb 2023 08:49:37 GMT",
		"Sun, 29 Feb 1900 08:49:37 GMT",
		"Sun, 00 Nov 1994 08:49:37 GMT",
		"Sun, 31 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1994 08:49:61 GMT",
		"Sun, 06 Nov 94 08:49:37 GMT",
		"Xyz, 06 Nov 1994 08:49:37 GMT",
		"Sun 06 Nov 1994 08:49:37 GMT",
		"Sun Nov 6 08:49:37 1994",
		"Sun Nov  6 08:49:37 94",
		"2026-11-23T09:44:02Z",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(pf_parse_http_date(bad[i], &t) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

START_TEST(test_iso8601)
{
	int64_t t = 0;
	int64_t want = utc(2026, 11, 23, 9, 44, 2);

	ck_assert_int_eq(pf_parse_iso8601("2026-11-23T09:44:02.000Z", &t), 0);
	ck_assert_int_eq(t, want);
	t = 0;
	ck_assert_int_eq(pf_parse_iso8601("2026-11-23T09:44:02Z", &t), 0);
	ck_assert_int_eq(t, want);
	t = 0;
	ck_assert_int_eq(pf_parse_iso8601("2026-11-23T09:44:02", &t), 0);
	ck_assert_int_eq(t, want);
	t = 0;
	ck_assert_int_eq(pf_parse_iso8601("2026-11-23T09:44:02.123456789", &t),
			 0);
	ck_assert_int_eq(t, want);
	ck_assert_int_eq(pf_parse_iso8601("1970-01-01T00:00:00Z", &t), 0);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(pf_parse_iso8601("1969-12-31T23:59:58Z", &t), 0);
	ck_assert_int_eq(t, -2);
	ck_assert_int_eq(pf_parse_iso8601("2000-02-29T00:00:00Z", &t), 0);

	static const char *const bad[] = {
		"",
		"2026-11-23",
		"2026-11-23 09:44:02Z",
		"2026-11-23T09:44Z",
		"2026-11-23T09:44:02.Z",
		"2026-11-23T09:44:02ZZ",
		"2026-11-23T09:44:02+00:00",
		"2026-13-23T09:44:02Z",
		"2026-00-23T09:44:02Z",
		"2026-02-29T09:44:02Z",
		"2026-11-23T25:44:02Z",
		"26-11-23T09:44:02Z",
		"2026-1-23T09:44:02Z",
		"Sun, 06 Nov 1994 08:49:37 GMT",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(pf_parse_iso8601(bad[i], &t) == -EINVAL,
			      "accepted: %s", bad[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("listing");
	TCase *ts3 = tcase_create("s3");
	TCase *thtml = tcase_create("html");
	TCase *tjson = tcase_create("json");
	TCase *tman = tcase_create("manifest");
	TCase *tdate = tcase_create("dates");
	SRunner *sr;
	int failed;

	tcase_add_test(ts3, test_s3_page);
	tcase_add_test(ts3, test_s3_last_page_and_root);
	tcase_add_test(ts3, test_s3_skipped_keys);
	tcase_add_test(ts3, test_s3_name_length);
	tcase_add_test(ts3, test_s3_token);
	tcase_add_test(ts3, test_s3_url_encoding);
	tcase_add_test(ts3, test_s3_xml_forms);
	tcase_add_test(ts3, test_s3_not_a_listing);
	tcase_add_test(ts3, test_s3_stop);
	tcase_add_test(ts3, test_s3_error);
	tcase_add_test(thtml, test_html_nginx);
	tcase_add_test(thtml, test_html_python);
	tcase_add_test(thtml, test_html_apache_lighttpd);
	tcase_add_test(thtml, test_html_links);
	tcase_add_test(thtml, test_html_many_and_dups);
	tcase_add_test(thtml, test_html_edges);
	tcase_add_test(tjson, test_json_nginx);
	tcase_add_test(tjson, test_json_escapes);
	tcase_add_test(tjson, test_json_invalid);
	tcase_add_test(tman, test_manifest);
	tcase_add_test(tman, test_manifest_bad);
	tcase_add_test(tman, test_manifest_skips);
	tcase_add_test(tdate, test_http_date);
	tcase_add_test(tdate, test_iso8601);
	suite_add_tcase(s, ts3);
	suite_add_tcase(s, thtml);
	suite_add_tcase(s, tjson);
	suite_add_tcase(s, tman);
	suite_add_tcase(s, tdate);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
