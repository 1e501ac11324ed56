/*
 * fuzz_json.c - libFuzzer target for pf_list_parse_json() and
 * pf_parse_http_date().
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = fuzz_copy(data, size);
	struct fuzz_state st = { 0 };
	char date[65];
	int64_t t;
	int ret;

	ret = pf_list_parse_json(b, size, fuzz_entry, &st);
	if (ret < 0) {
		FUZZ_ASSERT(ret == -EPROTO);
		FUZZ_ASSERT(st.count == 0);
	} else {
		FUZZ_ASSERT(ret == st.count);
	}

	fuzz_cstr(date, data, size);
	if (pf_parse_http_date(date, &t) == 0)
		FUZZ_ASSERT(t >= -62167219200LL && t < 253402300800LL + 2);
	free(b);
	return 0;
}
