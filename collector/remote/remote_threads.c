/*
 * remote_threads.c - what `pyprof dump` and the sampler from outside
 * (remote_sample.c) read of a running CPython besides its frames: the
 * layout row of its version, its interpreters and thread states, each
 * thread's OS id and name, and its code objects' names (remote.h's
 * struct remote_target).
 *
 * The layout is the generated row of the target's version (pyabi_find),
 * and on 3.13+ the row built from the target's own _Py_DebugOffsets
 * (pyabi_from_debug_offsets), as the library builds it at start-up; no
 * offset is written here. The interpreters: _PyRuntime's list on 3.7+;
 * 2.7 and 3.6 keep the head in pystate.c's static interp_head, found in
 * the file's .symtab, else through _PyThreadState_Current's interpreter.
 * Each thread's OS id: the thread state's native_thread_id (3.11+),
 * before that the one field of the threads' struct pthread (their
 * thread_id) that holds an id of the process's tasks for all of them
 * (the same offset for every thread, found in the data, not written
 * here). Code objects are named with the library's decoders
 * (preload/cpython/pycode.c), each kept under its address and the
 * walker's fingerprint (a freed code object's address may hold another).
 *
 * Every loop is bounded: interpreters, threads, strings and line tables
 * (pycode.h's caps, TABLE_MAX here).
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

#include "common/idhash.h"
#include "pyprof/pyabi.h"
#include "pyprof/pycode.h"
#include "pyprof/walk.h"
#include "remote/remote.h"

#define MAX_INTERPS 64
#define MAX_TASKS 8192
#define TABLE_MAX (1u << 20)
#define NAME_CAP 512
#define PATH_CAP 1024
/* where a struct pthread's tid may be (glibc's is at 720 on x86-64) */
#define PTHREAD_SCAN 2048

/* The code objects named so far: entries, and an idhash over (code, fp). */
struct remote_names {
	struct remote_named *e;
	size_t n, cap;
	struct idhash hash;
};

void remote_say(char *why, size_t why_len, const char *fmt, ...)
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

/* The layout row for py's version: 0, or -1 with why. */
static int find_abi(const struct remote_py *py, struct pyabi_derived *d,
		    const struct pyabi **abi, uint64_t code_type, char *why,
		    size_t why_len)
{
	char w[256] = "";

	if (!py->major) {
		remote_say(why, why_len,
			   "cannot tell the Python version of process "
			   "%d (%s)",
			   (int)py->pid, py->file);
		return -1;
	}
	if (py->free_threaded) {
		remote_say(why, why_len,
			   "process %d runs a free-threaded Python "
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
			remote_say(why, why_len,
				   "process %d runs Python %d.%d, whose "
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
		remote_say(why, why_len,
			   "process %d runs Python %d.%d, whose layout "
			   "this pyprof does not know",
			   (int)py->pid, py->major, py->minor);
		return -1;
	}
	return 0;
}

int remote_target_open(struct remote_target *t, const struct remote_py *py,
		       char *why, size_t why_len)
{
	uint64_t code_type = 0;

	memset(t, 0, sizeof *t);
	t->py = py;
	t->tid_off = -1;
	t->derived = calloc(1, sizeof *t->derived);
	t->names = calloc(1, sizeof *t->names);
	if (!t->derived || !t->names) {
		remote_say(why, why_len, "out of memory");
		goto fail;
	}
	idhash_init(&t->names->hash);
	remote_mem_open(py->pid);
	remote_py_symbol(py, "PyCode_Type", &code_type);
	if (py->major == 2 || (py->major == 3 && py->minor <= 6))
		remote_py_symbol(py, "_PyThreadState_Current", &t->cur_sym);
	if (find_abi(py, t->derived, &t->env.abi, code_type, why, why_len) <
	    0)
		goto fail;
	t->env.code_type = code_type;
	t->env.runtime = py->runtime;
	t->env.cur_tstate_sym = t->cur_sym;
	remote_names_open(t);
	return 0;
fail:
	remote_target_close(t);
	return -1;
}

void remote_target_close(struct remote_target *t)
{
	if (t->names) {
		for (size_t i = 0; i < t->names->n; i++) {
			free(t->names->e[i].name);
			free(t->names->e[i].sysname);
			free(t->names->e[i].file);
			free(t->names->e[i].table);
		}
		free(t->names->e);
		idhash_fini(&t->names->hash);
		free(t->names);
	}
	free(t->derived);
	memset(t, 0, sizeof *t);
	t->tid_off = -1;
}

/* The first interpreter, 0 when none could be found. */
static uint64_t first_interp(const struct remote_target *t)
{
	const struct remote_py *py = t->py;
	const struct pyabi *a = t->env.abi;
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
	if (t->cur_sym && rd_ptr(t->cur_sym, &ts) == 0 && ts &&
	    rd_ptr(ts + (uint64_t)a->ts_interp, &interp) == 0)
		return interp;
	return 0;
}

int remote_threads_list(struct remote_target *t, struct remote_thread *th,
			int max, char *why, size_t why_len)
{
	const struct pyabi *a = t->env.abi;
	pid_t pid = t->py->pid;
	uint64_t interp = first_interp(t);
	int n = 0;

	if (!interp) {
		int e = remote_mem_error();
		if (e == ESRCH || kill(pid, 0) < 0)
			remote_say(why, why_len, "process %d exited", (int)pid);
		else if (e == EPERM || e == EACCES)
			remote_say(why, why_len,
				   "cannot read process %d's memory: %s",
				   (int)pid, strerror(e));
		else
			remote_say(why, why_len,
				   "process %d has no Python "
				   "interpreter running (not started "
				   "yet, or finalized)",
				   (int)pid);
		return -1;
	}
	for (int i = 0; interp && i < MAX_INTERPS && n < max; i++) {
		uint64_t ts = 0, next = 0;
		rd_ptr(interp + (uint64_t)a->interp_tstate_head, &ts);
		while (ts && n < max) {
			struct remote_thread *r = &th[n];
			int dup = 0;
			for (int k = 0; k < n && !dup; k++)
				dup = th[k].ts == ts;
			if (dup)
				break; /* a list that loops */
			memset(r, 0, sizeof *r);
			r->ts = ts;
			r->interp = interp;
			rd_ptr(ts + (uint64_t)a->ts_thread_id, &r->pthread);
			if (a->ts_native_thread_id != PYABI_NONE) {
				uint64_t tid = 0;
				if (rd_ptr(ts + (uint64_t)a->ts_native_thread_id,
					   &tid) == 0 &&
				    tid < (1ull << 31))
					r->tid = (int64_t)tid;
			}
			n++;
			if (rd_ptr(ts + (uint64_t)a->ts_next, &next) != 0 ||
			    next == ts)
				break;
			ts = next;
		}
		if (rd_ptr(interp + (uint64_t)a->interp_next, &next) != 0 ||
		    next == interp)
			break;
		interp = next;
	}
	if (!n) {
		remote_say(why, why_len, "process %d has no Python thread",
			   (int)pid);
		return -1;
	}
	return n;
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
		long v = strtol(d->d_name, &end, 10);
		if (*end == '\0' && v > 0)
			tids[n++] = (int32_t)v;
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

/* The offset in a struct pthread that holds a task id for most of th. */
static int find_tid_offset(const int32_t *tasks, int nt,
			   const struct remote_thread *th, int n)
{
	uint8_t *buf = malloc(PTHREAD_SCAN);
	int *hits = calloc(PTHREAD_SCAN / 4, sizeof *hits);
	int best = -1, best_n = 0;

	if (!buf || !hits)
		goto out;
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
out:
	free(buf);
	free(hits);
	return best;
}

void remote_threads_tids(struct remote_target *t, struct remote_thread *th,
			 int n)
{
	int32_t *tasks;
	int nt, missing = 0;

	for (int i = 0; i < n; i++)
		missing += th[i].tid <= 0;
	if (!missing)
		return;
	tasks = calloc(MAX_TASKS, sizeof *tasks);
	if (!tasks)
		return;
	nt = read_tasks(t->py->pid, tasks, MAX_TASKS);
	for (int pass = 0; pass < 2; pass++) {
		int bad = 0;
		if (t->tid_off < 0 || pass == 1)
			t->tid_off = find_tid_offset(tasks, nt, th, n);
		if (t->tid_off < 0)
			break;
		for (int i = 0; i < n; i++) {
			int32_t v;
			if (th[i].tid > 0 || !th[i].pthread)
				continue;
			if (remote_mem_read(th[i].pthread + (uint64_t)t->tid_off,
					    &v, sizeof v) == 0 &&
			    is_task(tasks, nt, v))
				th[i].tid = v;
			else
				bad++;
		}
		if (!bad)
			break;
	}
	free(tasks);
}

int remote_thread_name(struct remote_target *t, const struct remote_thread *r,
		       char *out, size_t n)
{
	pid_t pid = t->py->pid;
	char path[96];
	int from_py = 0;
	FILE *f = NULL;

	if (remote_thread_pyname(t, r, out, n) == 0) {
		from_py = 1;
	} else if (r->tid == pid) {
		snprintf(out, n, "MainThread");
	} else {
		snprintf(out, n, "?");
		snprintf(path, sizeof path, "/proc/%d/task/%lld/comm", (int)pid,
			 (long long)r->tid);
		f = r->tid > 0 ? fopen(path, "re") : NULL;
	}
	if (f) {
		if (fgets(out, (int)n, f))
			out[strcspn(out, "\n")] = '\0';
		fclose(f);
	}
	/* a name from the target reaches the terminal as text */
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"')
			*p = '?';
	return from_py;
}

static uint64_t code_hash(uint64_t code, uint32_t fp)
{
	return idhash_combine(idhash_mix(code), fp);
}

struct code_key {
	const struct remote_names *nm;
	uint64_t code;
	uint32_t fp;
};

static int code_eq(const void *ctx, uint32_t id)
{
	const struct code_key *k = ctx;
	const struct remote_named *e = &k->nm->e[id - 1];

	return e->code == k->code && e->fp == k->fp;
}

/* s made printable: names from the target reach terminals as text */
static char *dup_clean(const char *s, int ok, const char *instead)
{
	char *d = strdup(ok >= 0 ? s : instead);

	for (char *p = d; p && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return d;
}

static int rd_str(const struct pyabi *a, uint64_t obj, char *out, size_t n)
{
	return pycode_read_str(a, (const void *)(uintptr_t)obj,
			       remote_mem_copy, out, n);
}

/* The bytes of the line table at table_obj (pycode_read_bytes), in a
 * buffer of their length *len (malloc'd, the caller's); NULL with *len -1
 * when they cannot be read. */
static uint8_t *read_table(const struct pyabi *a, uint64_t table_obj,
			   int *len)
{
	uint8_t *table = malloc(TABLE_MAX), *small;

	*len = -1;
	if (table)
		*len = pycode_read_bytes(a, (const void *)(uintptr_t)table_obj,
					 remote_mem_copy, table, TABLE_MAX);
	if (*len < 0) {
		free(table);
		return NULL;
	}
	small = realloc(table, *len ? (size_t)*len : 1);
	return small ? small : table;
}

const struct remote_named *remote_name_code(struct remote_target *t,
					    uint64_t code, uint32_t fp)
{
	struct remote_names *nm = t->names;
	const struct pyabi *a = t->env.abi;
	struct code_key key = { nm, code, fp };
	char name[NAME_CAP], sysname[NAME_CAP], file[PATH_CAP];
	uint64_t type = 0, name_obj = 0, qual_obj = 0, file_obj = 0,
		 table_obj = 0;
	int32_t first = 0;
	struct remote_named *e;
	int nn, nq, nf, tl = -1;
	uint8_t *table = NULL;
	uint32_t id = idhash_find(&nm->hash, code_hash(code, fp), code_eq,
				  &key);

	if (id)
		return &nm->e[id - 1];
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		struct remote_named *ne = realloc(nm->e, cap * sizeof *ne);
		if (!ne)
			return NULL;
		nm->e = ne;
		nm->cap = cap;
	}
	e = &nm->e[nm->n];
	memset(e, 0, sizeof *e);
	e->code = code;
	e->fp = fp;
	if (rd_ptr(code + (uint64_t)a->ob_type, &type) != 0 ||
	    (t->env.code_type && type != t->env.code_type) ||
	    rd_ptr(code + (uint64_t)a->co_name, &name_obj) != 0 ||
	    (a->co_qualname != PYABI_NONE &&
	     rd_ptr(code + (uint64_t)a->co_qualname, &qual_obj) != 0) ||
	    rd_ptr(code + (uint64_t)a->co_filename, &file_obj) != 0 ||
	    rd_ptr(code + (uint64_t)a->co_linetable, &table_obj) != 0 ||
	    remote_mem_read(code + (uint64_t)a->co_firstlineno, &first,
			    sizeof first) != 0) {
		nn = nq = nf = -1;
	} else {
		nn = rd_str(a, name_obj, sysname, sizeof sysname);
		/* 2.7-3.10 have no co_qualname: the name is the function's */
		nq = a->co_qualname != PYABI_NONE
			     ? rd_str(a, qual_obj, name, sizeof name)
			     : nn;
		if (a->co_qualname == PYABI_NONE && nn >= 0) {
			memcpy(name, sysname, sizeof name);
			nq = nn;
		}
		nf = rd_str(a, file_obj, file, sizeof file);
		table = read_table(a, table_obj, &tl);
	}
	e->known = nq >= 0 && nf >= 0;
	e->name = dup_clean(name, nq, "[unknown]");
	e->sysname = dup_clean(sysname, nn >= 0 && nq >= 0 ? 0 : -1,
			       "[unknown]");
	e->file = dup_clean(file, nf, "?");
	e->table = table;
	e->table_len = tl < 0 ? 0 : tl;
	e->firstlineno = first;
	if (!e->name || !e->sysname || !e->file ||
	    idhash_insert(&nm->hash, code_hash(code, fp),
			  (uint32_t)nm->n + 1) < 0) {
		free(e->name);
		free(e->sysname);
		free(e->file);
		free(table);
		return NULL;
	}
	nm->n++;
	return e;
}

int remote_code_line(const struct remote_target *t,
		     const struct remote_named *e, uint32_t offset)
{
	int line;

	if (offset == RAW_NOT_STARTED)
		return e->firstlineno;
	line = pycode_addr2line(t->env.abi->lines_kind, e->table,
				(size_t)e->table_len, e->firstlineno, offset);
	return line < 0 ? e->firstlineno : line;
}
