/*
 * test_pyabi.c - pyabi_from_debug_offsets and pyabi_compare on made-up
 * _Py_DebugOffsets blocks.
 *
 * Real interpreters' blocks are read by the end-to-end tests
 * (tests/e2e/dbgoffsets.bats, make check-debug-offsets); this file pins
 * what they cannot show: a version newer than every compiled row (3.16)
 * whose block keeps 3.15's shape is laid out from it; its values, not the
 * compiled ones, are used; a block of a known version in another known
 * shape is read with that shape; and each validation refuses what it must
 * (cookie, version, free threading, sizes, object headers, PyCode_Type's
 * name, unreadable memory, versions without a block).
 *
 * The block is a struct written here in the order of CPython 3.15's
 * Include/internal/pycore_debug_offsets.h (every member a uint64_t after
 * the 8-byte cookie); its values come from the compiled 3.15 row.
 * Cases: 1 a 3.16 with 3.15's shape, 2 values that differ, 3 refusals,
 * 4 pyabi_compare.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "pyprof/pyabi.h"

/* 3.15's _Py_DebugOffsets, member for member. */
struct dbg315 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, threads_main, gc;
		uint64_t imports_modules, sysdict, builtins, ceval_gil;
		uint64_t gil_runtime_state, gil_runtime_state_enabled;
		uint64_t gil_runtime_state_locked, gil_runtime_state_holder;
		uint64_t code_object_generation, tlbc_generation;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, base_frame;
		uint64_t last_profiled_frame, last_profiled_frame_seq;
		uint64_t thread_id, native_thread_id, datastack_chunk, status;
		uint64_t holds_gil, gil_requested, current_exception, exc_state;
	} thread_state;
	struct {
		uint64_t exc_value;
	} err_stackitem;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus;
		uint64_t owner, stackpointer, tlbc_index;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno;
		uint64_t argcount, localsplusnames, localspluskinds;
		uint64_t co_code_adaptive, co_tlbc;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags, tp_basicsize;
		uint64_t tp_dictoffset;
	} type_object;
	struct {
		uint64_t size, ht_cached_keys;
	} heap_type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} list_object;
	struct {
		uint64_t size, used, table, mask;
	} set_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
		uint64_t compactunicodeobject_size;
	} unicode_object;
	struct {
		uint64_t size, collecting, frame, generation_stats_size;
		uint64_t generation_stats;
	} gc;
	struct {
		uint64_t size, gi_name, gi_iframe, gi_frame_state;
	} gen_object;
	struct {
		uint64_t next, prev;
	} llist_node;
	struct {
		uint64_t eval_breaker, remote_debugger_support;
		uint64_t remote_debugging_enabled, debugger_pending_call;
		uint64_t debugger_script_path, debugger_script_path_size;
	} debugger_support;
};

/* A stand-in for PyCode_Type: tp_name where the block says. */
static char code_type[256];
static const char code_name[] = "code";
static const char other_name[] = "frame";

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

/* The block a 3.<minor> with 3.15's shape and 3.15's offsets states. */
static void fill(struct dbg315 *b, int minor)
{
	const struct pyabi *r = pyabi_find(3, 15);
	const char *name = code_name;

	memset(b, 0, sizeof(*b));
	memcpy(b->cookie, "xdebugpy", 8);
	b->version = 0x030000a1u | (uint64_t)minor << 16; /* 3.<minor>.0a1 */
	b->runtime_state.size = 100000;
	b->runtime_state.interpreters_head = (uint64_t)r->rt_interp_head;
	b->interpreter_state.size = 20000;
	b->interpreter_state.next = (uint64_t)r->interp_next;
	b->interpreter_state.threads_head = (uint64_t)r->interp_tstate_head;
	b->interpreter_state.ceval_gil = (uint64_t)r->interp_gil_ptr;
	b->interpreter_state.gil_runtime_state = (uint64_t)r->interp_gil;
	b->interpreter_state.gil_runtime_state_locked =
		(uint64_t)(r->interp_gil + r->gil_locked);
	b->interpreter_state.gil_runtime_state_holder =
		(uint64_t)(r->interp_gil + r->gil_holder);
	b->thread_state.size = 400;
	b->thread_state.next = (uint64_t)r->ts_next;
	b->thread_state.interp = (uint64_t)r->ts_interp;
	b->thread_state.current_frame = (uint64_t)r->ts_frame;
	b->thread_state.thread_id = (uint64_t)r->ts_thread_id;
	b->thread_state.native_thread_id = (uint64_t)r->ts_native_thread_id;
	b->interpreter_frame.size = 80;
	b->interpreter_frame.previous = (uint64_t)r->f_back;
	b->interpreter_frame.executable = (uint64_t)r->f_code;
	b->interpreter_frame.instr_ptr = (uint64_t)r->f_lasti;
	b->interpreter_frame.owner = (uint64_t)r->f_owner;
	b->code_object.size = (uint64_t)r->co_code_adaptive;
	b->code_object.filename = (uint64_t)r->co_filename;
	b->code_object.name = (uint64_t)r->co_name;
	b->code_object.qualname = (uint64_t)r->co_qualname;
	b->code_object.linetable = (uint64_t)r->co_linetable;
	b->code_object.firstlineno = (uint64_t)r->co_firstlineno;
	b->code_object.co_code_adaptive = (uint64_t)r->co_code_adaptive;
	b->pyobject.size = 16;
	b->pyobject.ob_type = (uint64_t)r->ob_type;
	b->type_object.size = 200;
	b->type_object.tp_name = 24;
	b->bytes_object.size = 40;
	b->bytes_object.ob_size = (uint64_t)r->var_size;
	b->bytes_object.ob_sval = (uint64_t)r->bytes_sval;
	b->unicode_object.size = 72;
	b->unicode_object.state = (uint64_t)r->u_state;
	b->unicode_object.length = (uint64_t)r->u_length;
	b->unicode_object.asciiobject_size = (uint64_t)r->u_ascii_size;
	b->unicode_object.compactunicodeobject_size = (uint64_t)r->u_compact_size;
	memcpy(code_type + 24, &name, sizeof(name));
}

static int derive(const struct dbg315 *b, int minor, struct pyabi_derived *d,
		  char *why, size_t why_len)
{
	memset(d, 0, sizeof(*d));
	return pyabi_from_debug_offsets(3, minor, -1, -1, b, code_type, rd, d, why,
					why_len);
}

static void test_next_release(void)
{
	const struct pyabi *r15 = pyabi_find(3, 15);
	struct pyabi_derived d;
	struct dbg315 b;
	char why[200];
	int rc;

	CHECK_OR_RETURN(r15 != NULL, "1.0 a compiled 3.15 row", );
	CHECK(pyabi_find(3, 16) == NULL, "1.0 no compiled 3.16 row");
	fill(&b, 16);
	rc = derive(&b, 16, &d, why, sizeof(why));
	if (rc)
		fprintf(stderr, "why: %s\n", why);
	CHECK(rc == 0, "1.1 a 3.16 block with 3.15's shape is accepted");
	CHECK(d.abi.major == 3 && d.abi.minor == 16, "1.2 the row says 3.16");
	CHECK(d.layout_minor == 15, "1.3 read with 3.15's block layout");
	CHECK(d.facts_minor == 15, "1.4 other facts from the newest row, 3.15");
	CHECK(pyabi_compare(r15, &d.abi, why, sizeof(why)) == 0,
	      "1.5 every offset as 3.15's, derived ones included");
	CHECK(d.abi.owner_cstack == r15->owner_cstack &&
		      d.abi.code_ref_tag_mask == r15->code_ref_tag_mask &&
		      d.abi.u_kind_shift == r15->u_kind_shift &&
		      d.abi.gil_kind == r15->gil_kind,
	      "1.6 owners, tag bits, unicode bits, GIL kind from 3.15's row");
}

static void test_values_win(void)
{
	const struct pyabi *r15 = pyabi_find(3, 15);
	struct pyabi_derived d;
	struct dbg315 b;
	char why[200];

	fill(&b, 16);
	b.thread_state.thread_id += 8;
	b.code_object.co_code_adaptive += 8;
	b.code_object.size += 8;
	b.unicode_object.compactunicodeobject_size += 8;
	b.interpreter_state.gil_runtime_state += 16;
	b.interpreter_state.gil_runtime_state_locked += 16;
	b.interpreter_state.gil_runtime_state_holder += 16;
	CHECK_OR_RETURN(derive(&b, 16, &d, why, sizeof(why)) == 0,
			"2.0 a block with moved fields is accepted", );
	CHECK(d.abi.ts_thread_id == r15->ts_thread_id + 8,
	      "2.1 thread_id from the block");
	CHECK(d.abi.co_code_adaptive == r15->co_code_adaptive + 8 &&
		      d.abi.co_firsttraceable == r15->co_firsttraceable + 8,
	      "2.2 _co_firsttraceable keeps its distance from the bytecode");
	CHECK(d.abi.u_compact_size == r15->u_compact_size + 8 &&
		      d.abi.u_data_any == r15->u_data_any + 8,
	      "2.3 compact unicode size from the block, data follows it");
	CHECK(d.abi.interp_gil == r15->interp_gil + 16 &&
		      d.abi.gil_locked == r15->gil_locked &&
		      d.abi.gil_holder == r15->gil_holder,
	      "2.4 the GIL's fields relative to the GIL");
	CHECK(pyabi_compare(r15, &d.abi, why, sizeof(why)) == -EPROTO &&
		      strstr(why, "ts_thread_id") != NULL,
	      "2.5 the difference is named");

	/* a known version (3.14) whose block has 3.15's shape: its own
	 * layout does not fit, 3.15's does; facts stay 3.14's */
	fill(&b, 14);
	CHECK(derive(&b, 14, &d, why, sizeof(why)) == 0 && d.layout_minor == 15 &&
		      d.facts_minor == 14,
	      "2.6 a 3.14 block in 3.15's shape is read with 3.15's layout");
	/* withheld row: facts from the newest other row */
	fill(&b, 15);
	memset(&d, 0, sizeof(d));
	CHECK(pyabi_from_debug_offsets(3, 15, 15, -1, &b, code_type, rd, &d, why,
				       sizeof(why)) == 0 &&
		      d.facts_minor == 14 && d.layout_minor == 15,
	      "2.7 3.15 with its row withheld: facts from 3.14, layout 3.15's");
}

/* rc and why of a 3.16 block after mutate(b). */
static int refused(void (*mutate)(struct dbg315 *), const char *want)
{
	struct pyabi_derived d;
	struct dbg315 b;
	char why[200];
	int rc;

	fill(&b, 16);
	mutate(&b);
	rc = derive(&b, 16, &d, why, sizeof(why));
	if (rc != -EPROTO || !strstr(why, want))
		fprintf(stderr, "rc %d why: %s (want %s)\n", rc, why, want);
	return rc == -EPROTO && strstr(why, want) != NULL;
}

static void bad_cookie(struct dbg315 *b)
{
	b->cookie[0] = 'y';
}
static void bad_version(struct dbg315 *b)
{
	b->version = 0x031100f0u;
}
static void threaded(struct dbg315 *b)
{
	b->free_threaded = 1;
}
static void beyond(struct dbg315 *b)
{
	b->thread_state.thread_id = b->thread_state.size;
}
static void huge(struct dbg315 *b)
{
	b->runtime_state.size = 1ull << 40;
}
static void header(struct dbg315 *b)
{
	b->bytes_object.ob_sval = 24;
}
static void not_code(struct dbg315 *b)
{
	const char *name = other_name;

	(void)b;
	memcpy(code_type + 24, &name, sizeof(name));
}
static void gil_before(struct dbg315 *b)
{
	b->interpreter_state.gil_runtime_state_locked =
		b->interpreter_state.gil_runtime_state - 8;
}
static void compact(struct dbg315 *b)
{
	b->unicode_object.compactunicodeobject_size = b->unicode_object.asciiobject_size;
}

static void test_refusals(void)
{
	struct pyabi_derived d;
	struct dbg315 b;
	char why[200];

	CHECK(refused(bad_cookie, "no xdebugpy cookie"), "3.1 a block without the cookie");
	CHECK(refused(bad_version, "is not 3.16"), "3.2 another version's block");
	CHECK(refused(threaded, "free-threaded"), "3.3 a free-threaded build");
	CHECK(refused(beyond, "thread_state.thread_id"), "3.4 an offset beyond its struct");
	CHECK(refused(huge, "interpreters_head"), "3.5 an implausible size");
	CHECK(refused(header, "bytes_object.ob_sval 24, not 32"), "3.6 a moved object header");
	CHECK(refused(not_code, "does not name PyCode_Type"), "3.7 tp_name misplaced");
	CHECK(refused(gil_before, "before the GIL"), "3.8 GIL fields before the GIL");
	CHECK(refused(compact, "compactunicodeobject_size"), "3.9 compact size <= ascii size");

	fill(&b, 16);
	memset(&d, 0, sizeof(d));
	CHECK(pyabi_from_debug_offsets(3, 16, -1, -1, &b, code_type, rd_fail, &d, why,
				       sizeof(why)) == -EFAULT &&
		      strstr(why, "cannot be read"),
	      "3.10 unreadable memory: -EFAULT");
	CHECK(pyabi_from_debug_offsets(3, 12, -1, -1, &b, code_type, rd, &d, why,
				       sizeof(why)) == -ENOTSUP,
	      "3.11 3.12 has no block");
	CHECK(pyabi_from_debug_offsets(4, 0, -1, -1, &b, code_type, rd, &d, why,
				       sizeof(why)) == -ENOTSUP,
	      "3.12 no row of major 4 to take facts from");
	CHECK(pyabi_from_debug_offsets(3, 16, -1, -1, NULL, code_type, rd, &d, why,
				       sizeof(why)) == -EINVAL,
	      "3.13 NULL runtime");
	/* 3.15's own layout withheld: no other layout fits 3.15's shape */
	fill(&b, 16);
	memset(&d, 0, sizeof(d));
	CHECK(pyabi_from_debug_offsets(3, 16, -1, 15, &b, code_type, rd, &d, why,
				       sizeof(why)) == -EPROTO &&
		      strstr(why, "fits no known layout"),
	      "3.14 a block in a shape no known layout has");
}

static void test_compare(void)
{
	const struct pyabi *r = pyabi_find(3, 13);
	struct pyabi copy;
	char why[200];

	CHECK_OR_RETURN(r != NULL, "4.0 a compiled 3.13 row", );
	copy = *r;
	CHECK(pyabi_compare(r, &copy, why, sizeof(why)) == 0 && why[0] == '\0',
	      "4.1 a row agrees with itself");
	copy.u_data_any++;
	CHECK(pyabi_compare(r, &copy, why, sizeof(why)) == -EPROTO &&
		      strstr(why, "u_data_any") && strstr(why, "3.13 row"),
	      "4.2 the last field is compared and named");
	CHECK(pyabi_compare(NULL, &copy, why, sizeof(why)) == -EINVAL, "4.3 NULL");
}

int main(void)
{
	test_next_release();
	test_values_win();
	test_refusals();
	test_compare();
	return check_summary();
}
