/*
 * test_http_fuzz.c - replays the HTTP parser fuzzer's inputs through its
 * harness (tests/fuzz/http_parse_fuzz.c, included here): the kept corpus
 * (tests/fuzz/corpus/http/), the seeds (tests/fuzz/http_seeds/) and every
 * finding saved by libFuzzer or afl++ (tests/fuzz/http_found/). Each must
 * parse, whole and as the prefixes a slow client sends, with the
 * harness's invariants holding.
 */
#include "check.h"

#define FUZZ_REPLAY /* the harness without its libFuzzer entry point */
#include "../fuzz/http_parse_fuzz.c"
#include "fuzz_replay.h"

int main(void)
{
	int corpus = fuzz_replay_dir("tests/fuzz/corpus/http", http_fuzz_one, 1);
	int seeds = fuzz_replay_dir("tests/fuzz/http_seeds", http_fuzz_one, 1);
	int found = fuzz_replay_dir("tests/fuzz/http_found", http_fuzz_one, 0);

	CHECK(corpus >= 1 && seeds >= 10, "1.1 the corpus and seeds replayed");
	printf("replayed %d corpus inputs, %d seeds, %d findings\n", corpus,
	       seeds, found);
	return check_summary();
}
