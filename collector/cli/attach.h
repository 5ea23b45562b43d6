/*
 * attach.h - what the files of `pyprof attach` and `pyprof dump` share:
 * the target process and what was found out about it, and the steps.
 *
 *   attach_target.c  the checks on the target, each refusal one line with
 *                    its remedy: permissions, Yama, namespaces, Python,
 *                    its version and build
 *   attach_inject.c  the script the target runs at a safe point (PEP 768:
 *                    the request written from outside, remote.h), and
 *                    the requests withdrawn when the attach is over
 *   cmd_attach.c     `pyprof attach`: options, the private collector, the
 *                    window, the control requests
 *   cmd_dump.c       `pyprof dump`: every thread's stack, once
 *   dump_native.c    `dump --native`: the threads stopped, unwound from
 *                    outside, merged with their Python stacks
 *   dump_eval.c      where the eval loop is in the interpreter's file
 *
 * docs/attach.md and the "Attach" section of docs/design.md say why it
 * works this way. Single-threaded, in the pyprof process.
 */
#ifndef PYPROF_ATTACH_H
#define PYPROF_ATTACH_H

#include <stdint.h>
#include <sys/types.h>

#include "cli/cmd.h"

/* The first minor with a safe point to run code in (PEP 768). */
#define ATTACH_MIN_MINOR 14

struct attach_target {
	pid_t pid;
	uid_t uid; /* the process's owner               */
	gid_t gid; /* its real group ((gid_t)-1: unknown) */
	char comm[64];
	char exe[CMD_PATH_MAX];	   /* /proc/PID/exe, resolved           */
	char python[CMD_PATH_MAX]; /* dump: a trusted interpreter of its
					version, for CPython's reader      */
	int major, minor;
	uint64_t runtime; /* &_PyRuntime in the target        */
	int from_block;	  /* its _Py_DebugOffsets was read     */
	int lib_loaded;	  /* libpyprof.so is mapped already    */
};

/* ---- attach_target.c ---------------------------------------------------- */

/* Checks that pid can be attached to, filling *t. 0, or -1 after printing
 * the one line that says why not and what to do. lib: libpyprof.so's path
 * (named in the remedies). Only 3.14+ (ATTACH_MIN_MINOR) is accepted;
 * dump ATTACH_DUMP_NATIVE: the refusal of an older one speaks of `pyprof
 * dump --native` (CPython's own reader, run by a trusted interpreter,
 * which it finds); ATTACH_DUMP_OUTSIDE: any version pyprof reads from
 * outside (remote_dump), only the permissions and the interpreter are
 * checked. */
#define ATTACH_DUMP_NATIVE 1
#define ATTACH_DUMP_OUTSIDE 2
int attach_target_check(pid_t pid, const char *lib, int dump,
			struct attach_target *t);

/* Parses a pid argument ("1234"). 0, or -1 after a usage line for cmd. */
int attach_parse_pid(const char *cmd, const char *arg, pid_t *pid);

/* ---- attach_inject.c ---------------------------------------------------- */

/*
 * Has the target load lib and call pyprof_attach_start(config) at its
 * interpreter's next safe point: writes the script into dir and the
 * request into the target's main thread state (remote_exec, as
 * sys.remote_exec would). dir: attach_dir's. deadline_unix: the
 * script does nothing if the target runs it after that time (a thread
 * blocked in a call runs it only when the call returns). 0, or -1 after
 * printing why (remote debugging off...).
 */
int attach_inject(const struct attach_target *t, const char *lib,
		  const char *config, const char *dir, double deadline_unix);

/*
 * Runs a Python snippet with the target's interpreter (-E -S), its
 * standard output into out (size n, NUL-terminated), standard error into
 * err (size errn; its last line kept). Returns the exit status (0 ok),
 * or -1 if it could not run.
 */
int attach_run_python(const struct attach_target *t, const char *code,
		      char *out, size_t n, char *err, size_t errn);
/* The same in two steps, for dump_native.c, which unwinds threads while
 * the snippet runs: _start forks it (0, or -1 if it could not), _finish
 * reads its output and waits for it (attach_run_python's result). */
struct attach_run {
	pid_t child;
	int out_fd, err_fd;
};
int attach_run_python_start(const struct attach_target *t, const char *code,
			    struct attach_run *run);
int attach_run_python_finish(struct attach_run *run, char *out, size_t n,
			     char *err, size_t errn);

/* The per-user directory that holds each target's script (PID.py) and
 * its attach collector's socket (PID.sock): TMPDIR/pyprof-attach.UID
 * (/tmp when TMPDIR is unset or long), 0700, ours. The socket's path is
 * the same for every attach to one process, so that a library left
 * dormant by the last attach reconnects to the next one by itself.
 * 0, or a negative errno (-EPERM: not ours, or open to others). */
int attach_dir(char *out, size_t n);

/* One line for attach_dir's refusal rc of dir, with its remedy. */
void attach_dir_refused(const char *dir, int rc);

/* Removes the files of processes that are gone from dir. */
void attach_sweep(const char *dir);

/* The main thread has not run the script within a moment: the request
 * also into every other thread state of the target (remote.h's
 * remote_exec_spread), so that a thread that runs Python code loads the
 * library where a main thread blocked in one call never would. The
 * number of thread states written, or -1 (logged at debug level). */
int attach_spread(const struct attach_target *t, const char *dir);
/* The attach is over for the script attach_inject wrote into dir, with
 * the library in (connected) or not (timed out, interrupted): the
 * requests no thread took are withdrawn, then the file goes (a moment
 * later when one was withdrawn: a thread taking it just then still reads
 * it); where they cannot be read, the file stays for the late run and
 * attach_sweep. spread: attach_spread wrote into the other threads (the
 * withdrawal stops them as it did). Returns 1 when the main thread's
 * request was among the withdrawn (it never reached a safe point), else
 * 0. */
int attach_script_done(const struct attach_target *t, const char *dir,
		       int spread);

/* ---- cmd_attach.c: the steps `top --pid` shares ------------------------ */

#include <signal.h>

#include "cli/record.h"
#include "client/ctl_client.h"

struct view_profile;

struct attach {
	struct record r;
	struct attach_target t;
	pid_t pid;
	unsigned long duration;	  /* s; 0: until Ctrl-C */
	unsigned long timeout;	  /* s */
	const char *collector;	  /* --collector SOCKET, or NULL */
	char dir[CMD_PATH_MAX];	  /* attach_dir */
	struct ctl_answer status; /* its answer to status once connected */
	int main_untaken;	  /* not connected: the main thread never
				   took the request (attach_script_done) */
};

/* SIGINT, SIGTERM or SIGHUP received (attach_signals_install). */
extern volatile sig_atomic_t attach_stop_sig;
void attach_signals_install(void);
double attach_now_s(void);
void attach_nap_ms(long ms);
int attach_target_alive(const struct attach *a);

/* Request q (its verb and options; its pid is set to a's) to the
 * collector on sock. 0 with the process's answer in *ans when it did
 * what was asked (ok, or partial: ans->msg says what it could not);
 * -1 with one line in err (size n) when it refused or did not answer, or
 * no collector answered. */
int attach_ctl(const struct attach *a, const char *sock,
	       struct ctl_request *q, struct ctl_answer *ans, char *err,
	       size_t n);

/* q: a start request of a's --hz and --mode, the rest left out. */
void attach_start_request(const struct attach *a, struct ctl_request *q);

/* Until the target answers on sock: 0, -ETIMEDOUT, -EINTR, -ESRCH. */
int attach_wait_connected(struct attach *a, const char *sock, double until);

/* The library's settings ("PYPROF_NAME=value" lines) from a's options. */
void attach_make_config(const struct attach *a, const char *sock, int start,
			char *out, size_t n);

/* One line: why the target did not connect (after the collector ended). */
void attach_say_not_connected(const struct attach *a, int why);

/* The private collector's socket (in a->dir), profile and summary (in a
 * temporary directory). 0 or -1 (said). */
int attach_private_paths(struct attach *a);

/* cmd_top_pid.c: `pyprof top --pid PID`; cmd_top_any is `pyprof top`:
 * with --pid, that, else a profile's table (cmd_top). */
int cmd_top_pid(int argc, char **argv);
/* The collector socket path a process started with the library (its
 * LD_PRELOAD) reports to, in out. 0, or -1 if it was not started so. */
int top_started_with_library(pid_t pid, char *out, size_t n);
/* Asks the collector on sock (client/http_client.h) for a window of
 * `seconds` of pid in mode (NULL: the process's own): the profile, read
 * as text for the terminal (the caller frees it with view_free), or NULL
 * after one line saying why and the remedy. */
struct view_profile *top_fetch_pid_window(const char *sock, pid_t pid,
					  const char *mode,
					  const char *seconds);
/* dump_ctl.c: `pyprof dump PID` for a process started with the library,
 * through its collector. Returns the exit status. */
int dump_ctl(pid_t pid, const char *sock, int native);
int cmd_top_any(int argc, char **argv);

/* cmd_attach.c and cmd_dump.c */
int cmd_attach(int argc, char **argv);
void cmd_attach_usage(FILE *out);
int cmd_dump(int argc, char **argv);
void cmd_dump_usage(FILE *out);
/* The most the dump reader may write. */
#define DUMP_OUT_MAX (4u << 20)

/* ---- dump_native.c ------------------------------------------------------ */
/*
 * `pyprof dump PID --native`: stops every thread of t's process (ptrace),
 * runs code (the Python stacks reader, its native mode) with t's
 * interpreter meanwhile, unwinds each thread, lets them all go on, and
 * prints every thread's merged stack. 0, or 1 after one line saying why.
 */
int dump_native(const struct attach_target *t, const char *code);

/* ---- dump_eval.c -------------------------------------------------------- */
/* The eval loop's extent in one file, in the file's own addresses. */
#define DUMP_EVAL_MAX 64
struct dump_eval {
	char *path;
	int n;
	uint64_t lo[DUMP_EVAL_MAX], hi[DUMP_EVAL_MAX];
};

/* Fills ev (whose path the caller set) for the file at path: ev->n 0 if
 * the eval loop is not in it or the file cannot be read. */
void dump_eval_find(struct dump_eval *ev, const char *path);
/* 1 if vaddr (the file's own address) is in the eval loop. */
int dump_eval_contains(const struct dump_eval *ev, uint64_t vaddr);

#endif /* PYPROF_ATTACH_H */
