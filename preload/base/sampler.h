/*
 * sampler.h - the state shared by the signal handler, the frame walker and
 * the agent, and the layout of one raw sample in the ring.
 *
 * Written by the constructor and the agent before sampling starts (abi,
 * function pointers, max_depth, period); afterwards only `active` changes
 * (agent thread, atomically) and the counters grow (relaxed atomics). The
 * handler reads everything else without synchronization: it was published
 * before the first timer was armed (timer_create is a system call, which
 * orders it).
 */
#ifndef PYPROF_SAMPLER_H
#define PYPROF_SAMPLER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pyprof/pyabi.h"
#include "pyprof/walk.h"
#include "ring.h"

/* struct raw_frame, RAW_NOT_STARTED, RAW_ENTRY, raw_code() and
 * sampler_fp(): pyprof/walk.h, shared with pyprof, which runs the same
 * walker on another process's memory. */

/* Native frames kept per sample (PYPROF_NATIVE): deeper native stacks lose
 * their root side (SAMPLE_NATIVE_TRUNCATED). */
#define SAMPLER_NATIVE_MAX 512
/* Frames of our own the unwinder reports before the interrupted one (the
 * handler, the signal trampoline): room for them in the record. */
#define SAMPLER_NATIVE_SKIP 16

enum sample_flag {
	SAMPLE_TRUNCATED = 1 << 0, /* more frames than max_depth             */
	SAMPLE_FAULT = 1 << 1,	   /* a guarded read faulted; no frames      */
	SAMPLE_NO_TSTATE = 1 << 2, /* thread has no Python thread state      */
	SAMPLE_INVALID = 1 << 3,   /* frame chain failed validation          */
	SAMPLE_OFF_CPU = 1 << 4,   /* wall mode: thread was not running      */
	SAMPLE_GIL = 1 << 5,	   /* thread held the GIL                    */
	SAMPLE_GIL_KNOWN = 1 << 6, /* SAMPLE_GIL is meaningful               */
	SAMPLE_NATIVE = 1 << 7,	   /* interrupted outside the interpreter    */
	SAMPLE_NATIVE_KNOWN = 1 << 8,
	SAMPLE_NATIVE_FAILED = 1 << 9,	   /* native stack asked for, not taken:
	                                     thread not prepared, or the
	                                     interrupted PC was not found    */
	SAMPLE_NATIVE_TRUNCATED = 1 << 10, /* native stack deeper than
	                                     SAMPLER_NATIVE_MAX: root cut    */
	SAMPLE_HEAP = 1 << 11,		   /* a sampled allocation (heap.h):
	                               heap_addr, heap_size, and the rate
	                               it was sampled at in value_ns      */
	SAMPLE_HEAP_FREE = 1 << 12,	   /* a sampled block freed: heap_addr
	                               only, no frames                    */
	SAMPLE_HEAP_NO_PY = 1 << 13,	   /* SAMPLE_HEAP while the interpreter
	                               was not running (start-up, exit)   */
	SAMPLE_WAIT = 1 << 15,		   /* a wait (waits.h): the kind in wait,
	                               count in weight, ns in value_ns    */
	SAMPLE_CUT = 1 << 14		   /* the walk ended at a frame that is not
	                               its thread's first (a generator's whose
	                               caller link was cleared under a walk
	                               from another thread; signal/sig_frames.c);
	                               also SAMPLE_TRUNCATED                */
};

_Static_assert(SAMPLE_TRUNCATED == WALK_TRUNCATED &&
		       SAMPLE_INVALID == WALK_INVALID && SAMPLE_CUT == WALK_CUT,
	       "pyprof/walk.h's flags are the samples' own");

/* What a CPU sample's time was spent on (raw_sample.cpu_kind; the
 * collector's label time=python|native|system, docs/reading.md). */
enum sample_cpu_kind {
	SAMPLE_CPU_UNKNOWN = 0,
	SAMPLE_CPU_PYTHON = 1, /* the interpreter: bytecode, and its own C
	                          serving an instruction that is no call  */
	SAMPLE_CPU_NATIVE = 2, /* C called from Python: the program counter
	                          outside the interpreter, or the leaf frame
	                          inside a call instruction (a builtin's C) */
	SAMPLE_CPU_SYSTEM = 3  /* the kernel, on the thread's behalf       */
};

/* A raw sample in the ring; n_frames raw_frames follow, leaf first, then
 * n_native native program counters (uint64_t), leaf first: the first is
 * the interrupted PC itself, the others are return addresses; then
 * n_labels bytes of the labels in force (labels.h); then n_task bytes of
 * an asyncio task's name (asyncio.h). */
struct raw_sample {
	uint64_t time_ns;  /* CLOCK_MONOTONIC                            */
	uint64_t value_ns; /* time this sample stands for                 */
	uint64_t tstate;   /* PyThreadState address, 0 if none            */
	uint32_t tid;	   /* OS thread id                                */
	uint32_t weight;   /* periods this sample stands for (1+overrun)  */
	uint16_t n_frames;
	uint16_t flags;	    /* enum sample_flag                            */
	uint32_t opcode;    /* 1 + the leaf's opcode byte, 0 if not read  */
	uint16_t n_native;  /* native PCs after the frames (PYPROF_NATIVE) */
	uint16_t n_labels;  /* bytes of encoded labels after the native PCs
	                      (labels.h), 0 if none                       */
	uint16_t n_task;    /* bytes of the asyncio task's name after the
	                      labels (asyncio.h), 0 if none               */
	uint8_t wait;	    /* SAMPLE_WAIT: enum waits_kind                */
	uint8_t cpu_kind;   /* CPU samples: enum sample_cpu_kind           */
	uint64_t heap_addr; /* SAMPLE_HEAP, SAMPLE_HEAP_FREE: the block    */
	uint64_t heap_size; /* SAMPLE_HEAP: its size in bytes              */
};

static inline const uint64_t *raw_native(const struct raw_sample *s)
{
	return (const uint64_t *)((const struct raw_frame *)(s + 1) +
				  s->n_frames);
}

static inline const uint8_t *raw_labels(const struct raw_sample *s)
{
	return (const uint8_t *)(raw_native(s) + s->n_native);
}

static inline const uint8_t *raw_task(const struct raw_sample *s)
{
	return raw_labels(s) + s->n_labels;
}

/* The bytes of record s, labels and task name included. */
static inline size_t raw_size(const struct raw_sample *s)
{
	return sizeof *s + s->n_frames * sizeof(struct raw_frame) +
	       s->n_native * sizeof(uint64_t) + s->n_labels + s->n_task;
}

#define SAMPLER_HIST_N 1024
#define SAMPLER_TID_SLOTS 4096
#define SAMPLER_HIST_NS 100

/*
 * One thread's perf samples as its handler saw them, for the CPU-clock
 * sampler's system mode. A counter overflows at every period of the
 * thread's CPU time (a fixed grid of its clock) and signals only those
 * that end in user mode: the grid points its clock passed with no signal
 * ended in the kernel. Whoever sees such a point first charges it as
 * system time, where the thread is then: the handler at the thread's
 * next sample (the points between its last mark and now), or the
 * sampler thread at a tick that finds the thread running (the points
 * since the mark), whichever comes first. The handler writes mark_ns
 * (seq odd while it writes) and starts a new generation of ahead; the
 * sampler thread adds the points it charged past the mark to ahead by a
 * compare-and-swap that fails if a sample came meanwhile; the handler
 * takes those out of what it charges.
 */
struct sampler_kslot {
	unsigned seq;
	int tid;
	unsigned gen;	  /* sampler.cpu_gen when it was set up       */
	uint64_t mark_ns; /* the thread's clock at its latest sample  */
	/* mark generation << 32 | points past the mark the sampler thread
	 * charged already */
	uint64_t ahead;
};

struct sampler {
	const struct pyabi *abi;
	struct ring ring;
	int max_depth;
	uint64_t period_ns;
	void *(*interp_head)(void);  /* PyInterpreterState_Head     */
	int (*is_initialized)(void); /* Py_IsInitialized            */
	uintptr_t code_type;	     /* &PyCode_Type                */
	/* &PyUnicode_Type (2.7: &PyString_Type) or 0 */
	uintptr_t str_type;
	uintptr_t runtime;	  /* &_PyRuntime (3.7+) or 0     */
	uintptr_t cur_tstate_sym; /* &_PyThreadState_Current
	                                   (2.7, 3.6) or 0             */
	int active;		  /* handler may sample (atomic) */
	int owner_pid;		  /* the process this state is
	                                   for: a vfork child, which
	                                   shares our memory, has
	                                   another pid and must leave
	                                   it alone (interpose/)       */
	int opcodes;		  /* read the leaf's opcode      */
	/* perf counters: bumped at each start of CPU sampling (and in a
	 * fork child), so that a thread's CPU-clock mark of an earlier run
	 * (sig_handler.c's system time) is not taken for this one's */
	unsigned cpu_gen;
	/* perf counters beside the CPU-clock sampler's system mode
	 * (cpuclock.h): each thread's handler keeps its slot of kslots
	 * (tid % SAMPLER_TID_SLOTS), the sampler thread reads it and
	 * charges the thread's periods that ended in the kernel as system
	 * time; 0: the handler charges them itself (perf_system_periods) */
	int sysclock;
	struct sampler_kslot kslots[SAMPLER_TID_SLOTS];
	int native; /* enum config_native: capture
	                                   native stacks (CPU mode)    */
	/* libunwind's unw_backtrace, dlopen'd by native_init when asked */
	int (*unw_backtrace)(void **buf, int n);

	/* counters, relaxed atomics */
	unsigned long n_signals;   /* our SIGPROFs received, taken
	                                   or not (a dormant process
	                                   must have none: control.h)  */
	unsigned long n_samples;   /* records committed           */
	unsigned long n_lost_ring; /* samples (weights) lost: full */
	unsigned long n_cut;	   /* stacks still cut after the
	                                   walk's tries (SAMPLE_CUT)   */
	unsigned long n_handler_runs;
	unsigned long n_periods; /* timer periods those runs
	                                   stood for (their weights:
	                                   1 + overruns)               */
	unsigned long n_handler_ns;
	unsigned long n_native_tables;	  /* native stacks from cfi.h's
	                                   tables                      */
	unsigned long n_native_libunwind; /* ... from unw_backtrace    */
	/* fork vs libunwind (native_fork_prepare): handlers inside
	 * unw_backtrace, and whether a fork is about to happen (atomics) */
	int in_libunwind;
	int forking;
	/* handler time histogram: SAMPLER_HIST_NS-wide buckets, last one
	 * open-ended (medians for the benchmarks: means are noisy in VMs) */
	unsigned long hist[SAMPLER_HIST_N];
};

extern struct sampler sampler;

/* This thread may unwind its native stack in the handler: libunwind's
 * thread-locals exist (native_prepare_thread set it, outside any signal).
 * Initial-exec TLS. */
extern __thread int sampler_native_ready;

/* The q-quantile (0..1) of handler times in ns, from the histogram. */
unsigned long sampler_handler_quantile(double q);

#endif /* PYPROF_SAMPLER_H */
