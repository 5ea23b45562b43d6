/*
 * pyabi_objects.h - the row's object fields (the asyncio view's and the
 * labels': types, instance dictionaries and their keys, sets, lists, weak
 * references, bound methods, cells, partials, ints, a C task's first
 * callback) checked against live objects of the embedded interpreter.
 *
 * Included once, by pyabi_embed.c (whose check.h counters it shares,
 * and whose rd_ptr it reads with). Objects are made by a few lines of
 * Python (OBJECTS below), each field read through the row and compared
 * with what the object is known to hold: the offsets are never compared
 * with this file's own offsetof, which comes from the same headers. Then
 * the row's facts the interpreter shows: its C API, its frame evaluator's
 * symbol, asyncio's registry, whether os.fork warns of a thread (a child
 * is forked, which exits at once); a context's HAMT. Case numbers 7.x.
 */
#ifndef PYPROF_TEST_PYABI_OBJECTS_H
#define PYPROF_TEST_PYABI_OBJECTS_H

#include <dlfcn.h>

#if PY_MAJOR_VERSION >= 3
#define PyInt_AsLong PyLong_AsLong
#endif

/* Runs on 2.7 too; asyncio's part from 3.7, by exec. */
static const char OBJECTS[] =
	"import functools, weakref, sys\n"
	"class K(object):\n"
	"    def __init__(self):\n"
	"        self.first = 'one'\n"
	"        self.second = 2\n"
	"    def m(self):\n"
	"        pass\n"
	"k, untouched = K(), K()\n"
	"kd = k.__dict__\n"
	"bound = k.m\n"
	"def outer():\n"
	"    held = k\n"
	"    def inner():\n"
	"        return held\n"
	"    return inner\n"
	"inner = outer()\n"
	"part = functools.partial(len, 'x')\n"
	"ref = weakref.ref(k)\n"
	"small, big = 12345, 2 ** 40 + 7\n"
	"st = set(['a', 'b', 'c'])\n"
	"lst = [k]\n"
	"d = dict(('key%d' % i, i) for i in range(20))\n"
	"g = {1: 'one', 'a': 'two'}\n"
	"task = cb = None\n"
	"if (3, 7) <= sys.version_info[:2] < (3, 14):\n"
	"    exec('''\n"
	"import asyncio\n"
	"loop = asyncio.new_event_loop()\n"
	"async def body():\n"
	"    pass\n"
	"task = loop.create_task(body())\n"
	"def cb(t):\n"
	"    pass\n"
	"task.add_done_callback(cb)\n"
	"''')\n"
	/* the facts: asyncio's, and whether os.fork warns of a thread */
	"names = eager = 0\n"
	"if sys.version_info[:2] >= (3, 7):\n"
	"    import asyncio.tasks\n"
	"    names = int(hasattr(asyncio.Task, 'get_name'))\n"
	"    eager = int(hasattr(asyncio.tasks, '_eager_tasks'))\n"
	"import os, threading, warnings\n"
	"ev = threading.Event()\n"
	"th = threading.Thread(target=ev.wait)\n"
	"th.start()\n"
	"with warnings.catch_warnings(record=True) as caught:\n"
	"    warnings.simplefilter('always')\n"
	"    pid = os.fork()\n"
	"    if pid == 0:\n"
	"        os._exit(0)\n"
	"    os.waitpid(pid, 0)\n"
	"ev.set()\n"
	"th.join()\n"
	"fork_warns = int(any('multi-threaded' in str(w.message) for w in caught))\n"
	"ctx = cv = None\n"
	"if sys.version_info[:2] >= (3, 7):\n"
	"    import contextvars\n"
	"    cv = contextvars.ContextVar('pyabi')\n"
	"    ctx = contextvars.Context()\n"
	"    ctx.run(cv.set, 'v')\n"
	/* an array node (40 variables), and a collision node (two of one
	 * 32-bit hash, found among many) */
	"    def fold(h):\n"
	"        h &= 2 ** 64 - 1\n"
	"        f = (h & 0xffffffff) ^ (h >> 32)\n"
	"        return f - 2 ** 32 if f >= 2 ** 31 else f\n"
	"    def context(vs):\n"
	"        c = contextvars.Context()\n"
	"        for v in vs:\n"
	"            c.run(v.set, str(v.name))\n"
	"        return c\n"
	"    many = [contextvars.ContextVar('m%d' % i) for i in range(40)]\n"
	"    seen, pair, keep = {}, None, []\n"
	"    for i in range(1 << 20):\n"
	"        v = contextvars.ContextVar('c%d' % i)\n"
	"        keep.append(v)\n"
	"        o = seen.setdefault(fold(hash(v)), v)\n"
	"        if o is not v:\n"
	"            pair = [o, v]\n"
	"            break\n"
	"    del keep, seen\n"
	"    lookups = [(context(many), many), (context(pair), pair)]\n"
	"    lookups = [(c, v, fold(hash(v)), c[v]) for c, vs in lookups for v in vs]\n";

static PyObject *obj_ns;

static PyObject *obj(const char *name)
{
	return PyDict_GetItemString(obj_ns, name);
}

static uintptr_t at(PyObject *o, int off)
{
	return rd_ptr((uintptr_t)o + (uintptr_t)(intptr_t)off);
}

static int64_t rd_i64(uintptr_t a)
{
	int64_t v;

	memcpy(&v, (const void *)a, sizeof(v));
	return v;
}

static uint8_t rd_u8(uintptr_t a)
{
	return *(const uint8_t *)a;
}

/* Whether str object s (3.x) holds the ASCII text want, by the API. */
static int str_is(uintptr_t s, const char *want)
{
#if PY_MAJOR_VERSION >= 3
	PyObject *o = (PyObject *)s;

	return s && PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, want) == 0;
#else
	(void)s;
	(void)want;
	return 0;
#endif
}

/* The value under key in dict object dct, read through the row alone
 * (as sig_pydict.c does, for combined and split tables); 0 if absent. */
static uintptr_t row_dict_get(uintptr_t dct, const char *key)
{
	uintptr_t keys = rd_ptr(dct + (uintptr_t)row->dict_ma_keys);
	uintptr_t values = rd_ptr(dct + (uintptr_t)row->dict_ma_values);
	uintptr_t indices = keys + (uintptr_t)row->dk_indices, entries;
	int size, key_at, value_at;

	if (row->dict_old_keys) {
		int64_t dk_size = rd_i64(keys + (uintptr_t)row->dk_size);

		entries = indices + (uintptr_t)(dk_size * (dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2
												   : 4));
	} else {
		entries = indices + ((uintptr_t)1 << rd_u8(keys + (uintptr_t)row->dk_log2_index_bytes));
	}
	if (row->dict_old_keys ||
	    rd_u8(keys + (uintptr_t)row->dk_kind) == (uint8_t)row->dk_kind_general) {
		size = row->dict_entry_size;
		key_at = row->dict_entry_key;
		value_at = row->dict_entry_value;
	} else {
		size = row->dict_uentry_size;
		key_at = row->dict_uentry_key;
		value_at = row->dict_uentry_value;
	}
	for (int64_t i = 0; i < rd_i64(keys + (uintptr_t)row->dk_nentries) && i < 64; i++) {
		uintptr_t e = entries + (uintptr_t)(i * size);

		if (!str_is(rd_ptr(e + (uintptr_t)key_at), key))
			continue;
		if (values)
			return rd_ptr(values + (uintptr_t)row->dict_values_at + 8 * (uintptr_t)i);
		return rd_ptr(e + (uintptr_t)value_at);
	}
	return 0;
}

/* 7.3: an instance's attributes where its version keeps them. */
static void check_instance(void)
{
	PyObject *k = obj("k"), *un = obj("untouched"), *kd = obj("kd");
	uintptr_t tp = (uintptr_t)Py_TYPE(k);
	uint64_t flags = rd_ptr(tp + (uintptr_t)row->tp_flags);

	if (row->dict_kind == PYABI_DICT_OFFSET) {
		int64_t off = rd_i64(tp + (uintptr_t)row->tp_dictoffset);

		CHECK(off > 0 && at(k, (int)off) == (uintptr_t)kd, "7.3 tp_dictoffset");
		CHECK(row_dict_get((uintptr_t)kd, "second") == (uintptr_t)PyDict_GetItemString(kd, "second"),
		      "7.3 a split table's value, through the keys");
	}
	if (row->dict_kind < PYABI_DICT_MANAGED)
		return;
	CHECK(flags & row->tpflag_managed_dict, "7.3 Py_TPFLAGS_MANAGED_DICT");
	CHECK(at(k, row->obj_managed_dict) == (uintptr_t)kd, "7.3 the managed dict");
	CHECK(row_dict_get((uintptr_t)kd, "second") == (uintptr_t)PyDict_GetItemString(kd, "second"),
	      "7.3 the managed dict's value, through the keys");
	if (row->dict_kind == PYABI_DICT_MANAGED) {
		uintptr_t v = at(un, row->obj_managed_values);

		CHECK(at(un, row->obj_managed_dict) == 0 && v &&
			      rd_ptr(v + (uintptr_t)row->dict_values_at) ==
				      (uintptr_t)PyObject_GetAttrString(un, "first"),
		      "7.3 3.11: the values array before a dict is made");
	} else if (row->dict_kind == PYABI_DICT_TAGGED) {
		uintptr_t w = at(un, row->obj_managed_dict);

		CHECK((w & 1) && rd_ptr(w + 1 + (uintptr_t)row->dict_values_at) ==
					 (uintptr_t)PyObject_GetAttrString(un, "first"),
		      "7.3 3.12: the tagged values before a dict is made");
	} else {
		uintptr_t in = (uintptr_t)un + (uintptr_t)rd_i64(tp + (uintptr_t)row->tp_basicsize);

		CHECK((flags & row->tpflag_inline_values) && rd_u8(in + (uintptr_t)row->dictvalues_valid) &&
			      rd_u8(in + (uintptr_t)row->dictvalues_capacity) >= 2 &&
			      rd_ptr(in + (uintptr_t)row->dict_values_at) ==
				      (uintptr_t)PyObject_GetAttrString(un, "first"),
		      "7.3 3.13+: the inline values");
	}
}

/* 7.5: a set's entries. */
static void check_set(void)
{
	PyObject *st = obj("st");
	int64_t mask = rd_i64((uintptr_t)st + (uintptr_t)row->set_mask);
	uintptr_t table = at(st, row->set_table);
	int found = 0;

	for (int64_t i = 0; i <= mask && i < 1024; i++) {
		uintptr_t key = rd_ptr(table + (uintptr_t)(i * row->set_entry_size + row->set_entry_key));

		found += key && PySet_Contains(st, (PyObject *)key) == 1;
	}
	CHECK(mask == 7 && found == 3, "7.5 a set's mask and entries");
}

/* 7.7: 3.12+ ints: digits after lv_tag, their count above 3 bits. */
static void check_long(void)
{
	PyObject *small = obj("small"), *big = obj("big");
	uintptr_t ts = at(small, row->long_tag), tb = at(big, row->long_tag);
	uint64_t n = 0;

	if (row->long_tag == PYABI_NONE)
		return;
	for (unsigned i = (unsigned)(tb >> 3); i-- > 0;)
		n = n << 30 | (uint32_t)rd_i32((uintptr_t)big + (uintptr_t)row->long_digits + 4 * i);
	CHECK(ts >> 3 == 1 && rd_i32((uintptr_t)small + (uintptr_t)row->long_digits) == 12345,
	      "7.7 a one-digit int");
	CHECK(tb >> 3 == 2 && n == (1ull << 40) + 7, "7.7 a two-digit int");
}

/* 7.9: a context's variables, a HAMT whose root holds the one variable
 * set (a bitmap node: its key where the row's hamt_bitmap_array says, as
 * sig_labels.c reads it). */
static void check_context(void)
{
	PyObject *ctx = obj("ctx"), *cv = obj("cv");
	uintptr_t hamt, root, tn, rn;

	if (row->ctx_vars == PYABI_NONE) {
		CHECK(ctx == Py_None, "7.9 no contextvars before 3.7");
		return;
	}
	hamt = at(ctx, row->ctx_vars);
	root = hamt ? rd_ptr(hamt + (uintptr_t)row->hamt_root) : 0;
	tn = hamt ? rd_ptr(rd_ptr(hamt + (uintptr_t)row->ob_type) + (uintptr_t)row->tp_name) : 0;
	rn = root ? rd_ptr(rd_ptr(root + (uintptr_t)row->ob_type) + (uintptr_t)row->tp_name) : 0;
	CHECK(tn && strcmp((const char *)tn, "hamt") == 0, "7.9 ctx_vars is a HAMT");
	CHECK(rn && strcmp((const char *)rn, "hamt_bitmap_node") == 0 &&
		      rd_ptr(root + (uintptr_t)row->hamt_bitmap_array) == (uintptr_t)cv,
	      "7.9 h_root is a bitmap node holding the variable");
}

/* The value of variable var (32-bit hash h) in the HAMT whose root is
 * node, found through the row alone as sig_labels.c finds it; 0 if not. */
static uintptr_t row_hamt_find(uintptr_t node, uintptr_t var, uint32_t h)
{
	for (int depth = 0; node && depth < 8; depth++) {
		uintptr_t tn = rd_ptr(rd_ptr(node + (uintptr_t)row->ob_type) + (uintptr_t)row->tp_name);
		uint32_t slot = (h >> (5 * depth)) & 31, bits, bit, idx = 0;

		if (strcmp((const char *)tn, "hamt_array_node") == 0) {
			node = rd_ptr(node + (uintptr_t)row->hamt_array_items + 8 * slot);
			continue;
		}
		if (strcmp((const char *)tn, "hamt_collision_node") == 0) {
			int64_t n = rd_i64(node + (uintptr_t)row->var_size);

			for (int64_t i = 0; i + 1 < n && i < 64; i += 2)
				if (rd_ptr(node + (uintptr_t)row->hamt_collision_array + 8 * (uintptr_t)i) == var)
					return rd_ptr(node + (uintptr_t)row->hamt_collision_array +
						      8 * (uintptr_t)(i + 1));
			return 0;
		}
		memcpy(&bits, (const void *)(node + (uintptr_t)row->hamt_bitmap_bits), sizeof(bits));
		bit = 1u << slot;
		if (!(bits & bit))
			return 0;
		for (uint32_t b = bits & (bit - 1); b; b &= b - 1)
			idx++;
		uintptr_t pair = node + (uintptr_t)row->hamt_bitmap_array + 16 * idx;
		if (rd_ptr(pair))
			return rd_ptr(pair) == var ? rd_ptr(pair + 8) : 0;
		node = rd_ptr(pair + 8);
	}
	return 0;
}

/* 7.10: every variable of a HAMT with an array node, and of one with a
 * collision node, found through the row. */
static void check_hamt_nodes(void)
{
	PyObject *lookups = obj("lookups");
	Py_ssize_t n = lookups ? PyList_Size(lookups) : 0, found = 0;

	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PyList_GetItem(lookups, i);
		PyObject *ctx = PyTuple_GetItem(t, 0), *var = PyTuple_GetItem(t, 1);
		uint32_t h = (uint32_t)PyLong_AsLong(PyTuple_GetItem(t, 2));
		uintptr_t root = rd_ptr(at(ctx, row->ctx_vars) + (uintptr_t)row->hamt_root);
		uintptr_t v = row_hamt_find(root, (uintptr_t)var, h);

		found += v && v == (uintptr_t)PyTuple_GetItem(t, 3);
	}
	CHECK(n == 42 && found == n, "7.10 a HAMT's array and collision nodes");
}

/* 7.8: the facts of the row that the interpreter shows. */
static void check_facts(void)
{
	void *eval = dlsym(RTLD_DEFAULT, row->eval_frame);

	CHECK(row->py2_c_api == (PY_MAJOR_VERSION == 2), "7.8 py2_c_api");
	CHECK(row->mem_allocators == PY_AT_LEAST(3, 4), "7.8 mem_allocators");
	/* a static libpython (Debian's) exports nothing to dlsym */
	CHECK(eval || !dlsym(RTLD_DEFAULT, "Py_Initialize"), "7.8 eval_frame is a symbol");
	CHECK(row->asyncio_task_names == (int)PyInt_AsLong(obj("names")), "7.8 asyncio_task_names");
	CHECK(row->asyncio_eager_tasks == (int)PyInt_AsLong(obj("eager")), "7.8 asyncio_eager_tasks");
	CHECK(row->fork_warns_of_threads == (int)PyInt_AsLong(obj("fork_warns")),
	      "7.8 fork_warns_of_threads");
}

static void check_objects(void)
{
	PyObject *k, *cell, *closure, *res;
	uintptr_t name;

	obj_ns = PyDict_New();
	PyDict_SetItemString(obj_ns, "__builtins__", PyEval_GetBuiltins());
	res = PyRun_String(OBJECTS, Py_file_input, obj_ns, obj_ns);
	CHECK(res != NULL, "7.0 the objects are made");
	if (!res) {
		PyErr_Print();
		return;
	}
	Py_DECREF(res);
	k = obj("k");
	/* 7.1 type objects */
	CHECK(rd_i64((uintptr_t)&PyList_Type + (uintptr_t)row->tp_basicsize) == (int64_t)sizeof(PyListObject),
	      "7.1 tp_basicsize");
	name = rd_ptr((uintptr_t)&PyList_Type + (uintptr_t)row->tp_name);
	CHECK(name && strcmp((const char *)name, "list") == 0, "7.1 tp_name");
	CHECK(rd_ptr((uintptr_t)&PyList_Type + (uintptr_t)row->tp_flags) & Py_TPFLAGS_LIST_SUBCLASS,
	      "7.1 tp_flags");
	/* 7.2 bound methods, cells, weak references, lists */
	CHECK(at(obj("bound"), row->method_self) == (uintptr_t)k, "7.2 im_self");
	closure = PyObject_GetAttrString(obj("inner"), PY_MAJOR_VERSION >= 3 ? "__closure__" : "func_closure");
	cell = closure && PyTuple_Check(closure) ? PyTuple_GetItem(closure, 0) : NULL;
	CHECK(cell && at(cell, row->cell_ref) == (uintptr_t)k, "7.2 a cell's reference");
	CHECK(at(obj("ref"), row->weakref_object) == (uintptr_t)k, "7.2 wr_object");
	CHECK(rd_ptr(at(obj("lst"), row->list_items)) == (uintptr_t)k, "7.2 a list's items");
	if (row->dict_kind != PYABI_DICT_NONE) {
		PyObject *part = obj("part");
		PyObject *args = PyObject_GetAttrString(part, "args");

		CHECK(args && at(part, row->partial_args) == (uintptr_t)args, "7.2 a partial's args");
		Py_XDECREF(args);
		/* 7.4 combined tables: str keys, and a general one */
		CHECK(row_dict_get((uintptr_t)obj("d"), "key7") ==
			      (uintptr_t)PyDict_GetItemString(obj("d"), "key7"),
		      "7.4 a combined table of str keys");
		CHECK(row_dict_get((uintptr_t)obj("g"), "a") ==
			      (uintptr_t)PyDict_GetItemString(obj("g"), "a"),
		      "7.4 a table of keys of any type");
		check_instance();
		check_set();
	}
	Py_XDECREF(closure);
	check_long();
	/* 7.6 a C task's first done-callback (3.7-3.13) */
	if (row->task_callback0 != PYABI_NONE) {
		PyObject *task = obj("task");

		CHECK(task && task != Py_None && at(task, row->task_callback0) == (uintptr_t)obj("cb"),
		      "7.6 fut_callback0");
	}
	check_facts();
	check_context();
	if (row->ctx_vars != PYABI_NONE)
		check_hamt_nodes();
}

#endif
