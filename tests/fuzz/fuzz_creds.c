/*
 * fuzz_creds.c - libFuzzer target for the credential answers' parsers
 * (src/creds_parse.c): pf_creds_parse_sts(), pf_creds_parse_json() of
 * each kind, pf_creds_parse_sso_cache() and pf_creds_parse_time().  The
 * first byte picks the parser, the rest is the answer.  What a parser
 * accepts must obey its contract: NUL-terminated fields within their
 * sizes, both keys present and printable, error messages one line; what
 * it refuses leaves no key behind.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf_creds.h"

#define FUZZ_ASSERT(cond)                                                  \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n",  \
				#cond, __FILE__, __LINE__);                \
			abort();                                           \
		}                                                          \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_field(const char *s, size_t cap, int need)
{
	size_t n = strnlen(s, cap);

	FUZZ_ASSERT(n < cap);
	FUZZ_ASSERT(!need || n > 0);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT((unsigned char)s[i] > ' ' &&
			    (unsigned char)s[i] < 0x7f);
}

static void check_val(const struct pf_cred_val *v, int ret, const char *err)
{
	FUZZ_ASSERT(strnlen(err, 1024) < 1024);
	FUZZ_ASSERT(!strchr(err, '\n'));
	if (ret < 0) {
		FUZZ_ASSERT(!v->access_key[0] && !v->secret_key[0] &&
			    !v->session_token[0]);
		return;
	}
	FUZZ_ASSERT(ret == 0);
	check_field(v->access_key, sizeof(v->access_key), 1);
	check_field(v->secret_key, sizeof(v->secret_key), 1);
	check_field(v->session_token, sizeof(v->session_token), 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pf_cred_val v;
	char err[1024] = "";
	char *b;
	int ret;

	if (size < 1)
		return 0;
	/* an exact-size copy, so ASan sees a read past the end */
	b = malloc(size - 1 ? size - 1 : 1);
	if (!b)
		abort();
	memcpy(b, data + 1, size - 1);
	switch (data[0] % 6) {
	case 0:
		ret = pf_creds_parse_sts(b, size - 1, &v, err, sizeof(err));
		check_val(&v, ret, err);
		break;
	case 1:
	case 2:
	case 3:
		ret = pf_creds_parse_json(b, size - 1,
					  (enum pf_cred_json)(data[0] % 6 - 1),
					  &v, err, sizeof(err));
		check_val(&v, ret, err);
		break;
	case 4: {
		char tok[512];
		int64_t exp;

		ret = pf_creds_parse_sso_cache(b, size - 1, "https://x/start",
					       tok, sizeof(tok), &exp, err,
					       sizeof(err));
		if (ret == 0) {
			check_field(tok, sizeof(tok), 1);
			FUZZ_ASSERT(exp != 0);
		}
		break;
	}
	default: {
		char s[65];
		size_t n = size - 1 < 64 ? size - 1 : 64;
		int64_t t;

		memcpy(s, b, n);
		s[n] = '\0';
		if (pf_creds_parse_time(s, &t) == 0)
			FUZZ_ASSERT(t > -200000 && t < 253402300800LL + 200000);
		break;
	}
	}
	free(b);
	return 0;
}
