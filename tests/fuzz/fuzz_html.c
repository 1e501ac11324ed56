/*
 * fuzz_html.c - libFuzzer target for pf_list_parse_html(): names obey the
 * rules, and no name is reported twice.
 */
#include "fuzz.h"

#define KEEP 128

struct html_state {
	struct fuzz_state st;	/* first: fuzz_entry gets it */
	char *names[KEEP];
	int kept;
};

static int entry(void *arg, const struct pf_listent *e)
{
	struct html_state *h = arg;
	int ret = fuzz_entry(&h->st, e);

	for (int i = 0; i < h->kept; i++)
		FUZZ_ASSERT(strcmp(h->names[i], e->name) != 0);
	if (h->kept < KEEP) {
		h->names[h->kept] = strdup(e->name);
		if (!h->names[h->kept])
			abort();
		h->kept++;
	}
	return ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = fuzz_copy(data, size);
	struct html_state h;
	int ret;

	memset(&h, 0, sizeof(h));
	ret = pf_list_parse_html(b, size, entry, &h);
	FUZZ_ASSERT(ret == -EPROTO || ret == h.st.count);
	for (int i = 0; i < h.kept; i++)
		free(h.names[i]);

	memset(&h, 0, sizeof(h));
	h.st.stop_at = 2;
	ret = pf_list_parse_html(b, size, entry, &h);
	FUZZ_ASSERT(ret == -EPROTO || ret == (h.st.count == 2 ? 5 :
							       h.st.count));
	for (int i = 0; i < h.kept; i++)
		free(h.names[i]);
	free(b);
	return 0;
}
