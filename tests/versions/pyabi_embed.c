/*
 * pyabi_embed.c - checks one interpreter's pyabi row, and pycode's string
 * decoders, from inside that interpreter.
 *
 * usage: pyabi_embed tests/versions/pyabi_frames.py
 *
 * Built by tests/versions/pyabi.sh once per interpreter, against its own
 * public headers and linked with its own libpython (Debian's python3: the
 * static libpython3.11.a that its /usr/bin/python3 is built from). It
 * embeds the interpreter and compares what the row says with what CPython
 * says about itself:
 *
 *   1. thread states and interpreters: every offset read through the row
 *      against PyInterpreterState_Head/ThreadHead/Next, PyThreadState_Next,
 *      PyThread_get_thread_ident, gettid, _PyRuntime;
 *   2. code objects: co_filename/co_name/co_qualname/co_linetable point at
 *      the objects the attributes return, co_firstlineno matches,
 *      co_code_adaptive holds co_code's opcodes, _co_firsttraceable
 *      indexes the first RESUME, ob_type is &PyCode_Type;
 *   3. live stacks: pyabi_frames.py calls walk() from many kinds of frame;
 *      walk() reads the stack through the row alone (as the sampler does)
 *      and through the C API, and the (name, file, line) lists must match;
 *   4. strings: pycode_read_str against PyUnicode_AsUTF8 for compact ASCII,
 *      UCS1, UCS2, UCS4, long and str-subclass (non-compact) strings,
 *      legacy PyUnicode_FromUnicode strings (3.3-3.11), every truncation
 *      size; the row's kind/compact/ascii bits against PyUnicode_KIND etc.
 *      On 2.7, byte strings. pycode_read_bytes on bytes objects.
 *   5. 3.13+: pyabi_check_debug_offsets against the live _PyRuntime
 *      (GIL offsets included), and that it notices a tampered block or row.
 *   6. thread names (read from outside by pyprof): sys.modules at
 *      interp_modules, a module's dict at module_dict, and the dict
 *      readers (signal/sig_pydict.c) finding threading, its _active and
 *      the current Thread's name as the C API does.
 *   7. the objects the asyncio view and the labels read (pyabi_objects.h):
 *      types, instance dictionaries, sets, lists, weak references, bound
 *      methods, cells, partials, ints, a C task's first callback.
 *
 * The reader is memcpy: everything read is live and owned by this process.
 * Output ends with check.h's `check: N passed, N failed`; exit 1 on failure.
 */
#include <Python.h>
#include <frameobject.h>
#include <pythread.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "pyprof/pyabi.h"
#include "cpython/pycode.h"
#include "cpython/pydict.h"
#include "signal/sig_pydict.h"

#define PY_AT_LEAST(maj, min) (PY_VERSION_HEX >= (((maj) << 24) | ((min) << 16)))

static const struct pyabi *row;

static int rd(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
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

#include "pyabi_objects.h"

/* UTF-8 of a str (3.x) or the bytes of a str (2.7); NULL on error. */
static const char *api_utf8(PyObject *s, Py_ssize_t *len)
{
#if PY_MAJOR_VERSION >= 3
	return PyUnicode_AsUTF8AndSize(s, len);
#else
	*len = PyString_Size(s);
	return PyString_AsString(s);
#endif
}

/* ---- 1. interpreters and thread states ---- */

#if PY_AT_LEAST(3, 7)
/* Declared here because only Py_BUILD_CORE headers declare it; we only
 * take its address. */
extern char _PyRuntime[];
#endif

static void check_threads(const char *where)
{
	PyThreadState *ts = PyThreadState_Get();
	PyInterpreterState *interp = PyInterpreterState_Head();
	uintptr_t t;
	int found = 0, n;
	char what[160];

	snprintf(what, sizeof(what), "1.1 %s: ts->interp", where);
	CHECK(rd_ptr((uintptr_t)ts + row->ts_interp) == (uintptr_t)interp, what);
	snprintf(what, sizeof(what), "1.2 %s: interp->next", where);
	CHECK(rd_ptr((uintptr_t)interp + row->interp_next) ==
		      (uintptr_t)PyInterpreterState_Next(interp), what);
	snprintf(what, sizeof(what), "1.3 %s: interp thread list head", where);
	CHECK(rd_ptr((uintptr_t)interp + row->interp_tstate_head) ==
		      (uintptr_t)PyInterpreterState_ThreadHead(interp), what);
	/* Find our thread state the way the signal handler does. */
	for (t = rd_ptr((uintptr_t)interp + row->interp_tstate_head), n = 0;
	     t && n < 1000; t = rd_ptr(t + row->ts_next), n++) {
		snprintf(what, sizeof(what), "1.4 %s: ts->next", where);
		CHECK(rd_ptr(t + row->ts_next) ==
			      (uintptr_t)PyThreadState_Next((PyThreadState *)t), what);
		if ((unsigned long)rd_ptr(t + row->ts_thread_id) ==
		    (unsigned long)PyThread_get_thread_ident())
			found = (t == (uintptr_t)ts);
	}
	snprintf(what, sizeof(what), "1.5 %s: own tstate found by thread_id", where);
	CHECK(found, what);
	snprintf(what, sizeof(what), "1.6 %s: thread_id is pthread_self()", where);
	CHECK((pthread_t)rd_ptr((uintptr_t)ts + row->ts_thread_id) ==
		      pthread_self(), what);
	if (row->ts_native_thread_id != PYABI_NONE) {
		snprintf(what, sizeof(what), "1.7 %s: native_thread_id is gettid()", where);
		CHECK((long)rd_ptr((uintptr_t)ts + row->ts_native_thread_id) ==
			      (long)syscall(SYS_gettid), what);
	}
#if PY_AT_LEAST(3, 7)
	snprintf(what, sizeof(what), "1.8 %s: _PyRuntime.interpreters.head", where);
	CHECK(row->rt_interp_head >= 0 &&
		      rd_ptr((uintptr_t)_PyRuntime + row->rt_interp_head) ==
			      (uintptr_t)interp, what);
#else
	CHECK(row->rt_interp_head == PYABI_NONE, "1.8 no _PyRuntime before 3.7");
#endif
}

/* A second thread state goes to the head of the list, newest first. */
static void check_second_tstate(void)
{
	PyInterpreterState *interp = PyInterpreterState_Head();
	PyThreadState *old_head = PyInterpreterState_ThreadHead(interp);
	PyThreadState *ts2 = PyThreadState_New(interp);

	CHECK(rd_ptr((uintptr_t)interp + row->interp_tstate_head) == (uintptr_t)ts2,
	      "1.9 new thread state is the list head");
	CHECK(rd_ptr((uintptr_t)ts2 + row->ts_next) == (uintptr_t)old_head,
	      "1.10 its next is the old head");
	CHECK(rd_ptr((uintptr_t)ts2 + row->ts_interp) == (uintptr_t)interp,
	      "1.11 its interp");
	PyThreadState_Clear(ts2);
	PyThreadState_Delete(ts2);
	check_threads("main");
}

/* ---- 2. code objects ---- */

/* 2.2-2.6: the header and the name fields of f's code object co. */
static void check_code_fields(PyObject *co)
{
	PyObject *attr;

	CHECK(rd_ptr((uintptr_t)co + row->ob_type) == (uintptr_t)&PyCode_Type,
	      "2.2 ob_type is PyCode_Type");
	attr = PyObject_GetAttrString(co, "co_firstlineno");
	CHECK(rd_i32((uintptr_t)co + row->co_firstlineno) == 4 &&
		      PyLong_AsLong(attr) == 4, "2.3 co_firstlineno");
	Py_XDECREF(attr);
	attr = PyObject_GetAttrString(co, "co_name");
	CHECK(rd_ptr((uintptr_t)co + row->co_name) == (uintptr_t)attr, "2.4 co_name");
	Py_XDECREF(attr);
	attr = PyObject_GetAttrString(co, "co_filename");
	CHECK(rd_ptr((uintptr_t)co + row->co_filename) == (uintptr_t)attr,
	      "2.5 co_filename");
	Py_XDECREF(attr);
	if (row->co_qualname != PYABI_NONE) {
		attr = PyObject_GetAttrString(co, "co_qualname");
		CHECK(attr && rd_ptr((uintptr_t)co + row->co_qualname) == (uintptr_t)attr,
		      "2.6 co_qualname");
		Py_XDECREF(attr);
	}
}

/* 2.7: the pointer at co_linetable's offset holds the same bytes as
 * co_lnotab (<= 3.9) / co_linetable (3.10+). */
static void check_code_linetable(PyObject *co)
{
	PyObject *attr;

	attr = PyObject_GetAttrString(co, PY_AT_LEAST(3, 10) ? "co_linetable" : "co_lnotab");
	{
		uint8_t buf[4096];
		int len = pycode_read_bytes(row, (void *)rd_ptr((uintptr_t)co + row->co_linetable),
					    rd, buf, sizeof(buf));

		CHECK(attr && PyBytes_Check(attr) && len == PyBytes_Size(attr) &&
			      memcmp(buf, PyBytes_AsString(attr), (size_t)len) == 0,
		      "2.7 co_linetable contents");
	}
	Py_XDECREF(attr);
}

/* opcode._specializations (3.13+: _opcode_metadata's), a new reference
 * or NULL. */
static PyObject *specializations(PyObject *opmod)
{
	PyObject *spec = opmod ? PyObject_GetAttrString(opmod, "_specializations") : NULL;

	if (!spec) { /* 3.13 moved it */
		PyObject *meta;

		PyErr_Clear();
		meta = PyImport_ImportModule("_opcode_metadata");
		spec = meta ? PyObject_GetAttrString(meta, "_specializations") : NULL;
		Py_XDECREF(meta);
	}
	return spec;
}

/* 2.8-2.10 (3.11+): the inline bytecode holds co_code's opcodes (CACHE
 * entries, opcode 0, may already hold counters: skipped). The first
 * traceable instruction is RESUME. */
static void check_code_adaptive(PyObject *co)
{
	PyObject *code = PyObject_GetAttrString(co, "co_code");
	PyObject *dis = PyImport_ImportModule("dis");
	PyObject *opmap = dis ? PyObject_GetAttrString(dis, "opmap") : NULL;
	PyObject *resume = opmap ? PyDict_GetItemString(opmap, "RESUME") : NULL;
	const uint8_t *inl = (const uint8_t *)co + row->co_code_adaptive;
	const uint8_t *want = (const uint8_t *)PyBytes_AsString(code);
	int ft = rd_i32((uintptr_t)co + row->co_firsttraceable), same = 1;
	Py_ssize_t i, n;

	n = PyBytes_Size(code);
	PyObject *opmod = PyImport_ImportModule("opcode");
	PyObject *opname = opmod ? PyObject_GetAttrString(opmod, "opname") : NULL;
	PyObject *spec = specializations(opmod);

	CHECK(opname && spec, "2.8 opcode names and specializations");
	for (i = 0; opname && spec && i < n; i += 2) {
		/* 3.12 quickens at creation (STORE_FAST__LOAD_FAST...):
		 * only an opcode with a specialized family may differ. */
		if (want[i] != 0 && want[i] != inl[i] &&
		    PyDict_Contains(spec, PyList_GetItem(opname, want[i])) != 1) {
			fprintf(stderr, "unit %d: co_code %d/%d inline %d/%d\n",
				(int)i / 2, want[i], want[i + 1], inl[i], inl[i + 1]);
			same = 0;
		}
	}
	Py_XDECREF(spec);
	Py_XDECREF(opname);
	Py_XDECREF(opmod);
	CHECK(same && n > 0, "2.8 co_code_adaptive holds co_code");
	CHECK(resume && ft >= 0 && 2 * ft < n &&
		      want[2 * ft] == PyLong_AsLong(resume),
	      "2.9 _co_firsttraceable is the first RESUME");
	for (i = 0; resume && i < 2 * ft; i += 2)
		CHECK(want[i] != PyLong_AsLong(resume),
		      "2.10 no RESUME before _co_firsttraceable");
	Py_XDECREF(opmap);
	Py_XDECREF(dis);
	Py_XDECREF(code);
}

static void check_code(void)
{
	const char *src = "x = 1\n\n\ndef f(a):\n    b = a\n    def g():\n"
			  "        return b\n    return g\n";
	PyObject *mod, *consts, *co = NULL;
	Py_ssize_t i;

	mod = Py_CompileString(src, "probe_file.py", Py_file_input);
	CHECK(mod != NULL, "2.0 compile");
	if (!mod)
		return;
	consts = PyObject_GetAttrString(mod, "co_consts");
	for (i = 0; consts && i < PyTuple_Size(consts); i++)
		if (PyCode_Check(PyTuple_GetItem(consts, i)))
			co = PyTuple_GetItem(consts, i);
	CHECK(co != NULL, "2.1 found f's code");
	if (co) {
		check_code_fields(co);
		check_code_linetable(co);
		if (row->co_code_adaptive != PYABI_NONE)
			check_code_adaptive(co);
		else
			CHECK(row->co_firsttraceable == PYABI_NONE && !PY_AT_LEAST(3, 11),
			      "2.8 no inline bytecode before 3.11");
	}
	Py_XDECREF(consts);
	Py_DECREF(mod);
}

/* ---- 3. live stacks ---- */

#define MAX_FRAMES 512

struct wf {
	char name[256];
	char file[512];
	int line;
};

static struct wf by_row[MAX_FRAMES], by_api[MAX_FRAMES];
static uint8_t table_buf[1 << 16];

/* The sampler's walk, with the row and pycode only. */
static int walk_row(void)
{
	uintptr_t ts = (uintptr_t)PyThreadState_Get(), fr, next, code;
	int n = 0, guard = 0;
	int64_t off;

	if (row->ts_cframe != PYABI_NONE) {
		uintptr_t cf = rd_ptr(ts + row->ts_cframe);

		fr = cf ? rd_ptr(cf + row->cframe_current_frame) : 0;
	} else {
		fr = rd_ptr(ts + row->ts_frame);
	}
	for (; fr && n < MAX_FRAMES && guard < 100000; fr = next, guard++) {
		int first, tlen;

		next = rd_ptr(fr + row->f_back);
		if (row->frame_kind == PYABI_FRAME_OBJECT) {
			code = rd_ptr(fr + row->f_code);
			off = rd_i32(fr + row->f_lasti);
			if (row->lasti_kind == PYABI_LASTI_UNITS)
				off *= 2;
		} else {
			int owner = row->f_owner != PYABI_NONE
					    ? *(const uint8_t *)(fr + row->f_owner)
					    : -1;

			/* 3.12+: shim frames that mark an eval-loop entry. */
			if (row->owner_cstack != PYABI_NONE && owner == row->owner_cstack)
				continue;
			code = rd_ptr(fr + row->f_code) & ~(uintptr_t)row->code_ref_tag_mask;
			/* 3.13: f_executable need not be a code object. */
			if (!code || rd_ptr(code + row->ob_type) != (uintptr_t)&PyCode_Type)
				continue;
			off = (int64_t)(rd_ptr(fr + row->f_lasti) -
					(code + (uintptr_t)row->co_code_adaptive));
			/* Incomplete frames (prologue not done) are not shown
			 * by CPython either. */
			if (owner != row->owner_generator &&
			    off < 2 * (int64_t)rd_i32(code + row->co_firsttraceable))
				continue;
		}
		first = rd_i32(code + row->co_firstlineno);
		if (pycode_read_str(row, (void *)rd_ptr(code + (row->co_qualname != PYABI_NONE
								 ? row->co_qualname
								 : row->co_name)),
				    rd, by_row[n].name, sizeof(by_row[n].name)) < 0 ||
		    pycode_read_str(row, (void *)rd_ptr(code + row->co_filename), rd,
				    by_row[n].file, sizeof(by_row[n].file)) < 0)
			return -1;
		tlen = pycode_read_bytes(row, (void *)rd_ptr(code + row->co_linetable), rd,
					 table_buf, sizeof(table_buf));
		if (tlen < 0)
			return -1;
		/* Before the first instruction (f_lasti -1, 3.10 and older)
		 * CPython reports co_firstlineno. */
		by_row[n].line = off < 0 ? first
					 : pycode_addr2line(row->lines_kind, table_buf,
							    (size_t)tlen, first, (uint32_t)off);
		n++;
	}
	return n;
}

/* The same stack as CPython reports it. */
static int walk_api(void)
{
	PyFrameObject *f = PyEval_GetFrame();
	int n = 0;

	Py_XINCREF(f);
	while (f && n < MAX_FRAMES) {
		PyFrameObject *back;
		PyObject *name;
		const char *s;
		Py_ssize_t len;
#if PY_AT_LEAST(3, 9)
		PyCodeObject *co = PyFrame_GetCode(f);

		back = PyFrame_GetBack(f);
#else
		PyCodeObject *co = f->f_code;

		Py_INCREF(co);
		back = f->f_back;
		Py_XINCREF(back);
#endif
		name = PyObject_GetAttrString((PyObject *)co,
					      PY_AT_LEAST(3, 11) ? "co_qualname" : "co_name");
		s = name ? api_utf8(name, &len) : NULL;
		snprintf(by_api[n].name, sizeof(by_api[n].name), "%s", s ? s : "?");
		Py_XDECREF(name);
		s = api_utf8(co->co_filename, &len);
		snprintf(by_api[n].file, sizeof(by_api[n].file), "%s", s ? s : "?");
		by_api[n].line = PyFrame_GetLineNumber(f);
		n++;
		Py_DECREF(co);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	return n;
}

static PyObject *walk(PyObject *self, PyObject *args)
{
	const char *tag;
	char what[200];
	int nr, na, i;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &tag))
		return NULL;
	check_threads(tag);
	nr = walk_row();
	na = walk_api();
	snprintf(what, sizeof(what), "3.1 %s: row walk and API walk see %d frames", tag, na);
	CHECK(nr == na, what);
	for (i = 0; i < nr && i < na; i++) {
		int same = strcmp(by_row[i].name, by_api[i].name) == 0 &&
			   strcmp(by_row[i].file, by_api[i].file) == 0 &&
			   by_row[i].line == by_api[i].line;

		snprintf(what, sizeof(what), "3.2 %s frame %d: %s %s:%d (API: %s %s:%d)",
			 tag, i, by_row[i].name, by_row[i].file, by_row[i].line,
			 by_api[i].name, by_api[i].file, by_api[i].line);
		CHECK(same, what);
	}
	return PyLong_FromLong(nr == na ? nr : 0);
}

static PyMethodDef walk_def = { "walk", walk, METH_VARARGS, "compare stacks" };

static void run_frames(const char *path)
{
	PyObject *main_mod = PyImport_AddModule("__main__");
	PyObject *globals = PyModule_GetDict(main_mod);
	PyObject *fn = PyCFunction_New(&walk_def, NULL), *code, *res = NULL;
	char *src = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	CHECK(f != NULL, "3.0 open pyabi_frames.py");
	if (!f)
		return;
	if (getdelim(&src, &cap, '\0', f) < 0) {
		fclose(f);
		CHECK(0, "3.0 read pyabi_frames.py");
		return;
	}
	fclose(f);
	PyDict_SetItemString(globals, "walk", fn);
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
	CHECK(res != NULL, "3.0 pyabi_frames.py ran to the end");
	fflush(stdout);
	Py_XDECREF(res);
	Py_XDECREF(code);
	Py_XDECREF(fn);
	free(src);
}

/* ---- 4. strings ---- */

/* The longest prefix of s[0..len) that is whole UTF-8 characters and at
 * most max bytes long. */
static size_t utf8_prefix(const char *s, size_t len, size_t max)
{
	size_t i = 0, w;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		w = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (i + w > max)
			break;
		i += w;
	}
	return i;
}

/* pycode_read_str(obj) must give want[0..want_len); every smaller buffer
 * must give the longest whole-character prefix that fits. */
static void check_str(PyObject *obj, const char *want, size_t want_len, const char *what)
{
	static char out[1 << 15];
	char msg[200];
	size_t cap, step;
	int n;

	n = pycode_read_str(row, obj, rd, out, sizeof(out));
	snprintf(msg, sizeof(msg), "4.1 %s: whole string (got %d, want %zu)", what, n,
		 want_len);
	CHECK(n == (int)want_len && memcmp(out, want, want_len) == 0 && out[n] == '\0',
	      msg);
	step = want_len > 200 ? 97 : 1;
	for (cap = 1; cap <= want_len + 2; cap += step) {
		size_t p = utf8_prefix(want, want_len, cap - 1);

		memset(out, 'x', cap + 1);
		n = pycode_read_str(row, obj, rd, out, cap);
		snprintf(msg, sizeof(msg), "4.2 %s: out_cap %zu gives %zu bytes (got %d)",
			 what, cap, p, n);
		CHECK(n == (int)p && memcmp(out, want, p) == 0 && out[p] == '\0' &&
			      out[cap] == 'x', msg);
	}
}

#if PY_MAJOR_VERSION >= 3
/* The row's state bits against CPython's own macros. */
static void check_state(PyObject *s, const char *what)
{
	uint32_t st = 0;
	const uint8_t *p = (const uint8_t *)s + row->u_state;
	char msg[160];

	st = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	     (uint32_t)p[3] << 24;
	snprintf(msg, sizeof(msg), "4.3 %s: kind/compact/ascii bits and length", what);
	CHECK((int)(st >> row->u_kind_shift & 7) == (int)PyUnicode_KIND(s) &&
		      (int)(st >> row->u_compact_bit & 1) == (int)PyUnicode_IS_COMPACT(s) &&
		      (int)(st >> row->u_ascii_bit & 1) == (int)PyUnicode_IS_ASCII(s) &&
		      (Py_ssize_t)rd_ptr((uintptr_t)s + row->u_length) ==
			      PyUnicode_GET_LENGTH(s), msg);
	snprintf(msg, sizeof(msg), "4.4 %s: data address", what);
	if (PyUnicode_IS_COMPACT(s))
		CHECK((uintptr_t)PyUnicode_DATA(s) ==
			      (uintptr_t)s + (uintptr_t)(PyUnicode_IS_ASCII(s)
							   ? row->u_ascii_size
							   : row->u_compact_size), msg);
	else
		CHECK((uintptr_t)PyUnicode_DATA(s) ==
			      rd_ptr((uintptr_t)s + row->u_data_any), msg);
}

static void check_unicode(PyObject *s, const char *what, int want_compact)
{
	Py_ssize_t len;
	const char *u;
	char msg[160];

	if (!s) {
		PyErr_Print();
		CHECK(0, what);
		return;
	}
	check_state(s, what);
	snprintf(msg, sizeof(msg), "4.5 %s: is %scompact", what, want_compact ? "" : "not ");
	CHECK(!!PyUnicode_IS_COMPACT(s) == want_compact, msg);
	if (PyUnicode_GET_LENGTH(s) > PYCODE_STR_MAX_CHARS) {
		PyObject *head = PyUnicode_Substring(s, 0, PYCODE_STR_MAX_CHARS);

		u = api_utf8(head, &len);
		check_str(s, u, (size_t)len, what);
		Py_DECREF(head);
	} else {
		u = api_utf8(s, &len);
		check_str(s, u, (size_t)len, what);
	}
}

static PyObject *sub_of(PyObject *cls, const char *utf8)
{
	return PyObject_CallFunction(cls, "s", utf8);
}

#if !PY_AT_LEAST(3, 12)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* 3.3-3.11 legacy string: PyUnicode_FromUnicode(NULL, n) makes a
 * non-compact object whose characters sit in wstr until PyUnicode_READY
 * gives it data.any. The deprecated API was removed in 3.12 (PEP 623). */
static void check_legacy(const wchar_t *w, const char *what)
{
	size_t n = wcslen(w);
	PyObject *s = PyUnicode_FromUnicode(NULL, (Py_ssize_t)n);
	char out[64], msg[160];

	memcpy(PyUnicode_AS_UNICODE(s), w, n * sizeof(wchar_t));
	snprintf(msg, sizeof(msg), "4.6 %s: not ready yet: -EINVAL", what);
	CHECK(pycode_read_str(row, s, rd, out, sizeof(out)) == -EINVAL && out[0] == '\0', msg);
	CHECK(PyUnicode_READY(s) == 0, "4.6 PyUnicode_READY");
	check_unicode(s, what, 0);
	Py_DECREF(s);
}
#endif
#endif /* PY_MAJOR_VERSION >= 3 */

static void check_strings(void)
{
	static char big[6000];
	size_t i;

#if PY_MAJOR_VERSION >= 3
	char out[64];
	PyObject *ns = PyDict_New(), *cls, *s;

	check_unicode(PyUnicode_FromString("hello"), "ascii", 1);
	check_unicode(PyUnicode_FromString(""), "empty", 1);
	check_unicode(PyUnicode_FromString("caf\xc3\xa9 \xc3\xbf"), "latin-1", 1);
	check_unicode(PyUnicode_FromString("\xd0\x96\xd1\x83\xd0\xba"), "ucs2", 1);
	check_unicode(PyUnicode_FromString("a\xf0\x9f\x98\x80 \xc3\xa9\xd0\x96"), "ucs4", 1);
	/* 5000 characters mixing widths: truncated at 4096 characters. */
	for (i = 0; i + 6 < sizeof(big) - 1 && i < 5000; i += 6)
		memcpy(big + i, "\xf0\x9f\x98\x80\xc3\xa9", 6);
	big[i] = '\0';
	check_unicode(PyUnicode_FromString(big), "long ucs4", 1);
	memset(big, 'a', 5000);
	big[5000] = '\0';
	check_unicode(PyUnicode_FromString(big), "long ascii", 1);

	/* Instances of a str subclass are never compact: data.any. */
	PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins());
	s = PyRun_String("class S(str):\n    pass\n", Py_file_input, ns, ns);
	Py_XDECREF(s);
	cls = PyDict_GetItemString(ns, "S");
	CHECK(cls != NULL, "4.0 str subclass");
	if (cls) {
		check_unicode(sub_of(cls, "plain"), "subclass ascii", 0);
		check_unicode(sub_of(cls, "caf\xc3\xa9"), "subclass latin-1", 0);
		check_unicode(sub_of(cls, "\xd0\x96\xd1\x83\xd0\xba"), "subclass ucs2", 0);
		check_unicode(sub_of(cls, "\xf0\x9f\x98\x80!"), "subclass ucs4", 0);
	}
	Py_DECREF(ns);
#if !PY_AT_LEAST(3, 12)
	check_legacy(L"legacy", "legacy ascii");
	check_legacy(L"l\u00e9gacy", "legacy latin-1");
	check_legacy(L"\u0416\u0443\u043a", "legacy ucs2");
	check_legacy(L"\U0001F600 legacy", "legacy ucs4");
#endif
	/* A surrogate-escaped byte (a file name decoded in the C locale)
	 * comes back as the original byte, as os.fsencode gives it. */
	s = PyUnicode_DecodeUTF8("ab\xff", 3, "surrogateescape");
	CHECK(s && pycode_read_str(row, s, rd, out, sizeof(out)) == 3 &&
		      memcmp(out, "ab\xff", 4) == 0,
	      "4.7 surrogate-escaped byte comes back as the byte");
	Py_XDECREF(s);
	/* Any other lone surrogate: U+FFFD, valid UTF-8. */
	s = PyUnicode_FromOrdinal(0xd800);
	CHECK(s && pycode_read_str(row, s, rd, out, sizeof(out)) == 3 &&
		      memcmp(out, "\xef\xbf\xbd", 4) == 0,
	      "4.8 lone surrogate becomes U+FFFD");
	Py_XDECREF(s);
#else
	PyObject *s;

	s = PyString_FromString("hello");
	check_str(s, "hello", 5, "2.7 ascii");
	Py_DECREF(s);
	s = PyString_FromString("f\xc3\xafl\xc3\xa9.py");
	check_str(s, "f\xc3\xafl\xc3\xa9.py", 9, "2.7 utf-8 bytes");
	Py_DECREF(s);
	/* 5001 bytes: byte 4095 starts a 2-byte character, so the 4096-byte
	 * cut must drop it. */
	big[0] = 'a';
	for (i = 1; i + 1 < 5001; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	s = PyString_FromStringAndSize(big, 5001);
	check_str(s, big, utf8_prefix(big, 5001, 4096), "2.7 long utf-8");
	Py_DECREF(s);
#endif
	{
		uint8_t raw[300], got[300];
		PyObject *b;

		for (i = 0; i < sizeof(raw); i++)
			raw[i] = (uint8_t)(i * 7);
		b = PyBytes_FromStringAndSize((const char *)raw, sizeof(raw));
		CHECK(pycode_read_bytes(row, b, rd, got, sizeof(got)) == 300 &&
			      memcmp(got, raw, 300) == 0, "4.8 bytes object");
		CHECK(pycode_read_bytes(row, b, rd, got, 299) == -E2BIG,
		      "4.9 bytes object too big: -E2BIG");
		Py_DECREF(b);
		b = PyBytes_FromStringAndSize("", 0);
		CHECK(pycode_read_bytes(row, b, rd, got, 0) == 0, "4.10 empty bytes");
		Py_DECREF(b);
	}
}

/* ---- 5. _Py_DebugOffsets (3.13+) ---- */

static int rd_fail(void *dst, const void *src, size_t n)
{
	(void)dst;
	(void)src;
	(void)n;
	return -EFAULT;
}

static void check_debug_offsets(void)
{
	char why[200];
	int rc;

#if PY_AT_LEAST(3, 13)
	static char copy[1024];
	struct pyabi bad = *row;
	uint64_t v;

	rc = pyabi_check_debug_offsets(row, _PyRuntime, rd, why, sizeof(why));
	if (rc)
		fprintf(stderr, "pyabi_check_debug_offsets: %s\n", why);
	CHECK(rc == 0, "5.1 the row agrees with _Py_DebugOffsets");
	CHECK(pyabi_check_debug_offsets(row, _PyRuntime, rd_fail, why, sizeof(why)) == -EFAULT,
	      "5.2 a failed read is -EFAULT");
	bad.ts_next += 8;
	rc = pyabi_check_debug_offsets(&bad, _PyRuntime, rd, why, sizeof(why));
	CHECK(rc == -EPROTO && strstr(why, "thread_state.next"),
	      "5.3 a wrong row offset is -EPROTO, named");
	bad = *row;
	bad.gil_locked += 4;
	rc = pyabi_check_debug_offsets(&bad, _PyRuntime, rd, why, sizeof(why));
	CHECK(rc == -EPROTO && strstr(why, "gil_runtime_state_locked"),
	      "5.3 a wrong GIL offset is -EPROTO, named");
	bad = *row;
	bad.interp_gil_ptr = PYABI_NONE;
	rc = pyabi_check_debug_offsets(&bad, _PyRuntime, rd, why, sizeof(why));
	CHECK(rc == -EPROTO && strstr(why, "ceval_gil"),
	      "5.3 a missing GIL offset is -EPROTO, named");
	bad = *row;
	bad.u_ascii_size = 48;
	CHECK(pyabi_check_debug_offsets(&bad, _PyRuntime, rd, NULL, 0) == -EPROTO,
	      "5.4 -EPROTO with why NULL");
	memcpy(copy, _PyRuntime, sizeof(copy));
	copy[0] = 'X';
	CHECK(pyabi_check_debug_offsets(row, copy, rd, why, sizeof(why)) == -EPROTO &&
		      strstr(why, "cookie"), "5.5 a bad cookie is -EPROTO");
	memcpy(copy, _PyRuntime, sizeof(copy));
	memcpy(&v, copy + 8, 8);
	v += 1 << 16; /* next minor */
	memcpy(copy + 8, &v, 8);
	CHECK(pyabi_check_debug_offsets(row, copy, rd, why, sizeof(why)) == -EPROTO &&
		      strstr(why, "version"), "5.6 another version is -EPROTO");

	/* the row the library uses: built from this live block */
	{
		struct pyabi_derived d;
		const struct pyabi *other;
		int n_other = 0;

		rc = pyabi_from_debug_offsets(PY_MAJOR_VERSION, PY_MINOR_VERSION, -1, -1,
					      _PyRuntime, &PyCode_Type, rd, &d, why,
					      sizeof(why));
		if (rc)
			fprintf(stderr, "pyabi_from_debug_offsets: %s\n", why);
		CHECK(rc == 0 && d.layout_minor == PY_MINOR_VERSION &&
			      d.facts_minor == PY_MINOR_VERSION,
		      "5.7 the live block is read with this version's layout");
		rc = pyabi_compare(row, &d.abi, why, sizeof(why));
		if (rc)
			fprintf(stderr, "pyabi_compare: %s\n", why);
		CHECK(rc == 0, "5.8 the row built from the block is the compiled row, "
			       "derived offsets (_co_firsttraceable, unicode sizes) included");
		/* as for a version released later: its row withheld */
		rc = pyabi_from_debug_offsets(PY_MAJOR_VERSION, PY_MINOR_VERSION,
					      PY_MINOR_VERSION, -1, _PyRuntime,
					      &PyCode_Type, rd, &d, why, sizeof(why));
		CHECK(rc == 0 && d.facts_minor != PY_MINOR_VERSION &&
			      pyabi_compare(row, &d.abi, why, sizeof(why)) == 0,
		      "5.9 with the row withheld: the same offsets, facts from another row");
		CHECK(d.abi.owner_generator == row->owner_generator &&
			      d.abi.lasti_kind == row->lasti_kind &&
			      d.abi.lines_kind == row->lines_kind &&
			      d.abi.u_kind_shift == row->u_kind_shift &&
			      d.abi.u_compact_bit == row->u_compact_bit &&
			      d.abi.u_ascii_bit == row->u_ascii_bit,
		      "5.10 the borrowed facts that must hold do");
		/* each other version's block layout is refused on this block */
		for (other = pyabi_find(3, 13); other && other->major; other++) {
			if (other->minor == PY_MINOR_VERSION)
				continue;
			n_other++;
		}
		rc = pyabi_from_debug_offsets(PY_MAJOR_VERSION, PY_MINOR_VERSION,
					      PY_MINOR_VERSION, PY_MINOR_VERSION,
					      _PyRuntime, &PyCode_Type, rd, &d, why,
					      sizeof(why));
		CHECK(n_other == 0 || (rc == -EPROTO && strstr(why, "fits no known layout")),
		      "5.11 no other version's block layout fits this block");
	}
#else
	rc = pyabi_check_debug_offsets(row, "", rd_fail, why, sizeof(why));
	CHECK(rc == 0 && why[0] == '\0', "5.1 before 3.13 nothing is read, 0");
#endif
}

static void check_names(void)
{
	struct pydict_layout l;
	struct pydict_key k_threading = { 0, "threading", 9 };
	struct pydict_key k_active = { 0, "_active", 7 };
	struct pydict_key k_name = { 0, PY_MAJOR_VERSION == 2 ? "_Thread__name" : "_name",
				     PY_MAJOR_VERSION == 2 ? 13 : 5 };
	PyObject *mods = PyImport_GetModuleDict(), *th, *active, *cur, *name;

	CHECK(pydict_layout_any_init(&l, row) == 0, "6.1 a layout of ordinary dicts");
	l.dict_type = (uintptr_t)&PyDict_Type;
#if PY_MAJOR_VERSION == 2
	l.str_type = (uintptr_t)&PyString_Type;
#else
	l.str_type = (uintptr_t)&PyUnicode_Type;
#endif
	CHECK(rd_ptr((uintptr_t)PyInterpreterState_Head() + row->interp_modules) ==
		      (uintptr_t)mods,
	      "6.2 interp_modules is sys.modules");
	th = PyImport_ImportModule("threading");
	CHECK_OR_RETURN(th != NULL, "6.3 import threading", );
	CHECK(rd_ptr((uintptr_t)th + row->module_dict) == (uintptr_t)PyModule_GetDict(th),
	      "6.3 module_dict is the module's dict");
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)mods, &k_threading) == (uintptr_t)th,
	      "6.4 sys.modules['threading'] by its text");
	active = PyObject_GetAttrString(th, "_active");
	cur = PyObject_CallMethod(th, "current_thread", NULL);
	CHECK_OR_RETURN(active && cur, "6.5 threading._active, current_thread()", );
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)PyModule_GetDict(th), &k_active) ==
		      (uintptr_t)active,
	      "6.5 threading._active by its text");
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)active,
				      (int64_t)PyThread_get_thread_ident()) == (uintptr_t)cur,
	      "6.6 _active[ident] by the ident's hash");
	name = PyObject_GetAttrString(cur, "name");
	CHECK(name && pydict_attr_sigsafe(&l, (uintptr_t)cur, &k_name) == (uintptr_t)name,
	      "6.7 the Thread's name from its instance dict");
	Py_XDECREF(name);
	Py_DECREF(cur);
	Py_DECREF(active);
	Py_DECREF(th);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pyabi_embed pyabi_frames.py\n");
		return 2;
	}
	row = pyabi_find(PY_MAJOR_VERSION, PY_MINOR_VERSION);
	if (!row) {
		fprintf(stderr, "pyabi_embed: no row for %d.%d\n", PY_MAJOR_VERSION,
			PY_MINOR_VERSION);
		return 1;
	}
	Py_Initialize();
	printf("pyabi_embed: %s\n", Py_GetVersion());
	check_threads("main");
	check_second_tstate();
	check_code();
	check_strings();
	check_debug_offsets();
	check_names();
	check_objects();
	run_frames(argv[1]);
	return check_summary();
}
