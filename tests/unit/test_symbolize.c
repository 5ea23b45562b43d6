/*
 * test_symbolize.c - naming a sampled code object on the agent thread
 * (preload/agent/symbolize.c) when it may have died since the sample. A
 * code object freed after the sample keeps its fields (pymalloc writes
 * over its reference count only), so its fingerprint still matches: it is
 * named from its strings while they are still strs (a module's code,
 * freed once its import is done, must keep its name), and is "[unknown]"
 * once their memory holds something else: another type, or bytes that no
 * str holds (the stress test once named such a frame "\ufffd" at 10 kHz
 * on 3.11).
 *
 * Fake objects in the 3.11 layout: a code object whose name, qualified
 * name and file name are compact ASCII strs and whose line table is a
 * bytes object.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "agent/symbolize.h"
#include "base/guard.h"
#include "base/intern.h"
#include "base/sampler.h"
#include "pyprof/pyabi.h"

#define AT(buf, off) (*(uintptr_t *)((uint8_t *)(buf) + (off)))

static _Alignas(16) uint8_t m_code[512];
static _Alignas(16) uint8_t m_name[128], m_file[128], m_table[64];
static uintptr_t m_code_type[8]; /* stands for &PyCode_Type */
static uintptr_t m_str_type[8];	 /* for &PyUnicode_Type */

/* A compact ASCII str holding s at obj. */
static void fake_str(const struct pyabi *a, uint8_t *obj, const char *s)
{
	int64_t len = (int64_t)strlen(s);
	uint32_t st = 1u << a->u_kind_shift | 1u << a->u_compact_bit |
		      1u << a->u_ascii_bit;
	memset(obj, 0, 128);
	AT(obj, 0) = 1; /* the reference count */
	AT(obj, a->ob_type) = (uintptr_t)m_str_type;
	memcpy(obj + a->u_length, &len, sizeof len);
	for (int i = 0; i < 4; i++)
		obj[a->u_state + i] = (uint8_t)(st >> (8 * i));
	memcpy(obj + a->u_ascii_size, s, (size_t)len);
}

/* The code object, alive (reference count 3); returns its fingerprint. */
static uint32_t fake_code(const struct pyabi *a)
{
	int64_t tlen = 0;
	memset(m_code, 0, sizeof m_code);
	AT(m_code, 0) = 3;
	AT(m_code, a->ob_type) = (uintptr_t)m_code_type;
	AT(m_code, a->co_name) = (uintptr_t)m_name;
	AT(m_code, a->co_qualname) = (uintptr_t)m_name;
	AT(m_code, a->co_filename) = (uintptr_t)m_file;
	AT(m_code, a->co_linetable) = (uintptr_t)m_table;
	*(int32_t *)(m_code + a->co_firstlineno) = 7;
	memset(m_table, 0, sizeof m_table);
	memcpy(m_table + a->var_size, &tlen, sizeof tlen);
	fake_str(a, m_name, "work");
	fake_str(a, m_file, "/srv/app.py");
	return sampler_fp((uintptr_t)m_name, (uintptr_t)m_file, 7);
}

/* The function name the location loc has in in, or "". */
static const char *loc_name(const struct intern *in, uint32_t loc)
{
	if (!loc || loc > in->n_locs)
		return "";
	uint32_t f = in->locs[loc - 1].func;
	if (!f || f > in->n_funcs)
		return "";
	uint32_t s = in->funcs[f - 1].name;
	return s && s <= in->n_strs ? in->strs[s - 1].s : "";
}

/* Names one frame of the code object with a fresh symbolizer; the
 * name, and whether it was counted as unknown. */
static const char *name_once(struct intern *in, uint32_t fp, int *unknown)
{
	struct symbolizer *s = symbolize_new(in);
	struct raw_frame f = { (uintptr_t)m_code, RAW_NOT_STARTED, fp };
	uint32_t loc = symbolize_frame(s, &f);
	unsigned long n_code, n_unknown;
	symbolize_stats(s, &n_code, &n_unknown);
	*unknown = n_unknown == 1;
	symbolize_free(s);
	return loc_name(in, loc);
}

int main(void)
{
	static struct intern in;
	int unknown;

	CHECK_OR_RETURN(guard_install() == 0, "0.1 guard installed", 1);
	sampler.abi = pyabi_find(3, 11);
	CHECK_OR_RETURN(sampler.abi != NULL, "0.2 the 3.11 layout", 1);
	sampler.code_type = (uintptr_t)m_code_type;
	sampler.str_type = (uintptr_t)m_str_type;
	const struct pyabi *a = sampler.abi;

	uint32_t fp = fake_code(a);
	const char *n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "work") == 0 && !unknown,
	      "1.1 a live code object is named by its own name");

	/* freed after the sample: the free list's link over the count
	 * (NULL at the end of the list), its strings still there */
	fake_code(a);
	AT(m_code, 0) = 0;
	n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "work") == 0 && !unknown,
	      "1.2 a code object freed after the sample, its strings still "
	      "strs: named (a module's code after its import)");

	/* ... and its name's memory reused by an object of another type */
	fake_code(a);
	AT(m_code, 0) = (uintptr_t)m_table;
	AT(m_name, a->ob_type) = (uintptr_t)m_code_type;
	n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "[unknown]") == 0 && unknown,
	      "1.3 ... whose name is now another type's object: [unknown]");
	fake_code(a);
	AT(m_file, a->ob_type) = 0;
	n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "[unknown]") == 0 && unknown,
	      "1.4 ... whose file name is not a str any more: [unknown]");

	/* its name's memory reused: bytes no str holds */
	fake_code(a);
	memset(m_name + a->u_ascii_size, 0xff, 4);
	n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "[unknown]") == 0 && unknown,
	      "1.5 an ASCII name holding bytes past 0x7f is [unknown]");

	/* a different object at the address: the fingerprint says so */
	fake_code(a);
	*(int32_t *)(m_code + a->co_firstlineno) = 8;
	n = name_once(&in, fp, &unknown);
	CHECK(strcmp(n, "[unknown]") == 0 && unknown,
	      "1.6 another first line: another object, [unknown]");
	return check_summary();
}
