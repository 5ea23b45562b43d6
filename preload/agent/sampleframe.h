/*
 * sampleframe.h - the SAMPLES frames the agent writes (wire.h): each
 * record drained from the sample ring made a stack node (merged with its
 * native stack under PYPROF_NATIVE), a thread (named) and a label set,
 * batched into SAMPLES frames for the transport; the first samples of a
 * thread not named yet held for its name; what could not be sent counted
 * by reason and sent as LOST frames. Heap records go to heapframe.h.
 *
 * One instance, the agent's. Agent thread, under the agent's lock, after
 * sampleframe_init; sampleframe_after_fork_child in a forked child.
 */
#ifndef PYPROF_SAMPLEFRAME_H
#define PYPROF_SAMPLEFRAME_H

#include <stddef.h>
#include <stdint.h>

struct intern;
struct symbolizer;
struct transport;
struct modules;
struct heapframe;

/* Takes the agent's tables, symbolizer, transport, loaded objects (NULL
 * without native stacks) and heap frames, which outlive it; allocates
 * its buffers. Returns 0, or -1 out of memory (nothing kept). */
int sampleframe_init(struct intern *in, struct symbolizer *sym,
		     struct transport *tr, struct modules *mods,
		     struct heapframe *heap);
void sampleframe_free(void);

/* One record drained from the ring (ring_drain's callback). */
void sampleframe_on_record(const void *payload, size_t len, void *arg);
/* Sends the held samples whose threads have been looked at by the names
 * thread (all with force), oldest first. */
void sampleframe_release_held(int force);
/* Ends the SAMPLES frame under construction and queues it. */
void sampleframe_flush(void);
/* The lost counts (the ring's, closed counters', its own) as LOST frames. */
void sampleframe_put_lost(void);
/* Whether anything was or is still to be sent: a frame being built,
 * samples queued, samples held. */
int sampleframe_pending(void);

struct sampleframe_stats {
	unsigned long n_samples;	    /* queued in SAMPLES frames (weights) */
	uint64_t lost_total;		    /* lost, all reasons                  */
	unsigned long n_native, n_unmerged; /* native stacks, not merged */
};
void sampleframe_stats(struct sampleframe_stats *out);

/* A forked child: the parent's counts and held samples are the parent's. */
void sampleframe_after_fork_child(void);

#endif /* PYPROF_SAMPLEFRAME_H */
