/*
 * sampler.c - the state shared by the signal handlers, the agent thread
 * and the constructor (sampler.h), and what reads it whole.
 *
 * Contexts: the variables are read in signal context (sig_handler.c,
 * sig_heap.c, signal/sig_frames.c) and written by the constructor and the agent
 * thread; sampler_handler_quantile runs on the agent thread.
 */
#include "sampler.h"

struct sampler sampler;

__thread int sampler_native_ready;

unsigned long sampler_handler_quantile(double q)
{
	unsigned long total = 0, seen = 0;
	for (int i = 0; i < SAMPLER_HIST_N; i++)
		total += __atomic_load_n(&sampler.hist[i], __ATOMIC_RELAXED);
	for (int i = 0; i < SAMPLER_HIST_N; i++) {
		seen += __atomic_load_n(&sampler.hist[i], __ATOMIC_RELAXED);
		if (total && (double)seen >= q * (double)total)
			return (unsigned long)i * SAMPLER_HIST_NS +
			       SAMPLER_HIST_NS / 2;
	}
	return 0;
}
