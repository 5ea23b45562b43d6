/*
 * test_wire_fuzz.c - replays the wire fuzzer's inputs through its harness
 * (tests/fuzz/wire_fuzz.c, included here): the malformed-stream fixtures
 * (tests/data/wire/), the valid seeds (tests/fuzz/wire_seeds/) and every
 * finding the fuzzer saved (tests/fuzz/wire_found/: inputs that once
 * crashed the collector or broke an invariant, kept as regression
 * inputs). Each must go through the real decoder, aggregation, symtab
 * compaction and pprof builder without a crash and with the harness's
 * invariants holding; so must the kept corpus (tests/fuzz/corpus/wire/,
 * what `make fuzz` found that adds coverage). Under `make asan` / `make
 * ubsan` builds the sanitizers watch the same replay.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define WIRE_FUZZ_NO_MUTATOR /* libFuzzer's part, not linked here */
#include "../fuzz/wire_fuzz.c"

static int replay_dir(const char *dir, int must_exist)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	char path[PATH_MAX + 300], what[PATH_MAX + 400];
	static uint8_t buf[1 << 20];

	if (!d) {
		if (must_exist)
			CHECK(d != NULL, "1.1 the input directory is there");
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md") ||
		    !strcmp(e->d_name, "expect.tsv"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		const char *why = wire_fuzz_one(buf, len);
		snprintf(what, sizeof(what), "1.2 %s: %s", path,
			 why ? why : "");
		CHECK(why == NULL, what);
		n++;
	}
	closedir(d);
	return n;
}

int main(void)
{
	char exe[PATH_MAX], root[PATH_MAX + 64], dir[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fixtures, seeds, found, corpus;

	log_set_level(LOG_ERROR); /* the rejections are expected */
	CHECK_OR_RETURN(n > 0, "1.0 /proc/self/exe", check_summary());
	exe[n] = 0;
	/* build/tests/test_wire_fuzz -> the source tree */
	snprintf(root, sizeof(root), "%s/../..", dirname(exe));
	snprintf(dir, sizeof(dir), "%s/tests/data/wire", root);
	fixtures = replay_dir(dir, 1);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/wire_seeds", root);
	seeds = replay_dir(dir, 1);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/wire_found", root);
	found = replay_dir(dir, 0);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/wire", root);
	corpus = replay_dir(dir, 1);
	CHECK(fixtures >= 30 && seeds >= 6,
	      "1.3 every fixture and seed replayed");
	printf("replayed %d fixtures, %d seeds, %d corpus inputs, %d findings\n",
	       fixtures, seeds, corpus, found);
	return check_summary();
}
