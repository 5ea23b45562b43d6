/*
 * pyabi_probe.c - print one CPython version's struct pyabi row.
 *
 * Compiled by tools/gen-pyabi once per installed interpreter, against that
 * interpreter's own headers (internal ones included, hence Py_BUILD_CORE),
 * and run once; it prints a C initializer for preload/cpython/pyabi_table.h on
 * stdout. It is never linked into pyprof and never linked against
 * libpython: everything it prints is an offsetof, a sizeof, an enum value
 * from the headers, or a bit position found by setting a bitfield in a
 * zeroed struct on this machine. Nothing is typed in by hand.
 *
 * Usage: pyabi_probe row     the struct pyabi initializer
 *        pyabi_probe dbg     the _Py_DebugOffsets layout row (3.13+ only)
 *
 * The header set differs per version (see the #if ladder below); when a
 * new CPython moves a struct, add its header there and the field names to
 * the matching branch, then re-run tools/gen-pyabi.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION == 7
#include "internal/pystate.h"
#include "internal/context.h"
#include "internal/hamt.h"
#elif PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION == 8
#include "internal/pycore_pystate.h"
#elif PY_MAJOR_VERSION == 3 && (PY_MINOR_VERSION == 9 || PY_MINOR_VERSION == 10)
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#elif PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 11
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_dict.h"
#include "internal/pycore_object.h"
#endif
#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 8
#include "internal/pycore_context.h"
#include "internal/pycore_hamt.h"
#endif
#if defined(EXPERIMENTAL_ISOLATED_SUBINTERPRETERS)
/* 3.9-3.11 configure option: the GIL and the current thread state move into
 * each interpreter, so _PyRuntime.gilstate/ceval.gil mean nothing. */
#error "pyabi_probe: EXPERIMENTAL_ISOLATED_SUBINTERPRETERS build; no GIL in _PyRuntime"
#endif
#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION >= 14
/* 3.14: f_executable became a tagged _PyStackRef (Py_TAG_BITS). */
#include "internal/pycore_stackref.h"
#endif

/* The table describes release builds only: debug and free-threaded builds
 * change PyObject's header, so they must never share a row. */
#if defined(Py_DEBUG) || defined(Py_TRACE_REFS) || defined(Py_GIL_DISABLED)
#error "pyabi_probe: debug or free-threaded build; pyprof has no row for it"
#endif

#define PY_AT_LEAST(maj, min)                                              \
	(PY_MAJOR_VERSION > (maj) ||                                       \
	 (PY_MAJOR_VERSION == (maj) && PY_MINOR_VERSION >= (min)))

/* One initializer line: `.name = value, /+ why +/`. */
static void emit(const char *name, long value, const char *why)
{
	char lhs[64];

	snprintf(lhs, sizeof(lhs), ".%s = %ld,", name, value);
	printf("\t\t%-34s /* %s */\n", lhs, why);
}

static void emit_sym(const char *name, const char *sym, const char *why)
{
	char lhs[64];

	snprintf(lhs, sizeof(lhs), ".%s = %s,", name, sym);
	printf("\t\t%-34s /* %s */\n", lhs, why);
}

static void none(const char *name, const char *why)
{
	emit_sym(name, "PYABI_NONE", why);
}

#define OFF(name, type, member) emit(name, (long)offsetof(type, member), #type "." #member)

#if PY_MAJOR_VERSION >= 3
/*
 * Bit position of a PyASCIIObject.state bitfield, counted from the first
 * byte of `state`: bit n is bit n % 8 of byte n / 8. Found by setting the
 * field in a zeroed object and looking for the bit; the width is checked
 * by setting every bit of the field.
 */
static int find_bit(const unsigned char *p, size_t n, int width, int want_width)
{
	int first = -1, count = 0;
	size_t i;
	int b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 8; b++)
			if (p[i] >> b & 1) {
				if (first < 0)
					first = (int)(i * 8) + b;
				count++;
			}
	if (width == 1 && count != 1)
		first = -1;
	if (want_width && count != want_width)
		first = -1;
	return first;
}

#define STATE_BIT(field, value, want)                                      \
	do {                                                               \
		PyASCIIObject a;                                           \
		memset(&a, 0, sizeof(a));                                  \
		a.state.field = (value);                                   \
		bit = find_bit((const unsigned char *)&a.state,            \
			       sizeof(a.state), (value) == 1, (want));     \
		if (bit < 0) {                                             \
			fprintf(stderr, "pyabi_probe: cannot place "       \
				"state." #field "\n");                     \
			exit(1);                                           \
		}                                                          \
	} while (0)
#endif

#if PY_AT_LEAST(3, 7)
/* Where the value of CPython's atomic wrappers sits. Up to 3.12 `locked`
 * is a _Py_atomic_int and `last_holder`/`tstate_current` are
 * _Py_atomic_address, structs of one member `_value` (an int, a uintptr_t);
 * 3.13 made them a plain int and PyThreadState * read with
 * _Py_atomic_load_*. Either way the reader wants the offset of the value
 * itself, and its size must be what pyabi_gil_holder reads. */
#if PY_AT_LEAST(3, 13)
#define INT_VALUE(type, member) ((long)offsetof(type, member))
#define ADDR_VALUE(type, member) ((long)offsetof(type, member))
#else
#define INT_VALUE(type, member)                                            \
	((long)(offsetof(type, member) + offsetof(_Py_atomic_int, _value)))
#define ADDR_VALUE(type, member)                                           \
	((long)(offsetof(type, member) + offsetof(_Py_atomic_address, _value)))
#endif

static void check_size(const char *what, size_t got, size_t want)
{
	if (got != want) {
		fprintf(stderr, "pyabi_probe: %s is %zu bytes, pyabi_gil_holder reads %zu\n",
			what, got, want);
		exit(1);
	}
}
#endif

/*
 * Who holds the GIL, for pyabi_gil_holder (see pyabi.h for the semantics
 * of each kind and why 3.7-3.11 read tstate_current rather than the GIL's
 * own fields).
 */
static void gil(void)
{
#if PY_AT_LEAST(3, 7)
	struct _gil_runtime_state g;

	check_size("_gil_runtime_state.locked", sizeof(g.locked), sizeof(int32_t));
	check_size("_gil_runtime_state.last_holder", sizeof(g.last_holder), sizeof(void *));
#endif
#if PY_AT_LEAST(3, 12)
	emit_sym("gil_kind", "PYABI_GIL_INTERP_PTR", "interp->ceval.gil: locked + last_holder");
	none("rt_tstate_current", "3.12 made the current tstate a C thread-local");
	none("rt_gil", "3.12: the GIL lives in the interpreter (PEP 684)");
	OFF("interp_gil_ptr", PyInterpreterState, ceval.gil);
	OFF("interp_gil", PyInterpreterState, _gil);
#elif PY_AT_LEAST(3, 7)
	check_size("_PyRuntime.gilstate.tstate_current",
		   sizeof(_PyRuntime.gilstate.tstate_current), sizeof(void *));
	emit_sym("gil_kind", "PYABI_GIL_RUNTIME", "_PyRuntime.gilstate.tstate_current");
	emit("rt_tstate_current", ADDR_VALUE(_PyRuntimeState, gilstate.tstate_current),
	     "_PyRuntimeState.gilstate.tstate_current._value");
	OFF("rt_gil", _PyRuntimeState, ceval.gil);
	none("interp_gil_ptr", "3.12+: the GIL moved into the interpreter");
	none("interp_gil", "3.12+: the GIL moved into the interpreter");
#else
#if PY_MAJOR_VERSION >= 3
	/* 3.6: `_Py_atomic_address _PyThreadState_Current`; the sampler
	 * reads the pointer at the symbol's address. */
	if (offsetof(_Py_atomic_address, _value) != 0 ||
	    sizeof(_PyThreadState_Current) != sizeof(void *)) {
		fprintf(stderr, "pyabi_probe: _PyThreadState_Current is not one pointer\n");
		exit(1);
	}
#else
	if (sizeof(_PyThreadState_Current) != sizeof(void *)) {
		fprintf(stderr, "pyabi_probe: _PyThreadState_Current is not one pointer\n");
		exit(1);
	}
#endif
	emit_sym("gil_kind", "PYABI_GIL_CURRENT_SYM", "exported _PyThreadState_Current");
	none("rt_tstate_current", "no _PyRuntime before 3.7");
	none("rt_gil", "GIL state is static in ceval_gil.h / ceval.c");
	none("interp_gil_ptr", "3.12+: the GIL moved into the interpreter");
	none("interp_gil", "3.12+: the GIL moved into the interpreter");
#endif
#if PY_AT_LEAST(3, 7)
	emit("gil_locked", INT_VALUE(struct _gil_runtime_state, locked),
	     "_gil_runtime_state.locked, int");
	emit("gil_holder", ADDR_VALUE(struct _gil_runtime_state, last_holder),
	     "_gil_runtime_state.last_holder");
	check_size("_gil_runtime_state.cond", sizeof(g.cond), sizeof(pthread_cond_t));
	OFF("gil_cond", struct _gil_runtime_state, cond);
#else
	none("gil_locked", "GIL state is static before 3.7");
	none("gil_holder", "GIL state is static before 3.7");
	none("gil_cond", "GIL state is static before 3.7");
#endif
}

/* Which layout family each part of the interpreter uses. */
static void kinds(void)
{
#if PY_AT_LEAST(3, 11)
	emit_sym("frame_kind", "PYABI_FRAME_INTERP", "_PyInterpreterFrame chain");
#else
	emit_sym("frame_kind", "PYABI_FRAME_OBJECT", "PyFrameObject chain");
#endif
#if PY_AT_LEAST(3, 13)
	emit_sym("lasti_kind", "PYABI_LASTI_NEXT", "_PyInterpreterFrame.instr_ptr");
#elif PY_AT_LEAST(3, 11)
	emit_sym("lasti_kind", "PYABI_LASTI_PREV", "_PyInterpreterFrame.prev_instr");
#elif PY_AT_LEAST(3, 10)
	emit_sym("lasti_kind", "PYABI_LASTI_UNITS", "int f_lasti, code units");
#else
	emit_sym("lasti_kind", "PYABI_LASTI_BYTES", "int f_lasti, bytes");
#endif
#if PY_AT_LEAST(3, 11)
	emit_sym("lines_kind", "PYABI_LINES_311", "co_linetable, location table");
#elif PY_AT_LEAST(3, 10)
	emit_sym("lines_kind", "PYABI_LINES_310", "co_linetable, PEP 626");
#elif PY_AT_LEAST(3, 6)
	emit_sym("lines_kind", "PYABI_LINES_LNOTAB", "co_lnotab, signed line deltas");
#else
	emit_sym("lines_kind", "PYABI_LINES_LNOTAB27", "co_lnotab, unsigned line deltas");
#endif
#if PY_MAJOR_VERSION >= 3
	emit_sym("str_kind", "PYABI_STR_UNICODE", "PEP 393 PyUnicodeObject");
#else
	emit_sym("str_kind", "PYABI_STR_BYTES", "PyStringObject");
#endif
}

/* The runtime's interpreter list and the thread states. */
static void threads(void)
{
#if PY_AT_LEAST(3, 7)
	OFF("rt_interp_head", _PyRuntimeState, interpreters.head);
#else
	none("rt_interp_head", "no _PyRuntime: static interp_head in pystate.c");
#endif
	OFF("interp_next", PyInterpreterState, next);
#if PY_AT_LEAST(3, 11)
	OFF("interp_tstate_head", PyInterpreterState, threads.head);
#else
	OFF("interp_tstate_head", PyInterpreterState, tstate_head);
#endif

	/* Thread states. */
	OFF("ts_next", PyThreadState, next);
	OFF("ts_interp", PyThreadState, interp);
	OFF("ts_thread_id", PyThreadState, thread_id);
#if PY_AT_LEAST(3, 11)
	OFF("ts_native_thread_id", PyThreadState, native_thread_id);
#else
	none("ts_native_thread_id", "added in 3.11");
#endif
#if PY_AT_LEAST(3, 13)
	OFF("ts_frame", PyThreadState, current_frame);
	none("ts_cframe", "_PyCFrame removed in 3.13");
	none("cframe_current_frame", "_PyCFrame removed in 3.13");
#elif PY_AT_LEAST(3, 11)
	none("ts_frame", "reached through cframe on 3.11-3.12");
	OFF("ts_cframe", PyThreadState, cframe);
	OFF("cframe_current_frame", _PyCFrame, current_frame);
#else
	OFF("ts_frame", PyThreadState, frame);
	none("ts_cframe", "no _PyCFrame before 3.11");
	none("cframe_current_frame", "no _PyCFrame before 3.11");
#endif
}

/* Frames: the chain, the code and instruction pointers, their owners. */
static void frames(void)
{
#if PY_AT_LEAST(3, 11)
	OFF("f_back", _PyInterpreterFrame, previous);
#if PY_AT_LEAST(3, 13)
	OFF("f_code", _PyInterpreterFrame, f_executable);
	OFF("f_lasti", _PyInterpreterFrame, instr_ptr);
#else
	OFF("f_code", _PyInterpreterFrame, f_code);
	OFF("f_lasti", _PyInterpreterFrame, prev_instr);
#endif
#if PY_AT_LEAST(3, 12)
	none("f_is_entry", "is_entry replaced by FRAME_OWNED_BY_CSTACK shims");
#else
	OFF("f_is_entry", _PyInterpreterFrame, is_entry);
#endif
	OFF("f_owner", _PyInterpreterFrame, owner);
	emit("owner_generator", FRAME_OWNED_BY_GENERATOR, "enum _frameowner FRAME_OWNED_BY_GENERATOR");
#if PY_AT_LEAST(3, 15)
	/* 3.15 dropped FRAME_OWNED_BY_CSTACK: the eval loop's entry frame
	 * is owned by the interpreter. */
	emit("owner_cstack", FRAME_OWNED_BY_INTERPRETER,
	     "enum _frameowner FRAME_OWNED_BY_INTERPRETER, the entry frame");
#elif PY_AT_LEAST(3, 12)
	emit("owner_cstack", FRAME_OWNED_BY_CSTACK, "enum _frameowner FRAME_OWNED_BY_CSTACK");
#else
	none("owner_cstack", "no C-stack shim frames before 3.12");
#endif
#else
	OFF("f_back", PyFrameObject, f_back);
	OFF("f_code", PyFrameObject, f_code);
	OFF("f_lasti", PyFrameObject, f_lasti);
	none("f_is_entry", "frame objects: one per Python call");
	none("f_owner", "frame objects have no owner");
	none("owner_generator", "frame objects have no owner");
	none("owner_cstack", "no C-stack shim frames before 3.12");
#endif
#if PY_AT_LEAST(3, 15)
	none("owner_skip2", "3.15: one entry owner (owner_cstack)");
	emit("code_ref_tag_mask", (long)Py_TAG_BITS, "Py_TAG_BITS of f_executable");
#elif PY_AT_LEAST(3, 14)
	emit("owner_skip2", FRAME_OWNED_BY_INTERPRETER,
	     "enum _frameowner FRAME_OWNED_BY_INTERPRETER, an entry sentinel");
	emit("code_ref_tag_mask", (long)Py_TAG_BITS, "Py_TAG_BITS of f_executable");
#else
	none("owner_skip2", "3.14+: FRAME_OWNED_BY_INTERPRETER");
	emit("code_ref_tag_mask", 0, "3.14+: _PyStackRef tag bits");
#endif
}

/* Code objects. */
static void code_objects(void)
{
	OFF("co_filename", PyCodeObject, co_filename);
	OFF("co_name", PyCodeObject, co_name);
#if PY_AT_LEAST(3, 11)
	OFF("co_qualname", PyCodeObject, co_qualname);
#else
	none("co_qualname", "added in 3.11");
#endif
	OFF("co_firstlineno", PyCodeObject, co_firstlineno);
#if PY_AT_LEAST(3, 10)
	OFF("co_linetable", PyCodeObject, co_linetable);
#else
	OFF("co_linetable", PyCodeObject, co_lnotab);
#endif
#if PY_AT_LEAST(3, 11)
	OFF("co_code_adaptive", PyCodeObject, co_code_adaptive);
	OFF("co_firsttraceable", PyCodeObject, _co_firsttraceable);
	none("co_code", "3.11+: the bytecode is inline (co_code_adaptive)");
	none("co_flags", "3.11+: a frame's owner tells a generator's");
#else
	none("co_code_adaptive", "bytecode is a separate bytes object");
	none("co_firsttraceable", "added in 3.11");
	OFF("co_code", PyCodeObject, co_code);
	OFF("co_flags", PyCodeObject, co_flags);
#endif
}

/* Object headers and bytes. */
static void objects(void)
{
	OFF("ob_type", PyObject, ob_type);
	OFF("var_size", PyVarObject, ob_size);
#if PY_MAJOR_VERSION >= 3
	OFF("bytes_sval", PyBytesObject, ob_sval);
#else
	OFF("bytes_sval", PyStringObject, ob_sval);
#endif
}

/* PEP 393 unicode (2.7: none). */
static void unicode_strings(void)
{
#if PY_MAJOR_VERSION >= 3
	{
		int bit;

		OFF("u_length", PyASCIIObject, length);
		OFF("u_state", PyASCIIObject, state);
		STATE_BIT(kind, 1, 0);
		{
			int base = bit;

			STATE_BIT(kind, 7, 3);
			if (bit != base) {
				fprintf(stderr, "pyabi_probe: kind bits\n");
				exit(1);
			}
		}
		emit("u_kind_shift", bit, "PyASCIIObject.state.kind, 3 bits");
		STATE_BIT(compact, 1, 1);
		emit("u_compact_bit", bit, "PyASCIIObject.state.compact");
		STATE_BIT(ascii, 1, 1);
		emit("u_ascii_bit", bit, "PyASCIIObject.state.ascii");
		emit("u_ascii_size", (long)sizeof(PyASCIIObject), "sizeof(PyASCIIObject)");
		emit("u_compact_size", (long)sizeof(PyCompactUnicodeObject),
		     "sizeof(PyCompactUnicodeObject)");
		OFF("u_data_any", PyUnicodeObject, data.any);
	}
#else
	none("u_length", "2.7 names are PyStringObject");
	none("u_state", "2.7 names are PyStringObject");
	none("u_kind_shift", "2.7 names are PyStringObject");
	none("u_compact_bit", "2.7 names are PyStringObject");
	none("u_ascii_bit", "2.7 names are PyStringObject");
	none("u_ascii_size", "2.7 names are PyStringObject");
	none("u_compact_size", "2.7 names are PyStringObject");
	none("u_data_any", "2.7 names are PyStringObject");
#endif
}

/* Coroutines (3.7+), for the asyncio view: where a coroutine keeps its
 * frame, whether it is suspended in an await, and where a suspended
 * frame's value stack ends (its top is what the coroutine awaits); the
 * frame's locals, for the event loop's self. */
static void coroutines(void)
{
#if PY_AT_LEAST(3, 11)
	OFF("gen_frame", PyGenObject, gi_iframe);
	OFF("gen_frame_state", PyGenObject, gi_frame_state);
#if PY_AT_LEAST(3, 13)
	emit("gen_suspended", FRAME_SUSPENDED_YIELD_FROM,
	     "enum _framestate FRAME_SUSPENDED_YIELD_FROM");
	emit("gen_yielded", FRAME_SUSPENDED, "enum _framestate FRAME_SUSPENDED");
#else
	emit("gen_suspended", FRAME_SUSPENDED, "enum _framestate FRAME_SUSPENDED");
	none("gen_yielded", "FRAME_SUSPENDED covers a yield and an await");
#endif
	OFF("f_localsplus", _PyInterpreterFrame, localsplus);
	none("f_valuestack", "3.11+: the stack follows localsplus");
#if PY_AT_LEAST(3, 14)
	emit_sym("f_stack_kind", "PYABI_STACK_POINTER", "_PyStackRef *stackpointer");
	OFF("f_stack", _PyInterpreterFrame, stackpointer);
#else
	emit_sym("f_stack_kind", "PYABI_STACK_LOCALSPLUS", "int stacktop, from localsplus");
	OFF("f_stack", _PyInterpreterFrame, stacktop);
#endif
#elif PY_AT_LEAST(3, 7)
	OFF("gen_frame", PyGenObject, gi_frame);
	none("gen_frame_state", "a suspended coroutine has a gi_frame with a stack");
	none("gen_suspended", "a suspended coroutine has a gi_frame with a stack");
	none("gen_yielded", "a suspended coroutine has a gi_frame with a stack");
	OFF("f_localsplus", PyFrameObject, f_localsplus);
#if PY_AT_LEAST(3, 10)
	OFF("f_valuestack", PyFrameObject, f_valuestack);
	emit_sym("f_stack_kind", "PYABI_STACK_DEPTH", "int f_stackdepth, from f_valuestack");
	OFF("f_stack", PyFrameObject, f_stackdepth);
#else
	none("f_valuestack", "f_stacktop points past the top");
	emit_sym("f_stack_kind", "PYABI_STACK_TOP", "PyObject **f_stacktop, NULL while running");
	OFF("f_stack", PyFrameObject, f_stacktop);
#endif
#endif
#if PY_AT_LEAST(3, 7)
	OFF("func_closure", PyFunctionObject, func_closure);
#else
	none("gen_frame", "no asyncio view before 3.7");
	none("gen_frame_state", "no asyncio view before 3.7");
	none("gen_suspended", "no asyncio view before 3.7");
	none("gen_yielded", "no asyncio view before 3.7");
	none("f_localsplus", "no asyncio view before 3.7");
	none("f_valuestack", "no asyncio view before 3.7");
	none("f_stack_kind", "no asyncio view before 3.7");
	none("f_stack", "no asyncio view before 3.7");
	none("func_closure", "no asyncio view before 3.7");
#endif
}

/* Instance dictionaries and tuples, for asyncio's pure-Python tasks. */
static void dicts(void)
{
#if PY_AT_LEAST(3, 13)
	emit_sym("dict_kind", "PYABI_DICT_INLINE", "Py_TPFLAGS_INLINE_VALUES, else the managed dict");
#elif PY_AT_LEAST(3, 12)
	emit_sym("dict_kind", "PYABI_DICT_TAGGED", "managed dict or tagged values at -24");
#elif PY_AT_LEAST(3, 11)
	emit_sym("dict_kind", "PYABI_DICT_MANAGED", "Py_TPFLAGS_MANAGED_DICT: dict at -24, values at -32");
#elif PY_AT_LEAST(3, 7)
	emit_sym("dict_kind", "PYABI_DICT_OFFSET", "a dict at tp_dictoffset");
#else
	emit_sym("dict_kind", "PYABI_DICT_NONE", "no asyncio view before 3.7");
#endif
#if PY_AT_LEAST(3, 11)
	emit("dict_old_keys", 0, "PyDictKeysObject with dk_log2_size");
	OFF("dict_values_at", PyDictValues, values);
	OFF("ht_cached_keys", PyHeapTypeObject, ht_cached_keys);
#else
	emit("dict_old_keys", PY_AT_LEAST(3, 7), "PyDictKeysObject with dk_size");
	emit("dict_values_at", 0, "PyObject **ma_values");
	none("ht_cached_keys", "read through tp_dictoffset's dict");
#endif
	OFF("tuple_items", PyTupleObject, ob_item);
}

/* Thread names read from outside (collector/remote/remote_names.c): where
 * sys.modules is, and how an ordinary dict (sys.modules, a module's dict,
 * threading._active) lays out its entries on every version. */
static void thread_names(void)
{
#if PY_AT_LEAST(3, 12)
	OFF("interp_modules", PyInterpreterState, imports.modules);
#else
	OFF("interp_modules", PyInterpreterState, modules);
#endif
#if PY_AT_LEAST(3, 11)
	emit_sym("dict_table", "PYABI_TABLE_LOG2", "PyDictKeysObject with dk_log2_size");
#elif PY_MAJOR_VERSION >= 3
	emit_sym("dict_table", "PYABI_TABLE_SIZE", "PyDictKeysObject with dk_size (3.6+)");
#else
	emit_sym("dict_table", "PYABI_TABLE_27", "PyDictObject's own ma_table");
#endif
#if PY_MAJOR_VERSION >= 3
	none("dict27_mask", "2.7: PyDictObject.ma_mask");
	none("dict27_table", "2.7: PyDictObject.ma_table");
#else
	OFF("dict27_mask", PyDictObject, ma_mask);
	OFF("dict27_table", PyDictObject, ma_table);
#endif
}

/*
 * The objects the asyncio view, the labels and the thread names read
 * from outside read besides frames and code (signal/sig_asyncio.c,
 * sig_pydict.c, sig_labels.c): type objects, instance dictionaries and
 * ordinary dicts and their keys, sets, lists, weak references, bound
 * methods, cells, ints. Every one is a struct of the headers; the
 * 3.6-3.10 keys object (private to Objects/dict-common.h) and the private
 * structs (functools.partial, asyncio's TaskObj) are measured by
 * tools/pyabi_measure.py, whose lines end the row.
 */
#if PY_AT_LEAST(3, 11)
/* Where an instance's managed dict (3.12: or its tagged values) sits,
 * relative to the object: asked of the headers' own accessor, on an
 * object of a zeroed type that says it has a managed dict. */
static long managed_at(int values)
{
	static PyTypeObject tp;
	static union {
		PyObject o[8];
		char bytes[8 * sizeof(PyObject)];
	} mem;
	PyObject *obj = &mem.o[4];

	tp.tp_flags = Py_TPFLAGS_MANAGED_DICT;
	Py_SET_TYPE(obj, &tp);
#if PY_AT_LEAST(3, 13)
	(void)values;
	return (long)MANAGED_DICT_OFFSET;
#elif PY_AT_LEAST(3, 12)
	(void)values;
	return (long)((char *)_PyObject_DictOrValuesPointer(obj) - (char *)obj);
#else
	if (values)
		return (long)((char *)_PyObject_ValuesPointer(obj) - (char *)obj);
	return (long)((char *)_PyObject_ManagedDictPointer(obj) - (char *)obj);
#endif
}
#endif

static void objects_read(void)
{
	OFF("tp_basicsize", PyTypeObject, tp_basicsize);
	OFF("tp_name", PyTypeObject, tp_name);
	OFF("tp_flags", PyTypeObject, tp_flags);
	OFF("tp_dictoffset", PyTypeObject, tp_dictoffset);
#if PY_AT_LEAST(3, 11)
	emit("tpflag_managed_dict", (long)Py_TPFLAGS_MANAGED_DICT, "Py_TPFLAGS_MANAGED_DICT");
	emit("obj_managed_dict", managed_at(0), "the managed dict, from the object");
#else
	emit("tpflag_managed_dict", 0, "3.11+: Py_TPFLAGS_MANAGED_DICT");
	none("obj_managed_dict", "3.11+: the managed dict");
#endif
#if PY_AT_LEAST(3, 12)
	none("obj_managed_values", "3.11 only: the values pointer of its own");
#elif PY_AT_LEAST(3, 11)
	emit("obj_managed_values", managed_at(1), "_PyObject_ValuesPointer, from the object");
#else
	none("obj_managed_values", "3.11 only: the values pointer of its own");
#endif
#if PY_AT_LEAST(3, 13)
	emit("tpflag_inline_values", (long)Py_TPFLAGS_INLINE_VALUES, "Py_TPFLAGS_INLINE_VALUES");
	OFF("dictvalues_capacity", PyDictValues, capacity);
	OFF("dictvalues_valid", PyDictValues, valid);
#else
	emit("tpflag_inline_values", 0, "3.13+: Py_TPFLAGS_INLINE_VALUES");
	none("dictvalues_capacity", "3.13+: PyDictValues.capacity");
	none("dictvalues_valid", "3.13+: PyDictValues.valid");
#endif
#if PY_MAJOR_VERSION >= 3
	OFF("dict_ma_keys", PyDictObject, ma_keys);
	OFF("dict_ma_values", PyDictObject, ma_values);
#else
	none("dict_ma_keys", "2.7: no split tables");
	none("dict_ma_values", "2.7: no split tables");
#endif
#if PY_AT_LEAST(3, 11)
	/* 3.7-3.10's keys object: tools/pyabi_measure.py */
	none("dk_size", "3.11+: dk_log2_size, a byte");
	OFF("dk_log2_index_bytes", PyDictKeysObject, dk_log2_index_bytes);
	OFF("dk_kind", PyDictKeysObject, dk_kind);
	emit("dk_kind_general", DICT_KEYS_GENERAL, "enum DICT_KEYS_GENERAL: entries with a hash");
	OFF("dk_nentries", PyDictKeysObject, dk_nentries);
	OFF("dk_indices", PyDictKeysObject, dk_indices);
	emit("dict_entry_size", (long)sizeof(PyDictKeyEntry), "sizeof(PyDictKeyEntry)");
	OFF("dict_entry_hash", PyDictKeyEntry, me_hash);
	OFF("dict_entry_key", PyDictKeyEntry, me_key);
	OFF("dict_entry_value", PyDictKeyEntry, me_value);
	emit("dict_uentry_size", (long)sizeof(PyDictUnicodeEntry), "sizeof(PyDictUnicodeEntry)");
	OFF("dict_uentry_key", PyDictUnicodeEntry, me_key);
	OFF("dict_uentry_value", PyDictUnicodeEntry, me_value);
#else
#if PY_MAJOR_VERSION < 3
	/* 2.7: no keys object (dk_size, dk_nentries, dk_indices: NONE, from
	 * tools/pyabi_measure.py), the slots of ma_table are PyDictEntry;
	 * 3.6-3.10's entries are measured with their keys object */
	emit("dict_entry_size", (long)sizeof(PyDictEntry), "sizeof(PyDictEntry)");
	OFF("dict_entry_hash", PyDictEntry, me_hash);
	OFF("dict_entry_key", PyDictEntry, me_key);
	OFF("dict_entry_value", PyDictEntry, me_value);
#endif
	none("dk_log2_index_bytes", "3.11+: PyDictKeysObject.dk_log2_index_bytes");
	none("dk_kind", "3.11+: PyDictKeysObject.dk_kind");
	none("dk_kind_general", "3.11+: DICT_KEYS_GENERAL");
	none("dict_uentry_size", "3.11+: PyDictUnicodeEntry");
	none("dict_uentry_key", "3.11+: PyDictUnicodeEntry");
	none("dict_uentry_value", "3.11+: PyDictUnicodeEntry");
#endif
	OFF("set_mask", PySetObject, mask);
	OFF("set_table", PySetObject, table);
	emit("set_entry_size", (long)sizeof(setentry), "sizeof(setentry)");
	OFF("set_entry_key", setentry, key);
	OFF("list_items", PyListObject, ob_item);
	OFF("weakref_object", PyWeakReference, wr_object);
	OFF("method_self", PyMethodObject, im_self);
	OFF("cell_ref", PyCellObject, ob_ref);
#if PY_AT_LEAST(3, 12)
	OFF("long_tag", PyLongObject, long_value.lv_tag);
	OFF("long_digits", PyLongObject, long_value.ob_digit);
#else
	none("long_tag", "3.12+: _PyLongValue.lv_tag");
	none("long_digits", "3.12+: _PyLongValue.ob_digit");
#endif
}

static void emit_str(const char *name, const char *str, const char *why)
{
	char lhs[80];

	snprintf(lhs, sizeof(lhs), ".%s = \"%s\",", name, str);
	printf("\t\t%-34s /* %s */\n", lhs, why);
}

/*
 * What a version does, beyond where its fields are: the facts the library
 * outside preload/cpython/ acts on (its C API, its locks, its fork, its
 * asyncio), so that no file there tests the version number. From the
 * headers where they tell (a header that exists, a symbol declared),
 * else from this file's version ladder, the one place that tests it;
 * asyncio's registry is asked of asyncio itself (pyabi_measure.py).
 */
static void facts(void)
{
#if PY_MAJOR_VERSION >= 3
	emit("py2_c_api", 0, "PyLong, PyUnicode");
	emit("mem_allocators", 1, "PEP 445 PyMem_SetAllocator");
	emit_str("eval_frame", "_PyEval_EvalFrameDefault", "PEP 523's default frame evaluator");
	(void)&_PyEval_EvalFrameDefault;
#else
	emit("py2_c_api", 1, "PyInt, PyString, a name-mangled Thread.__name");
	emit("mem_allocators", 0, "PEP 445 (3.4+): PyMem_SetAllocator");
	emit_str("eval_frame", "PyEval_EvalFrameEx", "the frame evaluator");
	(void)&PyEval_EvalFrameEx;
#endif
	/* Block and mutex profiles are measured from 3.8 (docs/waits.md) */
	emit("waits_profiled", PY_AT_LEAST(3, 8), "block and mutex profiles (3.8+)");
#if __has_include("internal/pycore_parking_lot.h")
	emit("locks_park", 1, "pycore_parking_lot.h: a PyMutex waiter parks");
#else
	emit("locks_park", 0, "no parking lot: a lock waits on its sem_t");
#endif
	/* 3.9 moved pending calls into the interpreter: one not yet run no
	 * longer makes every thread's eval loop break for it */
	emit("pending_calls_cheap", PY_AT_LEAST(3, 9), "a pending call costs others nothing (3.9+)");
	/* 3.12's os.fork warns (DeprecationWarning) of other threads */
	emit("fork_warns_of_threads", PY_AT_LEAST(3, 12), "os.fork warns of other threads (3.12+)");
	/* 3.14 keeps C tasks on per-thread lists, described by
	 * _Py_AsyncioModuleDebugOffsets */
	emit("asyncio_task_lists", PY_AT_LEAST(3, 14), "C tasks on per-thread lists (3.14+)");
}

/* Context variables (3.7+): where a context keeps its variables, a
 * HAMT, and where the HAMT keeps its root node (the labels read them;
 * the nodes themselves are private to Python/hamt.c). */
static void contexts(void)
{
#if PY_AT_LEAST(3, 7)
	OFF("ctx_vars", PyContext, ctx_vars);
	OFF("hamt_root", PyHamtObject, h_root);
#else
	none("ctx_vars", "3.7+: PyContext.ctx_vars");
	none("hamt_root", "3.7+: PyHamtObject.h_root");
#endif
}

/* The struct pyabi initializer, its fields in the struct's order. */
static void row(void)
{
	printf("\t{ /* %d.%d, from the headers of %s */\n", PY_MAJOR_VERSION,
	       PY_MINOR_VERSION, PY_VERSION);
	emit("major", PY_MAJOR_VERSION, "PY_MAJOR_VERSION");
	emit("minor", PY_MINOR_VERSION, "PY_MINOR_VERSION");
	kinds();
	threads();
	gil();
	frames();
#if PY_MAJOR_VERSION == 3 && PY_MINOR_VERSION == 8
	OFF("rt_pending_finishing", _PyRuntimeState, ceval.pending.finishing);
#else
	none("rt_pending_finishing", "only 3.8's Py_AddPendingCall prints an error once finalization began");
#endif
	code_objects();
	objects();
	unicode_strings();
	coroutines();
	dicts();
	thread_names();
	objects_read();
	facts();
	contexts();
	printf("\t},\n");
}

#if PY_AT_LEAST(3, 13)
#define DBG(name, member) emit(name, (long)offsetof(_Py_DebugOffsets, member), "_Py_DebugOffsets." #member)

/* Where, inside _Py_DebugOffsets, each value that pyabi_check_debug_offsets
 * compares and pyabi_from_debug_offsets reads sits. _PyRuntime must start
 * with it for either to work. */
static void dbg(void)
{
	if (offsetof(_PyRuntimeState, debug_offsets) != 0) {
		fprintf(stderr, "pyabi_probe: _PyRuntime does not start with _Py_DebugOffsets\n");
		exit(1);
	}
	printf("\t{ /* %d.%d, from the headers of %s */\n", PY_MAJOR_VERSION,
	       PY_MINOR_VERSION, PY_VERSION);
	emit("major", PY_MAJOR_VERSION, "PY_MAJOR_VERSION");
	emit("minor", PY_MINOR_VERSION, "PY_MINOR_VERSION");
	DBG("cookie", cookie);
	DBG("version", version);
	DBG("free_threaded", free_threaded);
	/* each sub-struct's own size, which the block declares: offsets
	 * read from it are checked against them */
	DBG("rt_size", runtime_state.size);
	DBG("interp_size", interpreter_state.size);
	DBG("ts_size", thread_state.size);
	DBG("f_size", interpreter_frame.size);
	DBG("co_size", code_object.size);
	DBG("ob_size", pyobject.size);
	DBG("tp_size", type_object.size);
	DBG("tp_name", type_object.tp_name);
	DBG("bytes_size", bytes_object.size);
	DBG("u_size", unicode_object.size);
#if PY_AT_LEAST(3, 15)
	DBG("u_compact_size", unicode_object.compactunicodeobject_size);
#else
	none("u_compact_size", "3.15+: unicode_object.compactunicodeobject_size");
#endif
	DBG("rt_interp_head", runtime_state.interpreters_head);
	DBG("interp_next", interpreter_state.next);
	DBG("interp_tstate_head", interpreter_state.threads_head);
	DBG("interp_gil_ptr", interpreter_state.ceval_gil);
	DBG("interp_gil", interpreter_state.gil_runtime_state);
	DBG("interp_gil_locked", interpreter_state.gil_runtime_state_locked);
	DBG("interp_gil_holder", interpreter_state.gil_runtime_state_holder);
	DBG("ts_next", thread_state.next);
	DBG("ts_interp", thread_state.interp);
	DBG("ts_frame", thread_state.current_frame);
	DBG("ts_thread_id", thread_state.thread_id);
	DBG("ts_native_thread_id", thread_state.native_thread_id);
	DBG("f_back", interpreter_frame.previous);
	DBG("f_code", interpreter_frame.executable);
	DBG("f_lasti", interpreter_frame.instr_ptr);
	DBG("f_owner", interpreter_frame.owner);
	DBG("co_filename", code_object.filename);
	DBG("co_name", code_object.name);
	DBG("co_qualname", code_object.qualname);
	DBG("co_linetable", code_object.linetable);
	DBG("co_firstlineno", code_object.firstlineno);
	DBG("co_code_adaptive", code_object.co_code_adaptive);
	DBG("ob_type", pyobject.ob_type);
	DBG("var_size", bytes_object.ob_size);
	DBG("bytes_sval", bytes_object.ob_sval);
	DBG("u_state", unicode_object.state);
	DBG("u_length", unicode_object.length);
	DBG("u_ascii_size", unicode_object.asciiobject_size);
	/* PEP 768's remote exec (3.14+): where `pyprof attach` writes the
	 * script's path into the main thread state, from our own process */
#if PY_AT_LEAST(3, 14)
	DBG("interp_threads_main", interpreter_state.threads_main);
	DBG("dbg_eval_breaker", debugger_support.eval_breaker);
	DBG("dbg_remote_support", debugger_support.remote_debugger_support);
	DBG("dbg_remote_enabled", debugger_support.remote_debugging_enabled);
	DBG("dbg_pending_call", debugger_support.debugger_pending_call);
	DBG("dbg_script_path", debugger_support.debugger_script_path);
	DBG("dbg_script_path_size", debugger_support.debugger_script_path_size);
#else
	none("interp_threads_main", "3.14+: interpreter_state.threads_main");
	none("dbg_eval_breaker", "3.14+: debugger_support.eval_breaker");
	none("dbg_remote_support", "3.14+: debugger_support.remote_debugger_support");
	none("dbg_remote_enabled", "3.14+: debugger_support.remote_debugging_enabled");
	none("dbg_pending_call", "3.14+: debugger_support.debugger_pending_call");
	none("dbg_script_path", "3.14+: debugger_support.debugger_script_path");
	none("dbg_script_path_size", "3.14+: debugger_support.debugger_script_path_size");
#endif
	printf("\t},\n");
}
#endif

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "row") == 0) {
		row();
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "dbg") == 0) {
#if PY_AT_LEAST(3, 13)
		dbg();
#endif
		return 0;
	}
	fprintf(stderr, "usage: pyabi_probe row|dbg\n");
	return 2;
}
