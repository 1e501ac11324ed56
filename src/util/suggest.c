/*
 * suggest.c - "did you mean": the candidate closest to a mistyped word
 * (see pf_suggest.h).
 *
 * The distance is the optimal string alignment variant of Damerau's: a
 * swap of two neighbouring letters ("memroy") costs one, as a typing slip
 * does, not two substitutions.  Three rows of the usual table suffice.
 */
#include <limits.h>
#include <string.h>

#include "pf_suggest.h"

static char fold(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (char)(c - 'A' + 'a');
	return c == '-' ? '_' : c;
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
	unsigned m = a < b ? a : b;

	return m < c ? m : c;
}

unsigned pf_suggest_distance(const char *a, const char *b)
{
	unsigned rows[3][PF_SUGGEST_MAX + 1];
	size_t n = strlen(a);
	size_t m = strlen(b);
	unsigned *prev2 = rows[0];
	unsigned *prev = rows[1];
	unsigned *cur = rows[2];

	if (n > PF_SUGGEST_MAX || m > PF_SUGGEST_MAX)
		return UINT_MAX;
	for (size_t j = 0; j <= m; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= n; i++) {
		unsigned *t;

		cur[0] = (unsigned)i;
		for (size_t j = 1; j <= m; j++) {
			unsigned cost = fold(a[i - 1]) != fold(b[j - 1]);

			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1,
				      prev[j - 1] + cost);
			if (i > 1 && j > 1 &&
			    fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) &&
			    prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[m];
}

/* The most a typo of a word of @len letters changes. */
static unsigned typo_max(size_t len)
{
	if (len <= 4)
		return 1;
	return len <= 8 ? 2 : 3;
}

static bool starts(const char *cand, const char *word)
{
	size_t n = strlen(word);

	if (n < 4 || strlen(cand) <= n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (fold(cand[i]) != fold(word[i]))
			return false;
	return true;
}

void pf_suggest_init(struct pf_suggest *s, const char *word)
{
	memset(s, 0, sizeof(*s));
	s->word = word;
	s->dist = UINT_MAX;
}

void pf_suggest_offer(struct pf_suggest *s, const char *candidate)
{
	unsigned d = pf_suggest_distance(s->word, candidate);

	if (starts(candidate, s->word)) {
		s->prefixes++;
		s->prefix_of = candidate;
	}
	if (d == 0 || d > typo_max(strlen(s->word)))
		return;
	if (d < s->dist) {
		s->best = candidate;
		s->dist = d;
		s->tie = false;
	} else if (d == s->dist && strcmp(candidate, s->best) != 0) {
		s->tie = true;
	}
}

const char *pf_suggest_best(const struct pf_suggest *s)
{
	if (s->best && !s->tie)
		return s->best;
	if (!s->best && s->prefixes == 1)
		return s->prefix_of;
	return NULL;
}
