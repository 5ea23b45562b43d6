/*
 * remote_names.c - a thread's name as its program gave it, read from the
 * target's memory (remote.h's remote_thread_name): the name of the
 * threading.Thread whose ident is the thread state's thread_id.
 *
 * CPython before 3.14 gives the OS no thread name, so /proc's comm says
 * "python3" for every thread; the name the program chose lives only in
 * its threading module: sys.modules (the interpreter's modules dict) ->
 * "threading" -> its dict's "_active" (ident -> Thread) -> the Thread's
 * instance attribute "_name" (2.7: "_Thread__name", name-mangled). The
 * dicts are read with the library's own readers (sig_pydict.c's pyprof
 * build, pyprof/walk.h), the string with pycode.h's decoder; every
 * layout is the row's (interp_modules, module_dict, pydict.h's). An
 * int key is found by its stored hash, its value below 2**61 - 1 (a
 * pthread_t is an address, below 2**47). The _active dict's address is
 * kept per interpreter and found again when a thread is not in it.
 *
 * A hostile target can hold anything there: every read is bounded and
 * checked (walk_remote_guard, type checks, pydict.h's caps), and any
 * failure gives the OS's name (comm), as do threads that threading does
 * not know or knows only as a _DummyThread ("Dummy-N": a thread made
 * outside threading, whose OS name says more).
 *
 * Single-threaded, in the pyprof process: once per new thread (the
 * sampler keeps the names, remote_sample.c; dump names each once).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pyprof/pyabi.h"
#include "pyprof/pycode.h"
#include "pyprof/walk.h"
#include "remote/remote.h"

/* an int's hash is its value below this (sys.hash_info.modulus) */
#define HASH_MODULUS ((1ull << 61) - 1)

void remote_names_open(struct remote_target *t)
{
	const struct remote_py *py = t->py;
	/* 2.7's str is PyString (the row's py2_c_api) */
	const char *str = t->env.abi && t->env.abi->py2_c_api
				  ? "PyString_Type"
				  : "PyUnicode_Type";

	t->dict_env.abi = t->env.abi;
	if (remote_py_symbol(py, "PyDict_Type", &t->dict_env.dict_type) < 0 ||
	    remote_py_symbol(py, str, &t->dict_env.str_type) < 0)
		t->dict_env.dict_type = t->dict_env.str_type = 0;
}

struct lookup {
	const struct remote_target *t;
	uint64_t interp, ident;
	uint64_t active, name; /* found */
};

/* sys.modules["threading"].__dict__["_active"] into l->active. */
static void find_active(void *arg)
{
	struct lookup *l = arg;
	const struct walk_dict_env *env = &l->t->dict_env;
	const struct pyabi *a = env->abi;
	uint64_t modules, mod;

	modules = walk_remote_load(l->interp + (uint64_t)a->interp_modules, 8);
	mod = pydict_get_str_remote(env, modules, "threading");
	if (!mod)
		return;
	l->active = pydict_get_str_remote(
		env, walk_remote_load(mod + (uint64_t)a->module_dict, 8),
		"_active");
}

/* _active[ident]._name into l->name. */
static void find_name(void *arg)
{
	struct lookup *l = arg;
	const struct walk_dict_env *env = &l->t->dict_env;
	uint64_t thread = pydict_get_hash_remote(env, l->active,
						 (int64_t)l->ident);

	if (thread)
		l->name = pydict_attr_remote(env, thread,
					     env->abi->py2_c_api ? "_Thread__name"
								 : "_name");
}

/* The Thread's name object for r, or 0; t->active kept or found again. */
static uint64_t name_object(struct remote_target *t,
			    const struct remote_thread *r)
{
	struct lookup l = { t, r->interp, r->pthread, 0, 0 };

	if (t->active && t->active_interp == r->interp) {
		l.active = t->active;
		if (walk_remote_guard(find_name, &l) == 0 && l.name)
			return l.name;
		l.active = 0;
	}
	if (walk_remote_guard(find_active, &l) < 0 || !l.active ||
	    (l.active == t->active && t->active_interp == r->interp))
		return 0; /* not found, or the one just read */
	t->active = l.active;
	t->active_interp = r->interp;
	if (walk_remote_guard(find_name, &l) < 0)
		return 0;
	return l.name;
}

/* Whether name is threading's "Dummy-N" (a _DummyThread's). */
static int dummy_name(const char *name)
{
	size_t n;

	if (strncmp(name, "Dummy-", 6) != 0)
		return 0;
	n = strspn(name + 6, "0123456789");
	return n && !name[6 + n];
}

int remote_thread_pyname(struct remote_target *t,
			 const struct remote_thread *r, char *out, size_t n)
{
	const struct pyabi *a = t->env.abi;
	uint64_t obj, type = 0;

	if (!n || !t->dict_env.dict_type || !r->interp || !r->pthread ||
	    r->pthread >= HASH_MODULUS || a->interp_modules < 0 ||
	    a->module_dict <= 0)
		return -1;
	walk_remote_afresh(); /* read the target as it is now */
	obj = name_object(t, r);
	if (!obj || remote_mem_read(obj + (uint64_t)a->ob_type, &type, sizeof type) != 0 ||
	    type != t->dict_env.str_type ||
	    pycode_read_str(a, (const void *)(uintptr_t)obj, remote_mem_copy,
			    out, n) < 0 ||
	    !out[0] || dummy_name(out)) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}
