/*
 * remote.h - a running CPython process read from outside: its memory, and
 * where its interpreter is, found without running anything of its.
 *
 * `pyprof attach`, `dump` and `top --pid` look at processes of other
 * users, often as root. Nothing the target chose may run with our rights:
 * not its program (/proc/PID/exe), not a module from its directories. So
 * the interpreter is found by reading: the files it mapped (/proc/PID/
 * maps, each opened as the very file mapped, /proc/PID/map_files/...)
 * hold _PyRuntime (a symbol, or 3.12+'s .PyRuntime section), and on 3.13+
 * _PyRuntime starts with _Py_DebugOffsets, CPython's own statement of its
 * version and layout; older versions are told by the Py_Version symbol
 * (3.11+) or the file's name. Every read of the target is bounded and
 * checked: process_vm_readv, /proc/PID/mem when that is refused.
 *
 * Single-threaded, in the pyprof process.
 */
#ifndef PYPROF_REMOTE_H
#define PYPROF_REMOTE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

/* n bytes at addr in process pid into buf, whole or not at all: 0 or a
 * negative errno (-EFAULT unmapped, -EPERM/-EACCES not allowed, -ESRCH
 * gone). */
int remote_read(pid_t pid, uint64_t addr, void *buf, size_t n);
/* The same the other way: buf's n bytes to addr. */
int remote_write(pid_t pid, uint64_t addr, const void *buf, size_t n);

#define REMOTE_PATH_MAX 4096

/* What was found of a process's interpreter. */
struct remote_py {
	pid_t pid;
	uint64_t runtime; /* &_PyRuntime in the target, 0 if none      */
	int major, minor; /* 0.0 if unknown                            */
	int micro;
	int free_threaded;
	int from_block;		     /* the version is the _Py_DebugOffsets block's */
	int lib_loaded;		     /* libpyprof.so is mapped in it              */
	char file[REMOTE_PATH_MAX];  /* the file holding the interpreter  */
	char libpython[32];	     /* "3.9" when a libpythonX.Y is mapped       */
	uint64_t map_start, map_end; /* file's mapping at offset 0 */
};

/*
 * Finds pid's interpreter (see the header comment), filling *py. 0 when a
 * CPython interpreter was found (its version may still be unknown: 0.0);
 * -ENOENT when the process maps no file that holds one (why says what
 * its program is);
 * -ESRCH, -EACCES and the like when its maps cannot be read.
 */
int remote_py_find(pid_t pid, struct remote_py *py, char *why, size_t why_len);

/* Where symbol name of py->file lies in the target: 0 with *addr, or
 * -ENOENT. Reads the file (its .symtab, else .dynsym), not the target. */
int remote_py_symbol(const struct remote_py *py, const char *name,
		     uint64_t *addr);

/*
 * The target's memory through a page cache, for the frame walker's loads
 * (pyprof/walk.h: walk_remote_load, walk_remote_guard) and for reading
 * code objects (remote_mem_copy, pycode_read_fn's shape). One process at
 * a time: remote_mem_open picks it and empties the cache; the cache is
 * emptied again before each walk (walk_remote_afresh), so that a walk
 * tried again reads the target anew. Reads whole 4 KiB pages with
 * remote_read, so one walk of a deep stack is some tens of system calls.
 */
void remote_mem_open(pid_t pid);
/* n bytes at addr: 0, or a negative errno (remote_read's). */
int remote_mem_read(uint64_t addr, void *buf, size_t n);
/* The same, as pycode's readers want it: 0 or -1. */
int remote_mem_copy(void *dst, const void *src, size_t n);
/* The errno of the last read that failed (0 if none since open). */
int remote_mem_error(void);
/* Pages read from the target since open (the statistics of a dump). */
unsigned long remote_mem_pages(void);

/* ---- threads and names of a target (remote_threads.c) ----------- */

#include "pyprof/walk.h"

struct pyabi_derived;
struct remote_names;

/* What dump and the sampler from outside read a target with: its
 * layout row, the walker's environment, its code objects' names. */
struct remote_target {
	const struct remote_py *py;
	struct pyabi_derived *derived; /* the row on 3.13+             */
	struct walk_remote_env env;    /* env.abi: the row in use      */
	uint64_t cur_sym;	       /* 2.7, 3.6: &_PyThreadState_Current */
	int tid_off;		       /* before 3.11: where a struct
					  pthread holds its tid; -1 not yet */
	struct remote_names *names;
	struct walk_dict_env dict_env;	/* thread names (remote_names.c)  */
	uint64_t active, active_interp; /* threading._active, and whose */
};

/* One thread state of the target. */
struct remote_thread {
	uint64_t ts, interp, pthread;
	int64_t tid; /* its OS id; 0: not known */
};

/* A code object, named (remote_name_code). Strings made printable. */
struct remote_named {
	uint64_t code;
	uint32_t fp;   /* the walker's fingerprint (walk.h)       */
	int known;     /* its name and file could be read          */
	char *name;    /* co_qualname (3.11+), else co_name        */
	char *sysname; /* co_name                                   */
	char *file;
	uint8_t *table; /* its line table                           */
	int table_len;
	int firstlineno;
};

/* Opens t on py (remote_mem_open(py->pid) included): finds the layout
 * row. py must outlive t. 0, or -1 with why (nothing to close). */
int remote_target_open(struct remote_target *t, const struct remote_py *py,
		       char *why, size_t why_len);
void remote_target_close(struct remote_target *t);

/* The thread states of every interpreter into th[0..max), each with its
 * interpreter, its pthread and (3.11+) its OS id. The number found, or
 * -1 with why (the process exited, cannot be read, has no interpreter
 * or no thread). Reads through remote_mem's cache. */
int remote_threads_list(struct remote_target *t, struct remote_thread *th,
			int max, char *why, size_t why_len);
/* Before 3.11: the OS ids of those of th[0..n) that have none, from
 * their struct pthread (t->tid_off, found once in the data). */
void remote_threads_tids(struct remote_target *t, struct remote_thread *th,
			 int n);
/* The thread's name as dump and profiles from outside give it: its
 * threading name (remote_thread_pyname), else "MainThread" for the main
 * thread, else the OS's (/proc/PID/task/TID/comm), "?" when unknown;
 * printable. 1 when the name is threading's, else 0. */
int remote_thread_name(struct remote_target *t, const struct remote_thread *r,
		       char *out, size_t n);
/* remote_names.c: finds the target's dict and str types (remote_target_open
 * calls it; without them no name is read from memory). */
void remote_names_open(struct remote_target *t);
/* The name of the threading.Thread of r (its thread_id is the Thread's
 * ident) read from the target's memory, into out (UTF-8, NUL-terminated,
 * cut to n): 0, or -1 when there is none to read (not a threading thread,
 * a dummy thread, an unreadable or strange object: out ""). Bounded; at
 * most a few thousand pages read (sys.modules' keys) when the threading
 * module's _active has to be found. */
int remote_thread_pyname(struct remote_target *t,
			 const struct remote_thread *r, char *out, size_t n);
/* The code object at code with the walker's fingerprint fp, named once
 * (then from t's table); NULL without memory. An object that cannot be
 * read is named "[unknown]" with known 0. */
const struct remote_named *remote_name_code(struct remote_target *t,
					    uint64_t code, uint32_t fp);
/* The line of e at byte offset offset (raw_frame.offset). */
int remote_code_line(const struct remote_target *t,
		     const struct remote_named *e, uint32_t offset);
/* snprintf into why (when why_len), for the one-line reasons. */
void remote_say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- sampling from outside (remote_sample.c) ---------------------- */

/* One thread's stack at one tick, as the sampler hands it on. */
struct remote_sample {
	int64_t tid;
	const char *thread_name;	/* remote_thread_name's                */
	const struct raw_frame *frames; /* innermost first; valid in the
					   callback only                 */
	int n_frames;
	uint16_t walk_flags; /* WALK_TRUNCATED, WALK_INVALID (walk.h)  */
	int fault;	     /* no walk could be read whole: no frames */
	int on_cpu;	     /* found running (see remote_sample.c)    */
	int gil_known, gil;  /* wall mode: whether it holds the GIL    */
	uint64_t value_ns;   /* the tick's interval                    */
	uint64_t t_mono_ns;  /* when (CLOCK_MONOTONIC)                 */
};
typedef void remote_sample_fn(void *arg, const struct remote_sample *smp);

struct remote_sampler;
/* A sampler of py's process (py is copied): wall 0 hands on the stacks
 * of the threads found running (CPU mode), 1 every thread's; stacks of
 * at most max_depth frames. NULL with why. */
struct remote_sampler *remote_sampler_new(const struct remote_py *py,
					  int wall, int max_depth, char *why,
					  size_t why_len);
void remote_sampler_free(struct remote_sampler *s);
/* Its target: remote_name_code and remote_code_line for the frames. */
struct remote_target *remote_sampler_target(struct remote_sampler *s);
/* One tick at now_mono_ns, elapsed_ns after the last: calls fn for each
 * stack. The threads listed; -ESRCH when the process is gone, -EIO when
 * its threads cannot be read (why says why). */
int remote_sampler_tick(struct remote_sampler *s, uint64_t now_mono_ns,
			uint64_t elapsed_ns, remote_sample_fn *fn, void *arg,
			char *why, size_t why_len);

/*
 * `pyprof dump PID` of any CPython 2.7-3.15 from outside: every thread's
 * stack, walked by the library's own walker (pyprof/walk.h) over the
 * target's memory, named with pycode.h's decoders. Prints to out, in
 * cmd_dump.c's format: "Thread TID "NAME"" (and " (holds the GIL)"),
 * then "    func (file:line)" lines, innermost first. Stops nothing, runs
 * nothing in the target. Returns 0 when every thread was read; 1 when
 * something could not be (why says what, one line; what was read is
 * printed); -1 when nothing could be read (why).
 */
int remote_dump(const struct remote_py *py, FILE *out, char *why,
		size_t why_len);

/*
 * PEP 768 (3.14+), done from this process: writes script (an absolute
 * path the target can read) into the target's main thread state, marks
 * the call pending and sets the eval breaker's stop bit, at the places
 * the target's own _Py_DebugOffsets gives. The target runs the script at
 * its main thread's next safe point. 0; -ENOTSUP when remote debugging
 * is off in the target (PYTHON_DISABLE_REMOTE_DEBUG, -X
 * disable-remote-debug) or the version has no such protocol;
 * -ENAMETOOLONG; -EPROTO for a block that does not validate; or a read or
 * write's errno. why says which.
 */
int remote_exec(const struct remote_py *py, const char *script, char *why,
		size_t why_len);

/*
 * The same request written into every other thread state of that
 * interpreter, while the main thread's still holds it untaken (else 0:
 * the main thread runs the script, and a second request would run it
 * again): any thread that runs Python code takes it at its next safe
 * point, where a main thread blocked in one call (join, accept, a lock)
 * never does. A thread state holding another debugger's request is left
 * alone. Every thread is stopped meanwhile (ptrace, no signal: a thread
 * that ends frees its state, which a write must not follow); -EPERM when
 * they cannot be (a debugger holds them). Returns the number of thread
 * states written, or a negative errno (remote_exec's, why says which). Whichever thread runs the script
 * first loads the library; the others run it as a no-op unless the
 * requests are withdrawn first.
 */
int remote_exec_spread(const struct remote_py *py, const char *script,
		       char *why, size_t why_len);

/*
 * Withdraws the requests for script that no thread has taken yet (every
 * thread state's, the main one's too): their pending flags back to 0.
 * A thread that takes its request at that very moment runs the script
 * anyway, from the file, which must therefore stay a moment longer
 * (attach_inject.c waits). spread: remote_exec_spread wrote the others
 * (every thread is stopped for the walk, as there). *main_pending: the
 * main thread's was one of them. Returns how many were withdrawn, or a
 * negative errno.
 */
int remote_exec_withdraw(const struct remote_py *py, const char *script,
			 int spread, int *main_pending);

#endif /* PYPROF_REMOTE_H */
