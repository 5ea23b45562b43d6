/*
 * remote_dump.c - every thread's Python stack of a running CPython
 * (2.7-3.15), read from outside (remote.h's remote_dump).
 *
 * No walker of its own: the stacks are walked by the library's
 * (preload/signal/sig_frames.c, compiled a second time into pyprof with
 * its loads from the target: pyprof/walk.h), and code objects are named
 * with the library's decoders (preload/cpython/pycode.c). The layout is
 * the generated row of the target's version (pyabi_find), and on 3.13+
 * the row built from the target's own _Py_DebugOffsets
 * (pyabi_from_debug_offsets), as the library builds it at start-up.
 *
 * What it reads besides the frames, each through the same row: the
 * interpreters (_PyRuntime's list on 3.7+; 2.7 and 3.6 keep the head in
 * pystate.c's static interp_head, found in the file's .symtab, else
 * through _PyThreadState_Current's interpreter), each one's thread
 * states, the GIL's holder (pyabi_gil_holder), and each thread's OS id:
 * the thread state's native_thread_id (3.11+), before that the one
 * field of the threads' struct pthread (their thread_id) that holds an
 * id of the process's tasks for all of them (the same offset for every
 * thread, found in the data, not written here).
 *
 * The target is not stopped: a thread that runs while its stack is read
 * may be read torn; the walker's checks stop such a walk (a read that
 * fails, a chain cut), which is tried again a few times from fresh reads.
 * Every loop is bounded: interpreters, threads, frames (DUMP_MAX_FRAMES),
 * strings and line tables (pycode.h's caps, TABLE_MAX here).
 *
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyprof/pyabi.h"
#include "pyprof/pycode.h"
#include "pyprof/walk.h"
#include "remote/remote.h"

#define DUMP_MAX_FRAMES 8192
#define MAX_INTERPS 64
#define MAX_THREADS 4096
#define MAX_TASKS 8192
#define WALK_TRIES 5
#define TABLE_MAX (1u << 20)
#define NAME_CAP 512
#define PATH_CAP 1024
/* where a struct pthread's tid may be (glibc's is at 720 on x86-64) */
#define PTHREAD_SCAN 2048

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static int rd_ptr(uint64_t addr, uint64_t *v)
{
	*v = 0;
	return remote_mem_read(addr, v, sizeof *v);
}

/* One named code object. */
struct named {
	uint64_t code;
	char *name, *file;
	uint8_t *table;
	int table_len;
	int firstlineno;
};

struct names {
	struct named *e;
	size_t n, cap;
};

static char *dup_or(const char *s, int ok, const char *instead)
{
	return strdup(ok >= 0 ? s : instead);
}

static const struct named *name_code(struct names *nm,
				     const struct walk_remote_env *env,
				     uint64_t code)
{
	const struct pyabi *a = env->abi;
	char name[NAME_CAP], file[PATH_CAP];
	uint64_t type = 0, name_obj = 0, file_obj = 0, table_obj = 0;
	int32_t first = 0;
	struct named *e;
	int nn, nf, tl = -1;
	uint8_t *table = NULL;

	for (size_t i = 0; i < nm->n; i++)
		if (nm->e[i].code == code)
			return &nm->e[i];
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		struct named *ne = realloc(nm->e, cap * sizeof *ne);
		if (!ne)
			return NULL;
		nm->e = ne;
		nm->cap = cap;
	}
	e = &nm->e[nm->n];
	memset(e, 0, sizeof *e);
	e->code = code;
	if (rd_ptr(code + (uint64_t)a->ob_type, &type) != 0 ||
	    (env->code_type && type != env->code_type) ||
	    rd_ptr(code + (uint64_t)(a->co_qualname != PYABI_NONE
					     ? a->co_qualname
					     : a->co_name),
		   &name_obj) != 0 ||
	    rd_ptr(code + (uint64_t)a->co_filename, &file_obj) != 0 ||
	    rd_ptr(code + (uint64_t)a->co_linetable, &table_obj) != 0 ||
	    remote_mem_read(code + (uint64_t)a->co_firstlineno, &first,
			    sizeof first) != 0) {
		nn = nf = -1;
	} else {
		nn = pycode_read_str(a, (const void *)(uintptr_t)name_obj,
				     remote_mem_copy, name, sizeof name);
		nf = pycode_read_str(a, (const void *)(uintptr_t)file_obj,
				     remote_mem_copy, file, sizeof file);
		table = malloc(TABLE_MAX);
		if (table)
			tl = pycode_read_bytes(
				a, (const void *)(uintptr_t)table_obj,
				remote_mem_copy, table, TABLE_MAX);
		if (tl < 0) {
			free(table);
			table = NULL;
		}
	}
	e->name = dup_or(name, nn, "[unknown]");
	e->file = dup_or(file, nf, "?");
	e->table = table;
	e->table_len = tl < 0 ? 0 : tl;
	e->firstlineno = first;
	if (!e->name || !e->file) {
		free(e->name);
		free(e->file);
		free(table);
		return NULL;
	}
	nm->n++;
	return e;
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++) {
		free(nm->e[i].name);
		free(nm->e[i].file);
		free(nm->e[i].table);
	}
	free(nm->e);
}

/* The target's tasks (threads), for telling which field is a tid. */
static int read_tasks(pid_t pid, int32_t *tids, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max) {
		char *end;
		long t = strtol(d->d_name, &end, 10);
		if (*end == '\0' && t > 0)
			tids[n++] = (int32_t)t;
	}
	closedir(dir);
	return n;
}

static int is_task(const int32_t *tids, int n, int32_t v)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == v)
			return 1;
	return 0;
}

struct thread {
	uint64_t ts, interp, pthread;
	int64_t tid; /* 0: not known */
	int gil;
	int n, rc;
	uint16_t flags;
	struct raw_frame *frames;
};

static pid_t sort_pid;

/* the main thread first, then by id */
static int cmp_thread(const void *pa, const void *pb)
{
	const struct thread *a = pa, *b = pb;
	int ma = a->tid != sort_pid, mb = b->tid != sort_pid;

	if (ma != mb)
		return ma - mb;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Before 3.11: each thread's tid from its struct pthread (the header). */
static void tids_from_pthreads(pid_t pid, struct thread *th, int n)
{
	int32_t *tasks = calloc(MAX_TASKS, sizeof *tasks);
	uint8_t *buf = malloc(PTHREAD_SCAN);
	int nt, best = -1, best_n = 0;
	int *hits = calloc(PTHREAD_SCAN / 4, sizeof *hits);

	if (!tasks || !buf || !hits)
		goto out;
	nt = read_tasks(pid, tasks, MAX_TASKS);
	for (int i = 0; i < n; i++) {
		if (!th[i].pthread ||
		    remote_mem_read(th[i].pthread, buf, PTHREAD_SCAN) != 0)
			continue;
		for (int o = 0; o < PTHREAD_SCAN; o += 4) {
			int32_t v;
			memcpy(&v, buf + o, 4);
			if (is_task(tasks, nt, v))
				hits[o / 4]++;
		}
	}
	for (int o = 0; o < PTHREAD_SCAN / 4; o++)
		if (hits[o] > best_n) {
			best_n = hits[o];
			best = o * 4;
		}
	if (best < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		int32_t v;
		if (th[i].pthread &&
		    remote_mem_read(th[i].pthread + (uint64_t)best, &v,
				    sizeof v) == 0 &&
		    is_task(tasks, nt, v))
			th[i].tid = v;
	}
out:
	free(tasks);
	free(buf);
	free(hits);
}

static void thread_name(pid_t pid, int64_t tid, char *out, size_t n)
{
	char path[96];
	FILE *f;

	snprintf(out, n, "?");
	if (tid == pid) {
		snprintf(out, n, "MainThread");
		return;
	}
	if (tid <= 0)
		return;
	snprintf(path, sizeof path, "/proc/%d/task/%lld/comm", (int)pid,
		 (long long)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)n, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
	/* a name from the target reaches the terminal as text */
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"')
			*p = '?';
}

/* The layout row for py's version: 0, or -1 with why. */
static int find_abi(const struct remote_py *py, struct pyabi_derived *d,
		    const struct pyabi **abi, uint64_t code_type, char *why,
		    size_t why_len)
{
	char w[256] = "";

	if (!py->major) {
		say(why, why_len, "cannot tell the Python version of process "
				  "%d (%s)",
		    (int)py->pid, py->file);
		return -1;
	}
	if (py->free_threaded) {
		say(why, why_len, "process %d runs a free-threaded Python "
				  "%d.%d, whose stacks pyprof does not read",
		    (int)py->pid, py->major, py->minor);
		return -1;
	}
	if (py->major == 3 && py->minor >= 13) {
		if (!py->runtime ||
		    pyabi_from_debug_offsets(py->major, py->minor, -1, -1,
					     (const void *)(uintptr_t)py->runtime,
					     (const void *)(uintptr_t)code_type,
					     remote_mem_copy, d, w,
					     sizeof w) < 0) {
			say(why, why_len, "process %d runs Python %d.%d, whose "
					  "_Py_DebugOffsets pyprof cannot read: %s",
			    (int)py->pid, py->major, py->minor,
			    w[0] ? w : "no _PyRuntime");
			return -1;
		}
		*abi = &d->abi;
		return 0;
	}
	*abi = pyabi_find(py->major, py->minor);
	if (!*abi) {
		say(why, why_len, "process %d runs Python %d.%d, whose layout "
				  "this pyprof does not know",
		    (int)py->pid, py->major, py->minor);
		return -1;
	}
	return 0;
}

/* The first interpreter, 0 when none could be found. */
static uint64_t first_interp(const struct remote_py *py,
			     const struct pyabi *a, uint64_t cur_sym)
{
	uint64_t interp = 0, at, ts = 0;

	if (a->rt_interp_head != PYABI_NONE && py->runtime) {
		rd_ptr(py->runtime + (uint64_t)a->rt_interp_head, &interp);
		return interp;
	}
	/* 2.7, 3.6: pystate.c's static interp_head */
	if (remote_py_symbol(py, "interp_head", &at) == 0 &&
	    rd_ptr(at, &interp) == 0 && interp)
		return interp;
	/* else the interpreter of the thread holding the GIL */
	if (cur_sym && rd_ptr(cur_sym, &ts) == 0 && ts &&
	    rd_ptr(ts + (uint64_t)a->ts_interp, &interp) == 0)
		return interp;
	return 0;
}

static void print_thread(FILE *out, pid_t pid, const struct thread *t,
			 const struct walk_remote_env *env, struct names *nm)
{
	char name[64];

	thread_name(pid, t->tid, name, sizeof name);
	if (t->tid > 0)
		fprintf(out, "Thread %lld \"%s\"%s\n", (long long)t->tid, name,
			t->gil ? " (holds the GIL)" : "");
	else
		fprintf(out, "Thread 0x%llx \"%s\"%s\n",
			(unsigned long long)t->pthread, name,
			t->gil ? " (holds the GIL)" : "");
	for (int k = 0; k < t->n; k++) {
		const struct raw_frame *f = &t->frames[k];
		const struct named *e = name_code(nm, env, raw_code(f));
		int line;

		if (!e) {
			fprintf(out, "    [unknown] (?:0)\n");
			continue;
		}
		line = f->offset == RAW_NOT_STARTED
			       ? e->firstlineno
			       : pycode_addr2line(env->abi->lines_kind, e->table,
						  (size_t)e->table_len,
						  e->firstlineno, f->offset);
		if (line < 0)
			line = e->firstlineno;
		/* names from the target reach the terminal as text */
		for (char *p = e->name; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		for (char *p = e->file; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		fprintf(out, "    %s (%s:%d)\n", e->name, e->file, line);
	}
	if (t->rc < 0)
		fprintf(out, "    (the rest of its stack could not be read: "
			     "%s)\n",
			strerror(-t->rc));
	else if (t->flags & WALK_TRUNCATED)
		fprintf(out, "    (cut: %s)\n",
			t->n >= DUMP_MAX_FRAMES
				? "more frames than pyprof reads, "
				  "8192, or a chain that loops"
				: "the chain ended at a frame that is not "
				  "the thread's first");
	else if (t->flags & WALK_INVALID)
		fprintf(out, "    (cut: the chain went on to something that "
			     "is not a frame)\n");
	else if (!t->n)
		fprintf(out, "    (no Python frame)\n");
}

int remote_dump(const struct remote_py *py, FILE *out, char *why,
		size_t why_len)
{
	struct pyabi_derived *derived = calloc(1, sizeof *derived);
	struct walk_remote_env env = { 0 };
	struct thread *th = calloc(MAX_THREADS, sizeof *th);
	struct names nm = { 0 };
	uint64_t code_type = 0, cur_sym = 0, interp;
	int n = 0, rc = -1, failed = 0;
	pid_t pid = py->pid;

	if (!derived || !th) {
		say(why, why_len, "out of memory");
		goto out;
	}
	remote_mem_open(pid);
	remote_py_symbol(py, "PyCode_Type", &code_type);
	if (py->major == 2 || (py->major == 3 && py->minor <= 6))
		remote_py_symbol(py, "_PyThreadState_Current", &cur_sym);
	if (find_abi(py, derived, &env.abi, code_type, why, why_len) < 0)
		goto out;
	env.code_type = code_type;
	env.runtime = py->runtime;
	env.cur_tstate_sym = cur_sym;
	interp = first_interp(py, env.abi, cur_sym);
	if (!interp) {
		int e = remote_mem_error();
		if (e == ESRCH || kill(pid, 0) < 0)
			say(why, why_len, "process %d exited", (int)pid);
		else if (e == EPERM || e == EACCES)
			say(why, why_len, "cannot read process %d's memory: %s",
			    (int)pid, strerror(e));
		else
			say(why, why_len, "process %d has no Python "
					  "interpreter running (not started "
					  "yet, or finalized)",
			    (int)pid);
		goto out;
	}
	/* the interpreters and their thread states */
	for (int i = 0; interp && i < MAX_INTERPS && n < MAX_THREADS; i++) {
		uint64_t ts = 0, next = 0;
		rd_ptr(interp + (uint64_t)env.abi->interp_tstate_head, &ts);
		while (ts && n < MAX_THREADS) {
			struct thread *t = &th[n];
			int dup = 0;
			for (int k = 0; k < n && !dup; k++)
				dup = th[k].ts == ts;
			if (dup)
				break; /* a list that loops */
			t->ts = ts;
			t->interp = interp;
			rd_ptr(ts + (uint64_t)env.abi->ts_thread_id,
			       &t->pthread);
			if (env.abi->ts_native_thread_id != PYABI_NONE) {
				uint64_t tid = 0;
				if (rd_ptr(ts + (uint64_t)env.abi
							   ->ts_native_thread_id,
					   &tid) == 0 &&
				    tid < (1ull << 31))
					t->tid = (int64_t)tid;
			}
			n++;
			if (rd_ptr(ts + (uint64_t)env.abi->ts_next, &next) != 0 ||
			    next == ts)
				break;
			ts = next;
		}
		if (rd_ptr(interp + (uint64_t)env.abi->interp_next, &next) != 0 ||
		    next == interp)
			break;
		interp = next;
	}
	if (!n) {
		say(why, why_len, "process %d has no Python thread", (int)pid);
		goto out;
	}
	if (env.abi->ts_native_thread_id == PYABI_NONE)
		tids_from_pthreads(pid, th, n);
	/* each stack, then the GIL as it is right after */
	for (int i = 0; i < n; i++) {
		struct thread *t = &th[i];
		uintptr_t holder = 0;

		t->frames = calloc(DUMP_MAX_FRAMES, sizeof *t->frames);
		if (!t->frames) {
			t->rc = -ENOMEM;
			continue;
		}
		for (int k = 0; k < WALK_TRIES; k++) {
			t->flags = 0;
			t->rc = frames_walk_remote(&env, t->ts, t->frames,
						   DUMP_MAX_FRAMES, &t->flags);
			if (t->rc >= 0 && !(t->flags & WALK_INVALID))
				break;
			if (remote_mem_error() == ESRCH)
				break;
		}
		t->n = t->rc > 0 ? t->rc : 0;
		if (t->rc >= 0)
			t->rc = 0;
		if (pyabi_gil_holder(env.abi, (uintptr_t)py->runtime,
				     (uintptr_t)t->interp, (uintptr_t)cur_sym,
				     remote_mem_copy, &holder) == 0)
			t->gil = holder == t->ts;
	}
	sort_pid = pid;
	qsort(th, (size_t)n, sizeof *th, cmp_thread);
	for (int i = 0; i < n; i++) {
		print_thread(out, pid, &th[i], &env, &nm);
		if (th[i].rc < 0)
			failed = th[i].rc;
	}
	rc = 0;
	if (failed) {
		if (remote_mem_error() == ESRCH || kill(pid, 0) < 0)
			say(why, why_len, "process %d exited while its stacks "
					  "were read: the stacks above are what "
					  "was read",
			    (int)pid);
		else
			say(why, why_len, "a stack of process %d could not be "
					  "read whole: %s (its memory changed "
					  "under the read, or is not a stack)",
			    (int)pid, strerror(-failed));
		rc = 1;
	}
out:
	if (th)
		for (int i = 0; i < n; i++)
			free(th[i].frames);
	free(th);
	free(derived);
	names_free(&nm);
	return rc;
}
