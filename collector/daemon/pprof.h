/*
 * pprof.h - turning processes' aggregates into a pprof profile file.
 *
 * One builder serves every output: a process's own profile when it ends
 * (--output-dir), the merged profile of all processes (--output, --merge),
 * one window of --period, and later the HTTP /debug/pprof/profile
 * answers. It follows Go's CPU-profile conventions (runtime/pprof):
 *
 *   sample_type  [samples/count, cpu/nanoseconds]  (wall/nanoseconds in
 *                wall mode); period_type cpu|wall/nanoseconds; period =
 *                the first process's sampling period
 *   sample       one per aggregate key, values [count, value], locations
 *                leaf first; labels pid, thread_id (numbers), thread_name,
 *                and from the flags cpu_state (wall mode only), gil,
 *                native (strings), opcode (its name in the process's
 *                Python version, PYPROF_OPCODES=1; opcodes.h), and a
 *                string label per pair of the sample's label set
 *                (symtab.h; an empty value points at a second "" in the
 *                string table); a truncated stack gets a root-side
 *                "[truncated]" frame
 *   lost samples one sample per process and reason on a pseudo-frame such
 *                as "[lost: ring full]", labelled with pid
 *   process      with pprof_opts.proc_labels (merged profiles), every
 *   labels       sample also gets process (the process name, comm) and
 *                command (its command line, at most PPROF_MAX_COMMAND
 *                bytes), so that -tagfocus/-tagignore can pick processes
 *   mapping      1, for the first process's executable, with
 *                has_functions/filenames/line_numbers set so that pprof
 *                does not try to symbolize addresses (the Python frames'
 *                locations, address 0); with PYPROF_NATIVE also one per
 *                loaded object's executable segment that a native frame
 *                is in (memory start/limit, file offset, path, build id),
 *                whose locations carry their addresses and, where the
 *                collector found a symbol, a line; has_functions is set
 *                only when every address in it was named, so that pprof
 *                symbolizes the rest itself
 *   time_nanos   earliest process start; duration_nanos up to the latest
 *                sample or BYE; or the window pprof_opts gives
 *   comment      per process: command line, executable, Python version,
 *                mode and rate, and the achieved rate when it differs;
 *                with pprof_opts.one_thread, which thread it holds
 *
 * Heap profiles (pprof_opts.heap), as Go's runtime/pprof writes them:
 *   sample_type  [alloc_objects/count, alloc_space/bytes, inuse_objects/
 *                count, inuse_space/bytes, peak_objects/count,
 *                peak_space/bytes], default_sample_type inuse_space;
 *                period_type space/bytes, period = the first process's
 *                sampling rate in bytes
 *   sample       one per allocating stack (heapagg.h): allocations in
 *                the window, blocks still in use, and blocks in use when
 *                the process's in-use estimate was highest in the window,
 *                unbiased per sample and rounded; labels pid (and process, command as
 *                above) and the allocation's label set; allocations the process could not record on a
 *                "[lost: heap samples]" frame
 *   the rest     as for CPU profiles; processes without heap data are
 *                left out of the samples
 * Several processes: each one's peak values are its own peak's; their sum
 * is the sum of the processes' highs, which may not have happened at the
 * same moment (an upper bound of the simultaneous peak; the pid label
 * tells one process's apart).
 *
 * The caller chooses the processes; they must all have the same mode
 * (the first one's is used). Runs on the collector's loop thread; memory
 * is proportional to the distinct stacks times their depth, and is freed
 * before returning.
 */
#ifndef PYPROF_PPROF_H
#define PYPROF_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct symtab;
struct proc;

/* What the caller may choose; a NULL pprof_opts means all zero. */
struct pprof_opts {
	int proc_labels;	/* label samples with process and command */
	uint64_t start_unix_ns; /* with end_unix_ns > 0: the time range */
	uint64_t end_unix_ns;	/* the profile covers (one window) */
	int want_loc_map;	/* fill pprof_stats.loc_map (timeline.h) */
	int heap;		/* the processes' heap profiles instead (see
				   below); one_thread does not apply */
	int heap_allocs;	/* with heap: alloc_space the default sample
				   type (Go's /debug/pprof/allocs) */
	int one_thread;		/* only the samples of the OS thread tid */
	uint64_t tid;		/* (under every name it had); no lost
				   samples, which belong to no thread */
	int empty_wall;		/* with no process: a wall-time profile
				   (an HTTP window in wall mode) */
	int waits;		/* enum pprof_waits: the block or mutex
				   profile instead of the CPU one */
};

/* Block and mutex profiles (pprof_opts.waits), as Go's runtime/pprof
 * writes them: sample_type [contentions/count, delay/nanoseconds],
 * period_type contentions/count, period 1; one sample per aggregate key
 * of that kind (the records with WIRE_SF_WAIT_BLOCK or _MUTEX, which a
 * CPU profile leaves out), labelled like CPU samples; GIL waits and
 * holds end in the "[GIL]" frame the library put there. */
enum pprof_waits {
	PPROF_WAITS_NONE = 0,
	PPROF_WAITS_BLOCK = 1,
	PPROF_WAITS_MUTEX = 2
};

#define PPROF_MAX_COMMAND 1024

struct pprof_stats {
	uint64_t samples; /* sum of sample counts written */
	uint64_t lost;	  /* sum of lost samples written */
	size_t n_samples; /* Sample messages (distinct stacks + lost) */
	size_t bytes;	  /* gzipped size */
	/* Stacks left out because they refer to what the symtab or the
	 * process does not hold (an unknown node, location, function,
	 * mapping or thread; a location that is neither Python nor native).
	 * The decoder refuses all of these, so this stays 0 unless the
	 * collector has a bug: the builder skips and counts instead of
	 * crashing. */
	size_t n_refused;
	/* With pprof_opts.want_loc_map: symtab location id -> the profile's
	 * Location id (0: not in it), n_loc_map entries, malloc'd, the
	 * caller frees it; and the profile's time_nanos. */
	uint32_t *loc_map;
	size_t n_loc_map;
	int64_t time_nanos;
};

/* Builds the gzipped profile of procs[0..n) whose ids refer to st; with
 * n == 0, a CPU profile without samples. opts may be NULL. On success *out
 * is a malloc'd buffer of *out_len bytes that the caller frees. stats may
 * be NULL. 0 or -ENOMEM (or -EIO if zlib fails). */
int pprof_build(const struct symtab *st, const struct proc *const *procs,
		size_t n, const struct pprof_opts *opts, void **out,
		size_t *out_len, struct pprof_stats *stats);

/* pprof_build, then file_write_atomic(path, how) (fileio.h). 0 or a
 * negative errno; -EEXIST only with FILEIO_NOREPLACE. */
/* 1 if procs[0..n) hold any record of kind (enum pprof_waits). */
int pprof_has_waits(const struct proc *const *procs, size_t n, int kind);

int pprof_write(const struct symtab *st, const struct proc *const *procs,
		size_t n, const struct pprof_opts *opts, const char *path,
		int how, struct pprof_stats *stats);

#endif /* PYPROF_PPROF_H */
