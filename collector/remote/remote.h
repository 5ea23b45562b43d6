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
