/*
 * fuzz_manifest.c - libFuzzer target for pf_list_parse_manifest().
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = fuzz_copy(data, size);
	struct fuzz_state st = { .manifest = 1 };
	unsigned bad = 0;
	unsigned lines = 1;
	int ret;

	for (size_t i = 0; i < size; i++)
		lines += b[i] == '\n';
	ret = pf_list_parse_manifest(b, size, fuzz_entry, &st, &bad);
	if (ret < 0) {
		FUZZ_ASSERT(ret == -EINVAL);
		FUZZ_ASSERT(st.count == 0);
		FUZZ_ASSERT(bad >= 1 && bad <= lines);
	} else {
		FUZZ_ASSERT(ret == st.count);
		FUZZ_ASSERT(bad == 0);
	}
	free(b);
	return 0;
}
