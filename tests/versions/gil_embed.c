/*
 * gil_embed.c - pyabi_gil_holder against a live interpreter, from a thread
 * that holds no GIL.
 *
 * usage: gil_embed tests/versions/gil_threads.py
 *
 * Built by tests/versions/gil.sh once per interpreter, against its own
 * headers and libpython, like pyabi_embed.c. It embeds the interpreter and
 * gives gil_threads.py two C functions:
 *
 *   record(name)  called by a Python thread: remembers its PyThreadState
 *                 and OS thread id under that name ("busy", "sleeper");
 *   sample(phase) called by the main thread: releases the GIL, starts a
 *                 plain pthread (never seen by Python, no C API) that calls
 *                 pyabi_gil_holder every ~200 us for SAMPLE_MS with
 *                 memcpy reads, joins it, takes the GIL back and checks
 *                 the counts. Phase "busy": one thread spins holding the
 *                 GIL, one sleeps in time.sleep; the answer must be the
 *                 spinning thread most of the time and never the sleeping
 *                 one (nor the main thread, blocked in pthread_join).
 *                 Phase "idle": every Python thread sleeps; the GIL must be
 *                 free at every sample.
 *
 * The sampler also checks, through /proc/self/task/TID/stat, that the
 * threads said to sleep were sleeping ('S') when it started and when it
 * stopped, so a failure means a wrong answer, not a badly timed test.
 * On 3.7-3.11 it also reads the GIL's own fields (rt_gil + gil_locked,
 * gil_holder), which pyabi_gil_holder does not use there, to check those
 * offsets and to show that last_holder outlives the release.
 *
 * Before any thread starts, main() checks the deterministic cases: the
 * caller holding the GIL is the holder; with the GIL released and no other
 * thread, nobody is; the error returns.
 *
 * Prints `gil: ...` summary lines and check.h's `check: N passed, N failed`.
 */
#include <Python.h>
#include <pythread.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pyprof/pyabi.h"

#define PY_AT_LEAST(maj, min) (PY_VERSION_HEX >= (((maj) << 24) | ((min) << 16)))

#define SAMPLE_MS 600   /* how long each phase samples, at least        */
#define MIN_SAMPLES 500 /* and how many samples it takes, at least      */
#define SETTLE_MS 300   /* GIL released this long before sampling starts */
#define GAP_US 200      /* between two samples                          */

static const struct pyabi *row;
static uintptr_t runtime, cur_sym;

/* Written by record() with the GIL held, read by the sampler after
 * main() saw them set (pthread_create orders it). */
static uintptr_t busy_ts, sleeper_ts;
static long busy_tid, sleeper_tid;

static int rd(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}

static int rd_fail(void *dst, const void *src, size_t n)
{
	(void)dst;
	(void)src;
	(void)n;
	return -1;
}

static uintptr_t rd_ptr(uintptr_t a)
{
	uintptr_t v;

	memcpy(&v, (const void *)a, sizeof(v));
	return v;
}

static int32_t rd_i32(uintptr_t a)
{
	int32_t v;

	memcpy(&v, (const void *)a, sizeof(v));
	return v;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&t, NULL);
}

/* The state letter of one of our threads ('R', 'S', ...), '?' if unknown. */
static char task_state(long tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces */
	return p && p[1] == ' ' ? p[2] : '?';
}

/* ---- the sampler: a plain pthread, no GIL, no C API ---- */

struct tally {
	const char *phase;
	uintptr_t interp, main_ts;
	long sleeping[2];   /* tids that must sleep throughout */
	int n_sleeping;
	char before[2], after[2];
	unsigned n, busy, sleeper, main, other, free_, err;
	int last_err;
	uintptr_t other_val;
	/* 3.7-3.11: the GIL's own fields */
	unsigned locked, locked_busy, unlocked, unlocked_busy;
};

static void *sampler(void *arg)
{
	struct tally *t = arg;
	uint64_t start, end;
	int i;

	for (i = 0; i < t->n_sleeping; i++)
		t->before[i] = task_state(t->sleeping[i]);
	/* SAMPLE_MS at least, and on a busy machine (whose sleeps run
	 * long) until MIN_SAMPLES, up to ten times as long: the checks below
	 * count samples, not time */
	start = now_ns();
	end = start + (uint64_t)SAMPLE_MS * 1000000u;
	while (now_ns() < end ||
	       (t->n < MIN_SAMPLES &&
		now_ns() < start + 10ull * SAMPLE_MS * 1000000u)) {
		uintptr_t h = 1;
		int rc = pyabi_gil_holder(row, runtime, t->interp, cur_sym, rd, &h);

		t->n++;
		if (rc) {
			t->err++;
			t->last_err = rc;
		} else if (h == 0) {
			t->free_++;
		} else if (h == busy_ts) {
			t->busy++;
		} else if (h == sleeper_ts) {
			t->sleeper++;
		} else if (h == t->main_ts) {
			t->main++;
		} else {
			t->other++;
			t->other_val = h;
		}
		if (row->rt_gil != PYABI_NONE) {
			uintptr_t g = runtime + (uintptr_t)row->rt_gil;
			int32_t locked = rd_i32(g + (uintptr_t)row->gil_locked);
			uintptr_t last = rd_ptr(g + (uintptr_t)row->gil_holder);

			if (locked == 1) {
				t->locked++;
				t->locked_busy += last == busy_ts;
			} else if (locked == 0) {
				t->unlocked++;
				t->unlocked_busy += last == busy_ts;
			}
		}
		sleep_us(GAP_US);
	}
	for (i = 0; i < t->n_sleeping; i++)
		t->after[i] = task_state(t->sleeping[i]);
	return NULL;
}

static double pct(unsigned a, unsigned b)
{
	return b ? 100.0 * a / b : 0.0;
}

/* ---- Python-callable ---- */

static PyObject *record(PyObject *self, PyObject *args)
{
	const char *name;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &name))
		return NULL;
	if (strcmp(name, "busy") == 0) {
		busy_ts = (uintptr_t)PyThreadState_Get();
		busy_tid = (long)syscall(SYS_gettid);
	} else if (strcmp(name, "sleeper") == 0) {
		sleeper_ts = (uintptr_t)PyThreadState_Get();
		sleeper_tid = (long)syscall(SYS_gettid);
	} else {
		PyErr_SetString(PyExc_ValueError, "record: busy or sleeper");
		return NULL;
	}
	Py_INCREF(Py_None);
	return Py_None;
}

static PyObject *sample(PyObject *self, PyObject *args)
{
	struct tally t;
	const char *phase;
	char what[200];
	pthread_t th;
	int rc, i, idle;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &phase))
		return NULL;
	idle = strcmp(phase, "idle") == 0;
	memset(&t, 0, sizeof(t));
	t.phase = phase;
	t.main_ts = (uintptr_t)PyThreadState_Get();
	/* The interpreter the threads belong to, as the wall sampler finds
	 * it: through the row. */
	t.interp = rd_ptr(busy_ts + (uintptr_t)row->ts_interp);
	t.sleeping[t.n_sleeping++] = sleeper_tid;
	if (idle)
		t.sleeping[t.n_sleeping++] = busy_tid;

	Py_BEGIN_ALLOW_THREADS
	sleep_us(SETTLE_MS * 1000L);
	rc = pthread_create(&th, NULL, sampler, &t);
	if (rc == 0)
		pthread_join(th, NULL);
	Py_END_ALLOW_THREADS

	CHECK_OR_RETURN(rc == 0, "2.0 sampler thread started", NULL);
	printf("gil: %s: %u samples: busy %u (%.1f%%), free %u, sleeper %u, main %u, "
	       "other %u, errors %u\n", phase, t.n, t.busy, pct(t.busy, t.n), t.free_,
	       t.sleeper, t.main, t.other, t.err);
	if (row->rt_gil != PYABI_NONE)
		printf("gil: %s: _PyRuntime.ceval.gil: locked %u (last_holder busy %u), "
		       "unlocked %u (last_holder still busy %u)\n", phase, t.locked,
		       t.locked_busy, t.unlocked, t.unlocked_busy);
	for (i = 0; i < t.n_sleeping; i++) {
		snprintf(what, sizeof(what), "2.1 %s: thread %ld sleeps throughout (%c..%c)",
			 phase, t.sleeping[i], t.before[i], t.after[i]);
		CHECK(t.before[i] == 'S' && t.after[i] == 'S', what);
	}
	snprintf(what, sizeof(what), "2.2 %s: enough samples (%u)", phase, t.n);
	CHECK(t.n >= MIN_SAMPLES, what);
	snprintf(what, sizeof(what), "2.3 %s: no error (%u, last %d)", phase, t.err,
		 t.last_err);
	CHECK(t.err == 0, what);
	snprintf(what, sizeof(what), "2.4 %s: never the sleeping thread (%u)", phase,
		 t.sleeper);
	CHECK(t.sleeper == 0, what);
	snprintf(what, sizeof(what), "2.5 %s: never the main thread, blocked in C (%u)",
		 phase, t.main);
	CHECK(t.main == 0, what);
	snprintf(what, sizeof(what), "2.6 %s: never another value (%u, e.g. %#lx)", phase,
		 t.other, (unsigned long)t.other_val);
	CHECK(t.other == 0, what);
	if (idle) {
		snprintf(what, sizeof(what), "2.7 idle: free at every sample (%u of %u)",
			 t.free_, t.n);
		CHECK(t.free_ == t.n, what);
		if (row->rt_gil != PYABI_NONE) {
			CHECK(t.unlocked == t.n,
			      "2.8 idle: _PyRuntime.ceval.gil.locked is 0 throughout");
		}
	} else {
		snprintf(what, sizeof(what), "2.7 busy: the spinning thread most of the "
			 "time (%.1f%%)", pct(t.busy, t.n));
		CHECK(t.busy * 2 > t.n, what);
		if (row->rt_gil != PYABI_NONE) {
			snprintf(what, sizeof(what), "2.8 busy: _PyRuntime.ceval.gil locked by "
				 "the spinning thread most of the time (%u of %u)",
				 t.locked_busy, t.n);
			CHECK(t.locked_busy * 2 > t.n, what);
		}
	}
	Py_INCREF(Py_None);
	return Py_None;
}

static PyMethodDef record_def = { "record", record, METH_VARARGS, "remember tstate" };
static PyMethodDef sample_def = { "sample", sample, METH_VARARGS, "sample the GIL" };

static void run_threads(const char *path)
{
	PyObject *main_mod = PyImport_AddModule("__main__");
	PyObject *globals = PyModule_GetDict(main_mod);
	PyObject *f1 = PyCFunction_New(&record_def, NULL);
	PyObject *f2 = PyCFunction_New(&sample_def, NULL);
	PyObject *code, *res = NULL;
	char *src = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	CHECK(f != NULL, "2.0 open gil_threads.py");
	if (!f)
		return;
	if (getdelim(&src, &cap, '\0', f) < 0) {
		fclose(f);
		CHECK(0, "2.0 read gil_threads.py");
		return;
	}
	fclose(f);
	PyDict_SetItemString(globals, "record", f1);
	PyDict_SetItemString(globals, "sample", f2);
	code = Py_CompileString(src, path, Py_file_input);
	if (code) {
#if PY_MAJOR_VERSION >= 3
		res = PyEval_EvalCode(code, globals, globals);
#else
		res = PyEval_EvalCode((PyCodeObject *)code, globals, globals);
#endif
	}
	if (!res)
		PyErr_Print();
	CHECK(res != NULL, "2.0 gil_threads.py ran to the end");
	fflush(stdout);
	Py_XDECREF(res);
	Py_XDECREF(code);
	Py_XDECREF(f1);
	Py_XDECREF(f2);
	free(src);
}

/* ---- 1. before any thread: symbols, deterministic answers, errors ---- */

#if PY_AT_LEAST(3, 7)
extern char _PyRuntime[]; /* only Py_BUILD_CORE headers declare it */
#endif

static void check_alone(void)
{
	PyThreadState *me = PyThreadState_Get();
	uintptr_t interp = (uintptr_t)PyInterpreterState_Head(), h = 1;
	struct pyabi broken = *row;
	int rc;

	/* The addresses callers pass: dlsym, as init.c does. */
#if PY_AT_LEAST(3, 7)
	CHECK(runtime == (uintptr_t)_PyRuntime, "1.1 dlsym(_PyRuntime) is &_PyRuntime");
	CHECK(cur_sym == 0, "1.2 3.7+ do not export _PyThreadState_Current");
#else
	CHECK(runtime == 0, "1.1 no _PyRuntime before 3.7");
	CHECK(cur_sym != 0, "1.2 _PyThreadState_Current is exported");
#endif
#if PY_MAJOR_VERSION == 2
	CHECK(cur_sym == (uintptr_t)&_PyThreadState_Current,
	      "1.2 dlsym(_PyThreadState_Current) is the header's variable");
#endif
	CHECK(row->gil_kind == (PY_AT_LEAST(3, 12)  ? PYABI_GIL_INTERP_PTR
				: PY_AT_LEAST(3, 7) ? PYABI_GIL_RUNTIME
						    : PYABI_GIL_CURRENT_SYM),
	      "1.3 gil_kind for this version");
#if PY_AT_LEAST(3, 12)
	/* The main interpreter owns its GIL: ceval.gil points at its _gil. */
	CHECK(rd_ptr(interp + (uintptr_t)row->interp_gil_ptr) ==
		      interp + (uintptr_t)row->interp_gil,
	      "1.4 main interpreter: ceval.gil is &interp->_gil");
#endif

	rc = pyabi_gil_holder(row, runtime, interp, cur_sym, rd, &h);
	CHECK(rc == 0 && h == (uintptr_t)me, "1.5 holding the GIL: the holder is me");
	Py_BEGIN_ALLOW_THREADS
	h = 1;
	rc = pyabi_gil_holder(row, runtime, interp, cur_sym, rd, &h);
	Py_END_ALLOW_THREADS
	CHECK(rc == 0 && h == 0, "1.6 GIL released, no other thread: free");

	h = 7;
	CHECK(pyabi_gil_holder(NULL, runtime, interp, cur_sym, rd, &h) == -EINVAL &&
		      pyabi_gil_holder(row, runtime, interp, cur_sym, NULL, &h) == -EINVAL &&
		      pyabi_gil_holder(row, runtime, interp, cur_sym, rd, NULL) == -EINVAL,
	      "1.7 NULL abi, read or holder: -EINVAL");
	CHECK(pyabi_gil_holder(row, runtime, interp, cur_sym, rd_fail, &h) == -EFAULT &&
		      h == 7, "1.8 a failed read: -EFAULT, holder untouched");
	CHECK(pyabi_gil_holder(row, 0, 0, 0, rd, &h) == -EINVAL && h == 7,
	      "1.9 the address this version needs is missing: -EINVAL");
	broken.gil_kind = 0;
	CHECK(pyabi_gil_holder(&broken, runtime, interp, cur_sym, rd, &h) == -ENOTSUP,
	      "1.10 no gil_kind: -ENOTSUP");
#if PY_AT_LEAST(3, 12)
	{
		/* A fake interpreter whose ceval.gil is NULL, then one whose
		 * GIL says locked == -1 (not created) or garbage. */
		static unsigned char fake_interp[16384], fake_gil[256];
		uintptr_t fi = (uintptr_t)fake_interp, fg = (uintptr_t)fake_gil;
		int32_t v;

		CHECK(pyabi_gil_holder(row, runtime, fi, cur_sym, rd, &h) == -ENOENT,
		      "1.11 ceval.gil NULL: -ENOENT");
		memcpy(fake_interp + row->interp_gil_ptr, &fg, sizeof(fg));
		v = -1;
		memcpy(fake_gil + row->gil_locked, &v, sizeof(v));
		CHECK(pyabi_gil_holder(row, runtime, fi, cur_sym, rd, &h) == -ENOENT,
		      "1.12 locked == -1: -ENOENT");
		v = 0x55;
		memcpy(fake_gil + row->gil_locked, &v, sizeof(v));
		CHECK(pyabi_gil_holder(row, runtime, fi, cur_sym, rd, &h) == -EPROTO &&
			      h == 7, "1.13 locked garbage: -EPROTO");
		v = 0;
		memcpy(fake_gil + row->gil_locked, &v, sizeof(v));
		memcpy(fake_gil + row->gil_holder, &fi, sizeof(fi));
		CHECK(pyabi_gil_holder(row, runtime, fi, cur_sym, rd, &h) == 0 && h == 0,
		      "1.14 unlocked with a last_holder: free");
	}
#endif
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gil_embed gil_threads.py\n");
		return 2;
	}
	row = pyabi_find(PY_MAJOR_VERSION, PY_MINOR_VERSION);
	if (!row) {
		fprintf(stderr, "gil_embed: no row for %d.%d\n", PY_MAJOR_VERSION,
			PY_MINOR_VERSION);
		return 1;
	}
	Py_Initialize();
	printf("gil_embed: %s\n", Py_GetVersion());
	runtime = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
	cur_sym = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyThreadState_Current");
	check_alone();
	run_threads(argv[1]);
	return check_summary();
}
