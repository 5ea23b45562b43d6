/*
 * heapagg.h - one process's heap profile: what its sampled allocations add
 * up to (per stack and label set), and which sampled blocks are still in
 * use.
 *
 * proc.c feeds it from HEAP frames (wire.h): heapagg_alloc for each ALLOC,
 * heapagg_release for each FREE, heapagg_lost for LOST. pprof.c reads it with
 * heapagg_rows when it builds a heap profile. Values are unbiased per sample
 * as Go's runtime/pprof does: an allocation of S bytes sampled at rate R
 * stands for 1/(1 - exp(-S/R)) allocations of S bytes (heapagg_scale); rate
 * 1 or less means every allocation was recorded (scale 1).
 *
 * Windows (--period): heapagg_window_reset forgets the allocation sums (each
 * window's alloc_* values cover that window) but keeps the blocks in use:
 * in-use is a state, not a flow.
 *
 * The peak: what was in use, per stack, when the window's in-use estimate
 * (the sum of the unbiased bytes of the blocks in use, as the rows' inuse
 * values) was highest; the rows' peak values. It is copied from the blocks
 * in use only when the estimate passes the last copy by more than
 * 1/2^HEAPAGG_PEAK_SLACK_SHIFT, so its total is at most that fraction
 * below the true high (heapagg_window_peak, kept exactly, with its time).
 * A window starts with what is in use at its start. One process's peak:
 * the peaks of several processes happen at different moments (pprof.h
 * says what a profile of several shows).
 *
 * Memory: one 32-byte entry per sampled block in use (at the default rate
 * a process holding 1 GiB has about 2,000), one 24-byte entry per
 * allocating stack in the window and one per stack in use at the peak. Blocks in use are capped at
 * HEAPAGG_LIVE_MAX per process (a table of at most 64 MiB): a client that
 * never frees, or sends ALLOC records without end, cannot grow it further;
 * allocations beyond the cap are counted as lost (the lost row), as the
 * library counts those it cannot record.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_HEAPAGG_H
#define PYPROF_HEAPAGG_H

#include <stddef.h>
#include <stdint.h>

struct heapagg;

/* One stack's values under one label set, unbiased. */
struct heapagg_row {
	uint32_t node;	 /* 0 for the lost row */
	uint32_t labels; /* label set id (symtab.h), 0: none */
	double alloc_objects, alloc_bytes;
	double inuse_objects, inuse_bytes;
	double peak_objects, peak_bytes; /* in use at the window's peak */
};

/* A high of the in-use estimate: bytes (unbiased), and when
 * (heapagg_set_now's clock; 0 if none was set); zeros: none. */
struct heapagg_peak {
	uint64_t bytes;
	uint64_t unix_ns;
};

/* The peak table is copied again when the estimate passes the last copy
 * by more than 1/2^HEAPAGG_PEAK_SLACK_SHIFT (1/64: the collector's cost
 * measured in docs/heap.md). */
#define HEAPAGG_PEAK_SLACK_SHIFT 6

struct heapagg *heapagg_new(void);
void heapagg_free(struct heapagg *h);

/* The number of allocations of size bytes one sample stands for. */
double heapagg_scale(uint64_t size, uint64_t rate);

#define HEAPAGG_LIVE_MAX (1u << 20)

/* A sampled allocation of size bytes at addr by stack node under label
 * set labels (0: none), at rate. A
 * block already in use at addr was freed without our hearing of it: it is
 * dropped first. 0; 1 when HEAPAGG_LIVE_MAX blocks are in use already: the
 * allocation is counted as lost instead (heapagg_n_over says how many so
 * far); or -ENOMEM (nothing changed). */
int heapagg_alloc(struct heapagg *h, uint64_t rate, uint32_t node,
		  uint32_t labels, uint64_t size, uint64_t addr);

/* The block at addr was freed; an address not in use is ignored (a block
 * from before this collector heard of the process). */
void heapagg_release(struct heapagg *h, uint64_t addr);

/* n sampled allocations of bytes in all that the process could not
 * record. */
void heapagg_lost(struct heapagg *h, uint64_t rate, uint64_t n, uint64_t bytes);

/* Whether there is anything to write: allocations in the window, blocks
 * in use, blocks in use at its peak, or lost ones. */
int heapagg_has_data(const struct heapagg *h);

/* The last rate heard. */
uint64_t heapagg_rate_of(const struct heapagg *h);

/* Blocks in use, and the sum of their sizes (sampled, not unbiased). */
size_t heapagg_n_live(const struct heapagg *h);

/* Allocations counted as lost because the table was full, ever. */
uint64_t heapagg_n_over(const struct heapagg *h);

/* Forgets the window's allocation sums and lost counts; the new window's
 * peak is what is in use now (copied: one pass over the blocks in use). */
void heapagg_window_reset(struct heapagg *h);

/* The time the records applied next happened at (the collector's clock
 * when their frame came: a high's time in heapagg_window_peak). */
void heapagg_set_now(struct heapagg *h, uint64_t unix_ns);

/* The in-use estimate now: the sum over blocks in use of their unbiased
 * bytes, each rounded to an integer. */
uint64_t heapagg_inuse_est(const struct heapagg *h);

/* The highest in-use estimate of the window (since the last
 * heapagg_window_reset), and of the table's life. */
struct heapagg_peak heapagg_window_peak(const struct heapagg *h);
struct heapagg_peak heapagg_life_peak(const struct heapagg *h);

/* The rows of the profile, one per (stack, label set) with allocations in
 * the window, blocks in use or some at the window's peak, sorted by node and then label set, into *rows (malloc'd; the caller
 * frees it), and the lost allocations in *lost (node 0; zero values if
 * none). 0 or -ENOMEM. */
int heapagg_rows(const struct heapagg *h, struct heapagg_row **rows, size_t *n,
		 struct heapagg_row *lost);

/* Symtab compaction: calls fn(arg, node, labels) for every key held, and
 * replaces every node with map_node(arg, node) and every label set but 0
 * with map_labels(arg, labels). */
void heapagg_each_key(const struct heapagg *h,
		      void (*fn)(void *arg, uint32_t node, uint32_t labels),
		      void *arg);
void heapagg_renumber(struct heapagg *h,
		      uint32_t (*map_node)(const void *arg, uint32_t node),
		      uint32_t (*map_labels)(const void *arg, uint32_t labels),
		      const void *arg);

#endif /* PYPROF_HEAPAGG_H */
