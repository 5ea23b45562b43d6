/*
 * config.h - the library's settings, read once from PYPROF_* variables.
 *
 * Parsed by the constructor (init.c) before anything else runs; read-only
 * afterwards, so every thread and the signal handler may read it freely.
 */
#ifndef PYPROF_CONFIG_H
#define PYPROF_CONFIG_H

#include <sys/un.h>

enum config_mode { CONFIG_MODE_CPU = 0,
		   CONFIG_MODE_WALL = 1 };

/* What samples a thread in CPU mode: auto picks CPU timers up to the
 * kernel tick (250 Hz), past it the threads' CPU clocks read from the
 * library's own thread (cpuclock.h), or perf_event counters when native
 * stacks are on (they need the interrupted thread's registers). */
enum config_source {
	CONFIG_SOURCE_AUTO = 0,
	CONFIG_SOURCE_TIMER = 1,
	CONFIG_SOURCE_PERF = 2,
	CONFIG_SOURCE_CLOCK = 3
};

/* PYPROF_NATIVE: native stacks merged with the Python ones (CPU mode).
 * ALL keeps every interpreter-internal frame (for interpreter developers);
 * ON folds those between Python frames (native.h has the rule). */
enum config_native {
	CONFIG_NATIVE_OFF = 0,
	CONFIG_NATIVE_ON = 1,
	CONFIG_NATIVE_ALL = 2
};

struct config {
	int disabled;		      /* PYPROF_DISABLE set: stay inert               */
	int hz;			      /* PYPROF_HZ, 1..PYPROF_MAX_HZ                  */
	int mode;		      /* PYPROF_MODE, enum config_mode                */
	int max_depth;		      /* PYPROF_MAX_DEPTH, 1..PYPROF_MAX_MAX_DEPTH    */
	int log_level;		      /* PYPROF_LOG, enum plog_level                  */
	int cpu_source;		      /* PYPROF_CPU_SOURCE, enum config_source        */
	int children;		      /* PYPROF_CHILDREN: follow forked children      */
	int asyncio;		      /* PYPROF_ASYNCIO: the asyncio view (wall mode) */
	int opcodes;		      /* PYPROF_OPCODES: record the leaf's opcode     */
	int native;		      /* PYPROF_NATIVE, enum config_native            */
	int start;		      /* PYPROF_START: sample from the start (1), or
	                     stay dormant until asked (0; control.h)       */
	int toggle_sig;		      /* PYPROF_TOGGLE_SIGNAL: signal number, 0 none  */
	unsigned long long heap_rate; /* PYPROF_HEAP_RATE bytes, 0 = off  */
	int heap_snapshot_s;	      /* PYPROF_HEAP_SNAPSHOT_SECONDS, 0 = none    */
	unsigned long long waits_ns;  /* PYPROF_WAITS: the block and mutex
	                     profiles' rate in ns (waits.h), 0 = off       */
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	long collector_uid; /* PYPROF_COLLECTOR_USER: a uid whose collector
	                       is trusted besides ours and root's; -1 none */
};

/*
 * Fills *c from the variables get(name, arg) returns (NULL: not set).
 * Returns 0, or -EINVAL with one line in err (no newline; cut to err_len)
 * naming the first bad variable, its value and what it accepts. Pure: the
 * library's constructor and `pyprof record` share it.
 */
#include <stddef.h>
int config_check(struct config *c,
		 const char *(*get)(const char *name, void *arg), void *arg,
		 char *err, size_t err_len);

/*
 * Fills *c from the environment. Returns 0, or -EINVAL after printing
 * config_check's line on stderr, whatever the log level (the caller then
 * stays inert). Constructor only: uses getenv. In init.c.
 */
int config_load(struct config *c);

/* Parses a decimal integer in [lo, hi]; 0 or -EINVAL. Exposed for tests. */
int config_parse_int(const char *s, long lo, long hi, long *out);

#endif /* PYPROF_CONFIG_H */
