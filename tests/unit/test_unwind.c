/*
 * test_unwind.c - the handler's own unwinder (preload/native/cfi.h,
 * preload/signal/sig_unwind.c) against libunwind, the reference, on the
 * same interrupted stacks.
 *
 * A SIGPROF handler unwinds each sample twice: from the ucontext over the
 * tables cfi_refresh built from this process's .eh_frame, and with
 * libunwind's unw_backtrace (dropping the handler's own frames up to the
 * interrupted PC, as the library does). The program meanwhile runs code
 * of several kinds: our own recursion, libz's deflate (stripped Debian
 * library), qsort calling back into us (libc), memcpy/memset (libc's
 * assembly), libm. Where the tables give an answer, it must be libunwind's
 * PC for PC; they must give one for nearly every sample; and the
 * hand-made rows check the CFI decoding itself.
 */
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <zlib.h>

#include "native/cfi.h"
#include "check.h"
#include "signal/sig_unwind.h"

#define MAXF 256

static int (*bt)(void **, int);
static volatile unsigned long n_samples, n_ours, n_same, n_diff, n_fallback;
static volatile int first_diff_logged;

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	const ucontext_t *uc = ucv;
	uint64_t ours[MAXF];
	void *ref[MAXF + 16];
	int trunc;
	int n = cfi_unwind_sigsafe(uc, ours, MAXF, &trunc);
	int got = bt(ref, MAXF + 16);
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	int i = 0;
	while (i < got && (uint64_t)ref[i] != pc)
		i++;
	n_samples++;
	if (n < 0) {
		n_fallback++;
		return;
	}
	n_ours++;
	int m = got - i;
	int same = i < got && m == n;
	for (int k = 0; same && k < n; k++)
		same = ours[k] == (uint64_t)ref[i + k];
	if (same) {
		n_same++;
	} else {
		n_diff++;
		if (!first_diff_logged) {
			first_diff_logged = 1;
			fprintf(stderr, "first difference: ours %d frames, "
					"libunwind %d\n",
				n, m);
			for (int k = 0; k < n || k < m; k++)
				fprintf(stderr, "  %2d %#18lx %#18lx\n", k,
					k < n ? (unsigned long)ours[k] : 0ul,
					k < m ? (unsigned long)ref[i + k] : 0ul);
		}
	}
}

static volatile unsigned long sink;

__attribute__((noinline)) static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	sink += x & 1;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void work(int depth)
{
	if (depth > 0) {
		work(depth - 1);
		sink++;
		return;
	}
	static unsigned char src[1 << 18], dst[1 << 19];
	static unsigned v[50000];
	for (size_t k = 0; k < sizeof(src); k++)
		src[k] = (unsigned char)((k * 7) ^ (k >> 5));
	uLongf dl = sizeof(dst);
	compress2(dst, &dl, src, sizeof(src), 9);
	for (unsigned k = 0; k < 50000; k++)
		v[k] = k * 2654435761u;
	qsort(v, 50000, sizeof(v[0]), cmp);
	for (int k = 0; k < 200; k++) {
		memcpy(dst, src, sizeof(src));
		memset(src, k, sizeof(src));
	}
	double acc = 0;
	for (int k = 1; k < 200000; k++)
		acc += sin(k) * log(k);
	sink += (unsigned long)acc;
}

static void test_against_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	bt = h ? (int (*)(void **, int))dlsym(h, "unw_backtrace") : NULL;
	CHECK_OR_RETURN(bt != NULL, "1.0 libunwind.so.8 (libunwind8)", );
	void *warm[4];
	bt(warm, 4);
	cfi_refresh();
	unsigned long rows, objs, none;
	cfi_stats(&rows, &objs, &none);
	CHECK(objs >= 3 && rows > 1000,
	      "1.1 tables for the program, libc, libz, libm...");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 4000 }, { 0, 4000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		work(5);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L +
			 (t.tv_nsec - t0.tv_nsec) <
		 2500000000L);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);

	printf("  %lu samples: %lu from the tables (%lu as libunwind, %lu "
	       "not), %lu left to libunwind; %lu objects, %lu rows (%lu "
	       "NONE)\n",
	       n_samples, n_ours, n_same, n_diff, n_fallback, objs, rows,
	       none);
	CHECK(n_samples >= 100, "1.2 enough samples");
	CHECK(n_ours >= n_samples * 95 / 100,
	      "1.3 the tables unwind at least 95% of the samples");
	CHECK(n_diff <= n_ours / 100,
	      "1.4 where they do, libunwind agrees (99%), PC for PC");
}

/* The rows' encoding and lookup on a table made by hand. */
static void test_rules(void)
{
	CHECK(CFI_KIND(CFI_RULE(CFI_RBP, 16, 2)) == CFI_RBP &&
		      CFI_OFF(CFI_RULE(CFI_RBP, 16, 2)) == 16 &&
		      CFI_RBP_SLOT(CFI_RULE(CFI_RBP, 16, 2)) == 2,
	      "2.1 rule fields round-trip");
	CHECK(CFI_OFF(CFI_RULE(CFI_RSP, 0xfffff, 1023)) == 0xfffff &&
		      CFI_RBP_SLOT(CFI_RULE(CFI_RSP, 0xfffff, 1023)) == 1023,
	      "2.2 widest offset and slot");
	/* this very function's entry must have the CIE's rule: CFA =
	 * RSP + 8, return address at CFA - 8, RBP untouched */
	uint32_t r = cfi_lookup((uint64_t)(uintptr_t)&test_rules);
	CHECK(r == CFI_RULE(CFI_RSP, 8, 0),
	      "2.3 a function's first instruction: CFA = RSP + 8");
	CHECK(cfi_lookup(8) == CFI_NONE, "2.4 an address of no object: NONE");
}

int main(void)
{
	test_against_libunwind();
	test_rules();
	return check_summary();
}
