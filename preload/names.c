/*
 * names.c - see names.h. names_refresh runs on the application's main
 * thread with the GIL held (a pending call); everything else on the agent.
 */
#include "names.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "guard.h"
#include "sampler.h"
#include "tid.h"

typedef void PyObject;
typedef long Py_ssize_t;

static struct {
	int (*add_pending)(int (*)(void *), void *);
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
	const char *name_attr;
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
static int pending; /* a refresh is queued (atomic) */

#define SYM(field, name) (api.field = (__typeof__(api.field))dlsym(RTLD_DEFAULT, name))

int names_init(int py_major)
{
	SYM(add_pending, "Py_AddPendingCall");
	SYM(modules, "PyImport_GetModuleDict");
	SYM(dict_get, "PyDict_GetItemString");
	SYM(getattr, "PyObject_GetAttrString");
	SYM(dict_next, "PyDict_Next");
	SYM(fetch, "PyErr_Fetch");
	SYM(restore, "PyErr_Restore");
	SYM(clear, "PyErr_Clear");
	SYM(decref, "Py_DecRef");
	if (py_major == 2) {
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
	api.ok = api.add_pending && api.modules && api.dict_get &&
		 api.getattr && api.dict_next && api.fetch && api.restore &&
		 api.clear && api.decref && api.as_ulong && api.as_utf8 &&
		 api.as_long;
	return api.ok ? 0 : -ENOSYS;
}

/* The pending call: main thread, GIL held. Never fails (returning -1
 * would raise an exception in the program). */
static int names_refresh(void *arg)
{
	(void)arg;
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
		PyObject *native = api.getattr(thread, "_native_id");
		int tid = 0;
		if (native) {
			tid = (int)api.as_long(native);
			api.decref(native);
		}
		api.clear(); /* no _native_id before 3.8, or not an int */
		if (tid <= 0)
			tid = tid_of((uintptr_t)ident);
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
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	return 0;
}

/* 3.8 only: once finalization has begun, its Py_AddPendingCall prints
 * a SystemError on the program's stderr. Check the flag first; the two
 * can still cross in the nanoseconds between the check and the call. */
static int finishing(void)
{
	const struct pyabi *a = sampler.abi;
	int v = 0;
	if (a->rt_pending_finishing == PYABI_NONE || !sampler.runtime)
		return 0;
	if (guard_copy(&v, (void *)(sampler.runtime + a->rt_pending_finishing),
		       sizeof v) < 0)
		return 1;
	return v != 0;
}

void names_request(void)
{
	if (!api.ok || !sampler.is_initialized() || finishing())
		return;
	if (__atomic_exchange_n(&pending, 1, __ATOMIC_ACQ_REL))
		return;
	if (api.add_pending(names_refresh, NULL) != 0)
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}

void names_after_fork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
}

unsigned names_generation(void)
{
	pthread_mutex_lock(&lock);
	unsigned g = generation;
	pthread_mutex_unlock(&lock);
	return g;
}

int names_get(int tid, char *buf, size_t cap)
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
