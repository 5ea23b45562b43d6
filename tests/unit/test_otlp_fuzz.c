/*
 * test_otlp_fuzz.c - replays the OTLP fuzzer's inputs through its harness
 * (tests/fuzz/otlp_fuzz.c, included here): the kept corpus
 * (tests/fuzz/corpus/otlp/), the hand-written seeds (tests/fuzz/otlp_seeds/:
 * spooled windows, profiles, queries and receiver answers) and every
 * finding (tests/fuzz/otlp_found/). Each must
 * go through the spool reader, the OTLP converter and the answer
 * callbacks with the harness's invariants holding.
 */
#include "check.h"

#define FUZZ_REPLAY /* the harness without its libFuzzer entry point */
#include "../fuzz/otlp_fuzz.c"
#include "fuzz_replay.h"

int main(void)
{
	int corpus, seeds, found;

	log_set_level(LOG_ERROR); /* the refusals are expected */
	corpus = fuzz_replay_dir("tests/fuzz/corpus/otlp", otlp_fuzz_one, 1);
	found = fuzz_replay_dir("tests/fuzz/otlp_found", otlp_fuzz_one, 0);
	seeds = fuzz_replay_dir("tests/fuzz/otlp_seeds", otlp_fuzz_one, 1);
	CHECK(corpus >= 1 && seeds >= 9, "1.1 the corpus and seeds replayed");
	printf("replayed %d corpus inputs, %d seeds, %d findings\n", corpus,
	       seeds, found);
	return check_summary();
}
