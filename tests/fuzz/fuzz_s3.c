/*
 * fuzz_s3.c - libFuzzer target for pf_list_parse_s3(),
 * pf_list_parse_s3_error() and pf_parse_iso8601().
 */
#include "fuzz.h"

static void one(const char *b, size_t size, const char *prefix, size_t toklen)
{
	struct fuzz_state st = { 0 };
	char *tok = toklen ? malloc(toklen) : NULL;
	int trunc = -1;
	int ret;

	ret = pf_list_parse_s3(b, size, prefix, fuzz_entry, &st, &trunc, tok,
			       toklen);
	if (ret < 0) {
		/* a body that is not a whole listing reports nothing */
		FUZZ_ASSERT(st.count == 0);
	} else {
		FUZZ_ASSERT(ret == st.count);
		FUZZ_ASSERT(trunc == 0 || trunc == 1);
		if (trunc) {
			size_t n = fuzz_touch(&st, tok, toklen - 1);

			FUZZ_ASSERT(n > 0);
		}
	}
	free(tok);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = fuzz_copy(data, size);
	struct fuzz_state st = { 0 };
	char code[8];
	char msg[16];
	char date[65];
	int64_t t;
	int ret;

	one(b, size, "", 256);
	one(b, size, "data/", 8);
	one(b, size, "d", 0);

	/* stopping early returns the callback's value */
	st.stop_at = 1;
	ret = pf_list_parse_s3(b, size, "", fuzz_entry, &st, NULL, NULL, 0);
	FUZZ_ASSERT(ret == (st.count ? 5 : ret));

	ret = pf_list_parse_s3_error(b, size, code, sizeof(code), msg,
				     sizeof(msg));
	FUZZ_ASSERT(ret == 0 || ret == -EPROTO);
	fuzz_touch(&st, code, sizeof(code) - 1);
	if (ret == 0)
		fuzz_touch(&st, msg, sizeof(msg) - 1);
	ret = pf_list_parse_s3_error(b, size, code, 1, NULL, 0);
	FUZZ_ASSERT(code[0] == '\0');

	fuzz_cstr(date, data, size);
	if (pf_parse_iso8601(date, &t) == 0)
		FUZZ_ASSERT(t >= -62167219200LL && t < 253402300800LL + 2);
	free(b);
	return 0;
}
