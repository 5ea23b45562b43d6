/*
 * made_python.c - a "python3.14" of a user's own making, for
 * tests/e2e/hostile.bats: what runs it is written down.
 *
 * With --target it is the process looked at: prints "ready" and sleeps
 * SECONDS (argv[2]). Run any other way (as `pyprof attach` and `dump`
 * used to run the target's program, with -E -S -c CODE), it appends who
 * ran it and how to the file named at build time (-DRAN_LOG="path"),
 * answers like a 3.14 interpreter would ("3 14 0") and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	FILE *f;

	if (argc > 2 && strcmp(argv[1], "--target") == 0) {
		puts("ready");
		fflush(stdout);
		sleep((unsigned)atoi(argv[2]));
		return 0;
	}
	f = fopen(RAN_LOG, "a");
	if (f) {
		fprintf(f, "ran by uid %u:", (unsigned)geteuid());
		for (int i = 1; i < argc; i++)
			fprintf(f, " %.40s", argv[i]);
		fputc('\n', f);
		fclose(f);
	}
	fputs("3 14 0", stdout);
	return 0;
}
