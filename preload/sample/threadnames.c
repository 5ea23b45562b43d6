/*
 * threadnames.c - see threadnames.h. threadnames_refresh runs on the names
 * thread with the GIL held; the rest on the agent, except threadnames_stop
 * (destructor).
 */
#include "threadnames.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "base/clock.h"
#include "base/guard.h"
#include "base/sampler.h"
#include "threads.h"
#include "base/tid.h"
#include "ownthread.h"

typedef void PyObject;
typedef long Py_ssize_t;

static struct {
	int (*gil_ensure)(void);
	void (*gil_release)(int);
	int (*threads_initialized)(void); /* 2.7, 3.6: GIL created yet? */
	PyObject *(*modules)(void);
	PyObject *(*dict_get)(PyObject *, const char *);
	PyObject *(*getattr)(PyObject *, const char *);
	int (*dict_next)(PyObject *, Py_ssize_t *, PyObject **, PyObject **);
	unsigned long (*as_ulong)(PyObject *);
	long (*as_long)(PyObject *);
	const char *(*as_utf8)(PyObject *);
	void (*fetch)(PyObject **, PyObject **, PyObject **);
	void (*restore)(PyObject *, PyObject *, PyObject *);
	void (*clear)(void);
	void (*decref)(PyObject *);
	int (*is_finalizing)(void); /* 3.13+ Py_IsFinalizing, else _Py_ */
	/* the exit gate (gate_register) */
	PyObject *(*import)(const char *);
	PyObject *(*cfunction_new)(void *, PyObject *, PyObject *);
	PyObject *(*call_args)(PyObject *, ...);
	void *(*save_thread)(void);
	void (*restore_thread)(void *);
	void (*incref)(PyObject *);
	PyObject *none;
	int (*add_pending)(int (*)(void *), void *);
	const char *name_attr;
	int py2; /* 2.x's C API: the row's py2_c_api */
	int ok;
} api;

struct entry {
	int tid;
	char name[NAMES_LEN];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry table[NAMES_MAX];
static int n_table;
static unsigned generation;

/* the names thread */
static pthread_t threadnames_thread;
static int started;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int asked, stopping;
static int unjoined;	/* asked to stop, not waited for yet      */
static int in_gil;	/* taking or holding the GIL (atomic)     */
static int forking_tid; /* the thread that called fork()            */
/* Looks for threadnames_answered: the number of the last look begun
 * (wake_lock) and of the last one that read the names (atomic). */
static unsigned looks_begun, looks_done;
/* The exit gate: held by the names thread from before it asks for the
 * GIL until it has given it back; closed for good by gate_close, which
 * Python's atexit runs on the finalizing thread before finalization
 * begins (gate_register). */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static int gate_closed;	       /* no PyGILState_Ensure any more (atomic)   */
static int gate_tried;	       /* gate_register ran (GIL)                  */
static int gate_in_list;       /* gate_close is in atexit's list (atomic)  */
static int gate_pending;       /* 3.9+: registered by the main thread      */
static int gate_asked;	       /* its pending call is queued (agent)       */
static uint64_t gate_asked_ns; /* when (atomic)                        */
static int (*hook_has_work)(void);
static void (*hook)(void); /* threadnames_gil_hook                      */

void threadnames_gil_hook(int (*has_work)(void), void (*fn)(void))
{
	hook_has_work = has_work;
	hook = fn;
}

#define SYM(field, name) (api.field = (__typeof__(api.field))dlsym(RTLD_DEFAULT, name))

int threadnames_init(const struct pyabi *abi)
{
	SYM(gil_ensure, "PyGILState_Ensure");
	SYM(gil_release, "PyGILState_Release");
	SYM(threads_initialized, "PyEval_ThreadsInitialized");
	SYM(modules, "PyImport_GetModuleDict");
	SYM(dict_get, "PyDict_GetItemString");
	SYM(getattr, "PyObject_GetAttrString");
	SYM(dict_next, "PyDict_Next");
	SYM(fetch, "PyErr_Fetch");
	SYM(restore, "PyErr_Restore");
	SYM(clear, "PyErr_Clear");
	SYM(decref, "Py_DecRef");
	if (!SYM(is_finalizing, "Py_IsFinalizing"))
		SYM(is_finalizing, "_Py_IsFinalizing");
	SYM(import, "PyImport_ImportModule");
	SYM(cfunction_new, "PyCFunction_NewEx");
	SYM(call_args, "PyObject_CallFunctionObjArgs");
	SYM(save_thread, "PyEval_SaveThread");
	SYM(restore_thread, "PyEval_RestoreThread");
	SYM(incref, "Py_IncRef");
	SYM(none, "_Py_NoneStruct");
	SYM(add_pending, "Py_AddPendingCall");
	api.py2 = abi->py2_c_api;
	if (api.py2) {
		/* 2.7: idents are ints, names are byte strings, and the
		 * attribute is name-mangled */
		SYM(as_ulong, "PyInt_AsUnsignedLongMask");
		SYM(as_utf8, "PyString_AsString");
		api.name_attr = "_Thread__name";
	} else {
		SYM(as_ulong, "PyLong_AsUnsignedLongMask");
		SYM(as_utf8, "PyUnicode_AsUTF8");
		api.name_attr = "_name";
	}
	SYM(as_long, "PyLong_AsLong");
	api.ok = api.gil_ensure && api.gil_release && api.modules && api.dict_get &&
		 api.getattr && api.dict_next && api.fetch && api.restore &&
		 api.clear && api.decref && api.as_ulong && api.as_utf8 &&
		 api.as_long;
	return api.ok ? 0 : -ENOSYS;
}

/* Names thread, GIL held. */
static void threadnames_refresh(void)
{
	PyObject *et, *ev, *tb;
	static struct entry fresh[NAMES_MAX];
	int n = 0;

	api.fetch(&et, &ev, &tb);
	PyObject *mods = api.modules();
	PyObject *threading = mods ? api.dict_get(mods, "threading") : NULL;
	PyObject *active = threading ? api.getattr(threading, "_active") : NULL;
	if (!active)
		api.clear();
	Py_ssize_t pos = 0;
	PyObject *key, *thread;
	while (active && n < NAMES_MAX &&
	       api.dict_next(active, &pos, &key, &thread)) {
		unsigned long ident = api.as_ulong(key);
		PyObject *name = api.getattr(thread, api.name_attr);
		/* the ident (a pthread_t) first: in a forked child the main
		 * thread's _native_id is still its tid in the parent */
		int tid = tid_of((uintptr_t)ident);
		if (tid <= 0) {
			PyObject *native = api.getattr(thread, "_native_id");
			if (native) {
				tid = (int)api.as_long(native);
				api.decref(native);
			}
			api.clear(); /* none before 3.8, or not an int */
		}
		const char *s = name ? api.as_utf8(name) : NULL;
		if (tid > 0 && s) {
			fresh[n].tid = tid;
			strncpy(fresh[n].name, s, NAMES_LEN - 1);
			fresh[n].name[NAMES_LEN - 1] = 0;
			n++;
		}
		api.clear();
		if (name)
			api.decref(name);
	}
	if (active)
		api.decref(active);
	api.restore(et, ev, tb);

	pthread_mutex_lock(&lock);
	memcpy(table, fresh, (size_t)n * sizeof *table);
	n_table = n;
	generation++;
	pthread_mutex_unlock(&lock);
}

/* Once finalization has begun, stay away: Py_IsFinalizing where the
 * interpreter has it, and 3.8's ceval.pending.finishing, both set early
 * in Py_FinalizeEx. */
static int finishing(void)
{
	const struct pyabi *a = sampler.abi;
	int v = 0;
	/* Any version that says: past this, PyGILState_Ensure can meet a
	 * runtime being torn down (3.14: "Fatal Python error:
	 * gilstate_tss_set: failed to set current tstate (TSS)") */
	if (api.is_finalizing && api.is_finalizing())
		return 1;
	if (a->rt_pending_finishing == PYABI_NONE || !sampler.runtime)
		return 0;
	if (guard_copy(&v, (void *)(sampler.runtime + a->rt_pending_finishing),
		       sizeof v) < 0)
		return 1;
	return v != 0;
}

/* Whether the main interpreter has more than one thread state. With one,
 * there is no thread to name but the main thread, and we do not take the
 * GIL at all: our own thread state would otherwise show up where the
 * program looks at all threads (faulthandler's report of a crash). The
 * main interpreter is the last of the list (its head is the newest
 * subinterpreter, whose worker thread is often its only one). */
static int several_threads(void)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t interp = (uintptr_t)sampler.interp_head(), ts = 0, next = 0;
	for (int i = 0; interp && i < 64; i++) {
		uintptr_t later = 0;
		if (guard_copy(&later, (void *)(interp + a->interp_next),
			       sizeof later) < 0)
			return 0;
		if (!later)
			break;
		interp = later;
	}
	if (!interp ||
	    guard_copy(&ts, (void *)(interp + a->interp_tstate_head),
		       sizeof ts) < 0 ||
	    !ts ||
	    guard_copy(&next, (void *)(ts + a->ts_next), sizeof next) < 0)
		return 0;
	return next != 0;
}

/* With one thread state there is nothing to ask the interpreter: the one
 * Python thread is the main thread, named "MainThread" unless the table
 * already has its name (a refresh while there were others, or the
 * thread that forked this process). Names thread. */
static void name_alone(void)
{
	int tid = (int)getpid();
	pthread_mutex_lock(&lock);
	int known = 0;
	for (int i = 0; i < n_table && !known; i++)
		known = table[i].tid == tid;
	if (!known && n_table < NAMES_MAX) {
		table[n_table].tid = tid;
		strcpy(table[n_table].name, "MainThread");
		n_table++;
		generation++;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * The exit gate. finishing() is read before PyGILState_Ensure, and on a
 * busy machine the names thread can lose its CPU between the two for as
 * long as the main thread takes to finalize the whole runtime: Ensure
 * then meets a runtime torn down (3.14: a crash in gilstate_tss_set). So
 * the names thread takes gate_lock before it reads finishing() and keeps
 * it until it has released the GIL, and a function of ours in Python's
 * atexit list (run by Py_FinalizeEx on the finalizing thread, after the
 * program's threads were joined and before finalization begins) closes
 * the gate: it gives up the GIL (the names thread may be waiting for it,
 * gate_lock held), takes gate_lock, so the names thread is out of its
 * critical section, sets gate_closed and takes the GIL back. From then on
 * the names thread never calls Ensure. On 3.9+ the main thread puts it in
 * the list (a pending call the agent asks for once the interpreter is
 * up) and the names thread takes the GIL only once it is there; before
 * 3.9 a pending call not yet run slows every other thread down, so the
 * names thread registers it at its first Ensure, which alone is guarded
 * by finishing() only (docs/design.md, "The library's threads").
 */
struct method_def { /* PyMethodDef, the same on 2.7 to 3.15 */
	const char *name;
	PyObject *(*fn)(PyObject *, PyObject *);
	int flags;
	const char *doc;
};
#define METH_NOARGS 0x0004

static PyObject *gate_close(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	void *ts = api.save_thread();
	pthread_mutex_lock(&gate_lock);
	__atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&gate_lock);
	api.restore_thread(ts);
	api.incref(api.none);
	return api.none;
}

static struct method_def gate_def = {
	"_pyprof_names_gate", gate_close, METH_NOARGS,
	"pyprof: the names thread stops taking the GIL before finalization"
};

/* GIL held (the main thread's pending call, or the names thread before
 * 3.9): gate_close into atexit's list, once. On 3.x atexit is a built-in
 * module; on 2.7 a Python one, used only if the program imported it
 * (nothing is imported for it there). */
static void gate_register(void)
{
	if (gate_tried || !api.import || !api.cfunction_new ||
	    !api.call_args || !api.save_thread || !api.restore_thread ||
	    !api.incref || !api.none)
		return;
	gate_tried = 1; /* one try: a failure is not retried */
	PyObject *et, *ev, *tb, *mod = NULL;
	api.fetch(&et, &ev, &tb);
	if (!api.py2) {
		mod = api.import("atexit");
	} else {
		PyObject *mods = api.modules();
		mod = mods ? api.dict_get(mods, "atexit") : NULL; /* borrowed */
		if (mod)
			api.incref(mod);
	}
	PyObject *reg = mod ? api.getattr(mod, "register") : NULL;
	PyObject *fn = reg ? api.cfunction_new(&gate_def, NULL, NULL) : NULL;
	PyObject *res = fn ? api.call_args(reg, fn, NULL) : NULL;
	if (res) {
		__atomic_store_n(&gate_in_list, 1, __ATOMIC_RELEASE);
		api.decref(res);
	}
	if (fn)
		api.decref(fn);
	if (reg)
		api.decref(reg);
	if (mod)
		api.decref(mod);
	api.clear();
	api.restore(et, ev, tb);
}

/* The main thread, GIL held: Py_AddPendingCall's callback. */
static int gate_register_pending(void *arg)
{
	(void)arg;
	gate_register();
	return 0;
}

/* Whether the names thread may ask for the GIL: not once the gate is
 * closed; on 3.9+ once it is in atexit's list, or when the main thread
 * has not run the pending call for GATE_WAIT_MS (blocked in a join since
 * before the library came: an attach); then the names thread puts it
 * there itself, at its first Ensure, as before 3.9. */
#define GATE_WAIT_MS 1000
static int gate_open(void)
{
	if (__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
		return 0;
	if (!gate_pending || __atomic_load_n(&gate_in_list, __ATOMIC_ACQUIRE))
		return 1;
	uint64_t t = __atomic_load_n(&gate_asked_ns, __ATOMIC_ACQUIRE);
	return t && mono_ns() - t > GATE_WAIT_MS * 1000000ull;
}

static void *threadnames_main(void *arg)
{
	(void)arg;
	threads_internal_self();
	pthread_mutex_lock(&wake_lock);
	while (!stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += NAMES_PERIOD_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (!asked && !stopping &&
		       pthread_cond_timedwait(&wake, &wake_lock, &until) == 0)
			;
		asked = 0;
		if (stopping)
			break;
		unsigned look = ++looks_begun;
		int looked = 0;
		pthread_mutex_unlock(&wake_lock);
		/* Only while the interpreter runs, and (2.7, 3.6) only once it
		 * has a GIL: before that, taking "the GIL" would not exclude
		 * the main thread. */
		/* (not while dormant: control.h) */
		pthread_mutex_lock(&gate_lock);
		if (gate_open() &&
		    __atomic_load_n(&sampler.active, __ATOMIC_ACQUIRE) &&
		    sampler.is_initialized() && !finishing()) {
			int several = several_threads();
			int more = hook && hook_has_work();
			if (!several) {
				name_alone();
				looked = 1;
			}
			if ((several || more) && (!api.threads_initialized ||
						  api.threads_initialized())) {
				__atomic_store_n(&in_gil, 1,
						 __ATOMIC_SEQ_CST);
				int g = __atomic_load_n(&stopping,
							__ATOMIC_SEQ_CST)
						? -1
						: api.gil_ensure();
				if (g == -1) { /* a fork is waiting */
					__atomic_store_n(&in_gil, 0,
							 __ATOMIC_SEQ_CST);
					pthread_mutex_unlock(&gate_lock);
					pthread_mutex_lock(&wake_lock);
					continue;
				}
				/* finalization begins under the GIL: asked
				 * again with it held, the answer holds until we
				 * release it (the first Ensure, before the gate
				 * is in atexit's list, may come this late) */
				int fin = finishing();
				if (!fin && !__atomic_load_n(&gate_in_list,
							     __ATOMIC_ACQUIRE))
					gate_register();
				if (several && !fin) {
					threadnames_refresh();
					looked = 1;
				}
				if (more && !fin)
					hook();
				api.gil_release(g);
				__atomic_store_n(&in_gil, 0, __ATOMIC_SEQ_CST);
			}
		}
		pthread_mutex_unlock(&gate_lock);
		if (looked)
			__atomic_store_n(&looks_done, look, __ATOMIC_RELEASE);
		pthread_mutex_lock(&wake_lock);
	}
	pthread_mutex_unlock(&wake_lock);
	threads_internal_leave();
	return NULL;
}

/* Agent, the interpreter up: on 3.9+ asks the main thread to put the
 * exit gate in atexit's list, until the request is queued. */
static void gate_ask(void)
{
	const struct pyabi *a = sampler.abi;
	if (gate_asked || !a || !a->pending_calls_cheap || !api.add_pending)
		return;
	gate_pending = 1; /* the names thread waits for it from now on */
	if (!__atomic_load_n(&gate_asked_ns, __ATOMIC_ACQUIRE))
		__atomic_store_n(&gate_asked_ns, mono_ns(), __ATOMIC_RELEASE);
	if (api.add_pending(gate_register_pending, NULL) == 0)
		gate_asked = 1;
}

void threadnames_start(void)
{
	if (!api.ok)
		return;
	gate_ask();
	if (started && unjoined) {
		/* a pause that could not wait: gone yet? */
		if (pthread_tryjoin_np(threadnames_thread, NULL) != 0)
			return;
		started = unjoined = 0;
	}
	if (started)
		return;
	stopping = 0;
	if (ownthread_create(&threadnames_thread, threadnames_main, NULL,
			     "pyprof-names") == 0)
		started = 1;
}

/* Sets *flag (asked or stopping) under the wake lock and wakes the names
 * thread, if it runs. */
static void wake_with(int *flag)
{
	if (!started)
		return;
	pthread_mutex_lock(&wake_lock);
	__atomic_store_n(flag, 1, __ATOMIC_SEQ_CST); /* (in_gil: threadnames_pause) */
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&wake_lock);
}

unsigned threadnames_request(void)
{
	if (!started)
		return 0;
	pthread_mutex_lock(&wake_lock);
	unsigned ticket = looks_begun;
	__atomic_store_n(&asked, 1, __ATOMIC_SEQ_CST);
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&wake_lock);
	return ticket;
}

int threadnames_answered(unsigned ticket)
{
	if (!api.ok || !started || unjoined ||
	    __atomic_load_n(&stopping, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
		return 1;
	unsigned done = __atomic_load_n(&looks_done, __ATOMIC_ACQUIRE);
	return (int)(done - ticket) >= 1;
}

void threadnames_stop(void)
{
	wake_with(&stopping);
	if (started && !unjoined)
		pthread_detach(threadnames_thread);
	unjoined = 0;
}

int threadnames_pause(void)
{
	if (!started)
		return 0;
	wake_with(&stopping);
	/* Waiting for the GIL, which the forking thread holds (it takes
	 * it only when the program has Python threads of its own: their
	 * fork warning is right anyway): no use waiting for it. Otherwise
	 * it leaves at once, unless the machine is too busy to run it: a
	 * bounded wait. */
	if (__atomic_load_n(&in_gil, __ATOMIC_SEQ_CST)) {
		unjoined = 1;
		return 0;
	}
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += NAMES_PAUSE_WAIT_MS * 1000000L;
	deadline.tv_sec += deadline.tv_nsec / 1000000000L;
	deadline.tv_nsec %= 1000000000L;
	if (pthread_timedjoin_np(threadnames_thread, NULL, &deadline) != 0) {
		unjoined = 1;
		return 0;
	}
	started = unjoined = 0;
	return 1;
}

void threadnames_fork_prepare(void)
{
	forking_tid = (int)syscall(SYS_gettid);
}

void threadnames_after_fork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	pthread_mutex_init(&wake_lock, NULL);
	pthread_mutex_init(&gate_lock, NULL);
	pthread_cond_init(&wake, NULL);
	started = 0;
	unjoined = 0;
	asked = stopping = 0;
	/* The parent's threads are not ours; the one that forked is our
	 * main thread, under its new tid, with the name it had. */
	int keep = -1;
	for (int i = 0; i < n_table && keep < 0; i++)
		if (table[i].tid == forking_tid)
			keep = i;
	if (keep >= 0) {
		table[0] = table[keep];
		table[0].tid = (int)getpid();
	}
	n_table = keep >= 0;
	generation++;
}

unsigned threadnames_generation(void)
{
	pthread_mutex_lock(&lock);
	unsigned g = generation;
	pthread_mutex_unlock(&lock);
	return g;
}

int threadnames_get(int tid, char *buf, size_t cap)
{
	int found = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < n_table; i++)
		if (table[i].tid == tid) {
			strncpy(buf, table[i].name, cap - 1);
			buf[cap - 1] = 0;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&lock);
	return found;
}
