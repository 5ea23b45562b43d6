/*
 * test_config_fuzz.c - replays the configuration fuzzer's inputs through
 * its harness (tests/fuzz/config_fuzz.c, included here): the kept corpus
 * (tests/fuzz/corpus/config/), the hand-written seeds
 * (tests/fuzz/config_seeds/: pyprof-collector --config files and PYPROF_*
 * variables) and every finding (tests/fuzz/config_found/).
 * Each must be read with the harness's invariants holding.
 */
#include "check.h"

#define FUZZ_REPLAY /* the harness without its libFuzzer entry point */
#include "../fuzz/config_fuzz.c"
#include "fuzz_replay.h"

int main(void)
{
	int corpus, seeds, found;

	corpus = fuzz_replay_dir("tests/fuzz/corpus/config", config_fuzz_one,
				 1);
	found = fuzz_replay_dir("tests/fuzz/config_found", config_fuzz_one, 0);
	seeds = fuzz_replay_dir("tests/fuzz/config_seeds", config_fuzz_one, 1);
	CHECK(corpus >= 1 && seeds >= 9, "1.1 the corpus and seeds replayed");
	printf("replayed %d corpus inputs, %d seeds, %d findings\n", corpus,
	       seeds, found);
	return check_summary();
}
