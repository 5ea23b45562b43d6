/*
 * malloc_loop.c - the cost of libpyprof.so's malloc and free in a process
 * that is not Python (make bench, section 7): the library interposes the
 * malloc family in every process it is loaded into, and there (as with
 * heap profiling off) each call must be glibc's plus one predictable
 * branch. Times N malloc+free pairs of mixed small sizes and prints the
 * nanoseconds per pair; the benchmark runs it with and without the
 * library preloaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	void *keep[64] = { 0 };
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++) {
		unsigned k = (unsigned)i & 63;
		free(keep[k]);
		keep[k] = malloc(16 + (size_t)(i % 200));
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	printf("%.3f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 +
			  (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
