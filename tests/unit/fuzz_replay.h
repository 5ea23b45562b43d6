/*
 * fuzz_replay.h - replaying a fuzzer's inputs in a unit test: every file
 * of a directory of the source tree (a kept corpus, tests/fuzz/corpus/
 * NAME/, its seeds, or its findings, tests/fuzz/NAME_found/) through the
 * harness's run-one function, which the test gets by including the
 * harness (tests/fuzz/NAME_fuzz.c) with FUZZ_REPLAY defined. Each input
 * must run with no invariant broken; under `make asan` the sanitizers
 * watch the same replay.
 *
 * Include after check.h, in one file per test binary.
 */
#ifndef PYPROF_FUZZ_REPLAY_H
#define PYPROF_FUZZ_REPLAY_H

#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef const char *fuzz_one_fn(const uint8_t *data, size_t size);

/* rel (a directory under the source tree) as a path, from where the
 * test binary is: build/tests/test_X -> the tree. */
static void fuzz_replay_path(const char *rel, char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = 0;
	snprintf(out, cap, "%s/../../%s", dirname(exe), rel);
}

/* Runs every file of rel (README.md aside) through one; the number of
 * inputs replayed. A missing directory is a failure when must_exist. */
static int fuzz_replay_dir(const char *rel, fuzz_one_fn *one, int must_exist)
{
	static uint8_t buf[1 << 20];
	char dir[PATH_MAX + 128], path[PATH_MAX + 400], what[PATH_MAX + 600];
	struct dirent *e;
	DIR *d;
	int n = 0;

	fuzz_replay_path(rel, dir, sizeof(dir));
	if (!(d = opendir(dir))) {
		if (must_exist)
			CHECK(d != NULL, rel);
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		const char *why = one(buf, len);
		snprintf(what, sizeof(what), "%s/%s: %s", rel, e->d_name,
			 why ? why : "");
		CHECK(why == NULL, what);
		n++;
	}
	closedir(d);
	return n;
}

#endif /* PYPROF_FUZZ_REPLAY_H */
