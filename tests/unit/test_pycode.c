/*
 * test_pycode.c - pycode's decoders on known and hostile input.
 *
 * The decoders' agreement with real interpreters is tested elsewhere
 * (tests/versions/linetable.sh, pyabi.sh); this file pins the contract of
 * pycode.h on input no interpreter would produce: empty, truncated and
 * garbage line tables, runaway varints, line numbers that overflow, string
 * objects with impossible kinds and lengths, readers that fail on the Nth
 * call, and a reader that refuses any byte outside the fake object (so an
 * over-read is a test failure even without ASan). Every table sits in a
 * malloc'd buffer of exactly its length: run under ASan or valgrind
 * (`make asan`) and a read past the end is caught too.
 *
 * Cases are numbered by section: 1 lnotab, 2 3.10 table, 3 location table,
 * 4 hostile tables, 5 unicode, 6 2.7 strings, 7 bytes, 8 readers.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pyprof/pyabi.h"
#include "cpython/pycode.h"

/* ---- helpers ---- */

/* addr2line on an exact-size heap copy of t[0..len). */
static int a2l(int kind, const uint8_t *t, size_t len, int first, uint32_t off)
{
	uint8_t *copy = malloc(len ? len : 1);
	int line;

	if (!copy)
		abort();
	if (len)
		memcpy(copy, t, len);
	line = pycode_addr2line(kind, copy, len, first, off);
	free(copy);
	return line;
}

/* The reader's window: reads outside [win_lo, win_hi) fail, and the call
 * numbered fail_at (from 1) fails; n_reads counts calls. */
static uintptr_t win_lo, win_hi;
static int fail_at, n_reads;

static int rd_window(void *dst, const void *src, size_t n)
{
	uintptr_t s = (uintptr_t)src;

	n_reads++;
	if (fail_at && n_reads == fail_at)
		return -EFAULT;
	if (s < win_lo || s > win_hi || n > win_hi - s)
		return -EFAULT;
	memcpy(dst, src, n);
	return 0;
}

static void window(const void *p, size_t n)
{
	win_lo = (uintptr_t)p;
	win_hi = win_lo + n;
	fail_at = 0;
	n_reads = 0;
}

/* ---- 1. co_lnotab ---- */

static void test_lnotab(void)
{
	/* 2.7: six bytes on line 10, eight on 11, the rest on 12 + 200. */
	const uint8_t t27[] = { 6, 1, 8, 1, 0, 200 };
	/* 3.6+: 0xfe is -2; 0x80 is -128. */
	const uint8_t t36[] = { 4, 3, 4, 0xfe, 2, 0x80, 0, 0x7f };

	CHECK(a2l(PYABI_LINES_LNOTAB27, t27, sizeof(t27), 10, 0) == 10, "1.1 2.7 first range");
	CHECK(a2l(PYABI_LINES_LNOTAB27, t27, sizeof(t27), 10, 5) == 10, "1.2 2.7 end of first range");
	CHECK(a2l(PYABI_LINES_LNOTAB27, t27, sizeof(t27), 10, 6) == 11, "1.3 2.7 second range");
	CHECK(a2l(PYABI_LINES_LNOTAB27, t27, sizeof(t27), 10, 14) == 212,
	      "1.4 2.7 unsigned delta 200 at the same address");
	CHECK(a2l(PYABI_LINES_LNOTAB27, t27, sizeof(t27), 10, 100000) == 212,
	      "1.5 past the end keeps the last line");
	CHECK(a2l(PYABI_LINES_LNOTAB, t36, sizeof(t36), 100, 3) == 100, "1.6 3.6 first");
	CHECK(a2l(PYABI_LINES_LNOTAB, t36, sizeof(t36), 100, 4) == 103, "1.7 3.6 +3");
	CHECK(a2l(PYABI_LINES_LNOTAB, t36, sizeof(t36), 100, 8) == 101, "1.8 3.6 signed -2");
	CHECK(a2l(PYABI_LINES_LNOTAB, t36, sizeof(t36), 200, 10) == 200 + 3 - 2 - 128 + 127,
	      "1.9 3.6 -128 then +127 at one address");
	CHECK(a2l(PYABI_LINES_LNOTAB27, t36, sizeof(t36), 100, 8) == 100 + 3 + 254,
	      "1.10 the same bytes unsigned on 2.7");
	CHECK(a2l(PYABI_LINES_LNOTAB, t36, 7, 1000, 100) == 1000 + 3 - 2 - 128,
	      "1.11 a trailing odd byte is ignored");
	CHECK(a2l(PYABI_LINES_LNOTAB, NULL, 0, 42, 7) == 42, "1.12 empty table: firstlineno");
}

/* ---- 2. 3.10 co_linetable ---- */

static void test_310(void)
{
	/* [0,4) +1, [4,6) no line, [6,12) +2 from the running line (not
	 * from "no line"), then empty ranges moving the line by 127 + 3. */
	const uint8_t t[] = { 4, 1, 2, 0x80, 6, 2, 0, 127, 2, 3 };

	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 0) == 11, "2.1 first range");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 3) == 11, "2.2 end of first range");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 4) == -1, "2.3 -128 is no line");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 5) == -1, "2.4 odd byte inside it");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 6) == 13, "2.5 -128 kept the running line");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 12) == 13 + 127 + 3,
	      "2.6 an empty range still moves the line");
	CHECK(a2l(PYABI_LINES_310, t, sizeof(t), 10, 14) == -1, "2.7 past the end: no line");
	CHECK(a2l(PYABI_LINES_310, NULL, 0, 10, 0) == -1, "2.8 empty table: no line");
}

/* ---- 3. 3.11+ location table ---- */

static void test_311(void)
{
	const uint8_t t[] = {
		0x80 | 13 << 3 | 0, 0x00,	/* [0,2)   no columns, +0     */
		0x80 | 0 << 3 | 1, 0x05,	/* [2,6)   short form, same   */
		0x80 | 11 << 3 | 0, 4, 9,	/* [6,8)   one line, +1       */
		0x80 | 15 << 3 | 2,		/* [8,14)  no location        */
		0x80 | 14 << 3 | 0, 0x07, 0x00, /* [14,16) long, -3 ...       */
		0x41, 0x02, 0x05,		/*         end 1, col, endcol */
		0x80 | 13 << 3 | 7, 0x60, 0x01, /* [16,32) no cols, 96/2 = +48 */
		0x80 | 12 << 3 | 0, 1, 2,	/* [32,34) one line, +2       */
	};
	int base = 1000;

	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 0) == base, "3.1 no-columns form");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 5) == base, "3.2 short form keeps the line");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 6) == base + 1, "3.3 one-line form +1");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 8) == -1, "3.4 code 15 is no line");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 13) == -1, "3.5 ...for all its units");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 14) == base + 1 - 3,
	      "3.6 long form, signed varint -3, after code 15 kept the line");
	/* 0x60 0x01: 0x20 | (1 << 6) = 0x60 -> even, 96 >> 1 = 48 */
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 16) == base - 2 + 48,
	      "3.7 two-byte varint");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 31) == base - 2 + 48,
	      "3.8 8-unit entry covers 16 bytes");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 32) == base - 2 + 48 + 2,
	      "3.9 one-line form +2");
	CHECK(a2l(PYABI_LINES_311, t, sizeof(t), base, 34) == -1, "3.10 past the end");
	CHECK(a2l(PYABI_LINES_311, NULL, 0, base, 0) == -1, "3.11 empty table");
}

/* ---- 4. hostile tables ---- */

static void test_hostile_tables(void)
{
	static const int kinds[] = { PYABI_LINES_LNOTAB27, PYABI_LINES_LNOTAB,
				     PYABI_LINES_310, PYABI_LINES_311 };
	uint8_t t[64], *big;
	size_t i, len, k;
	unsigned seed = 12345;
	int ok;

	CHECK(pycode_addr2line(PYABI_LINES_311, NULL, 5, 1, 0) == -1, "4.1 NULL table, len 5");
	CHECK(pycode_addr2line(99, t, 0, 1, 0) == -1, "4.2 unknown kind");
	CHECK(pycode_addr2line(0, t, 0, 1, 0) == -1, "4.3 kind 0");

	/* A varint cut by the end of the table. */
	t[0] = 0x80 | 13 << 3;
	t[1] = 0x7f;
	CHECK(a2l(PYABI_LINES_311, t, 2, 10, 0) >= -1, "4.4 truncated varint");
	t[0] = 0x80 | 14 << 3;
	CHECK(a2l(PYABI_LINES_311, t, 1, 10, 0) == 10, "4.5 long form cut after its header");
	/* 40 continuation groups: shifts past 32 bits must not happen. */
	t[0] = 0x80 | 13 << 3;
	for (i = 1; i < 41; i++)
		t[i] = 0x7f;
	t[41] = 0x3f;
	ok = a2l(PYABI_LINES_311, t, 42, 10, 0);
	CHECK(ok >= -1, "4.6 huge varint");
	/* Line overflow never wraps into a plausible line. */
	t[0] = 0x80 | 11 << 3;
	t[1] = 0;
	t[2] = 0;
	CHECK(a2l(PYABI_LINES_311, t, 3, INT_MAX, 0) == -1, "4.7 INT_MAX + 1 is no line");
	t[0] = 2;
	t[1] = 1;
	CHECK(a2l(PYABI_LINES_LNOTAB27, t, 2, INT_MAX, 4) == -1, "4.8 lnotab overflow");
	CHECK(a2l(PYABI_LINES_LNOTAB, t, 2, -5, 0) == -1, "4.9 negative line is no line");
	CHECK(a2l(PYABI_LINES_310, t, 2, -5, 0) == -1, "4.10 negative line, 3.10");
	/* A first byte without bit 7 and continuation bytes only. */
	memset(t, 0x7f, 16);
	CHECK(a2l(PYABI_LINES_311, t, 16, 10, 0) >= -1, "4.11 table of non-headers");
	CHECK(a2l(PYABI_LINES_311, t, 16, 10, UINT32_MAX) == -1, "4.12 offset UINT32_MAX");

	/* 4 MiB of 0xff: every format walks it once and stops. */
	len = (size_t)4 << 20;
	big = malloc(len);
	if (!big)
		abort();
	memset(big, 0xff, len);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		CHECK(pycode_addr2line(kinds[k], big, len, 1, UINT32_MAX) >= -1,
		      "4.13 4 MiB of 0xff");
	/* 0xff in 2.7: +255 lines per pair, 2M pairs: past INT_MAX from 2e9. */
	CHECK(pycode_addr2line(PYABI_LINES_LNOTAB27, big, len, 2000000000, UINT32_MAX) == -1,
	      "4.14 2.7 lines past INT_MAX are no line");
	free(big);

	/* Random tables, random offsets: never below -1, never out of
	 * bounds (exact-size buffers under ASan). */
	ok = 1;
	for (i = 0; i < 20000; i++) {
		len = (seed = seed * 1103515245 + 12345) >> 16 & 63;
		for (k = 0; k < len; k++)
			t[k] = (uint8_t)((seed = seed * 1103515245 + 12345) >> 16);
		seed = seed * 1103515245 + 12345;
		if (a2l(kinds[i % 4], t, len, (int)(seed >> 20), seed >> 24) < -1)
			ok = 0;
	}
	CHECK(ok, "4.15 20000 random tables");
}

/* ---- 5. PEP 393 strings, on fake objects ---- */

/* A fake str object laid out by the row: PyASCIIObject header, then the
 * characters at the right place, or (non-compact) at FAKE_DATA behind the
 * data.any pointer. One array, so that long compact strings stay inside
 * it. */
#define FAKE_DATA 1024
static struct {
	_Alignas(16) uint8_t obj[FAKE_DATA + 20000 * 4];
} fk;

static void put_state(const struct pyabi *a, unsigned kind, int compact, int ascii)
{
	uint32_t st = (uint32_t)kind << a->u_kind_shift |
		      (uint32_t)compact << a->u_compact_bit |
		      (uint32_t)ascii << a->u_ascii_bit;
	int i;

	for (i = 0; i < 4; i++)
		fk.obj[a->u_state + i] = (uint8_t)(st >> (8 * i));
}

/* Builds a string of n code points cps[] (kind, compact, ascii as given);
 * non-compact strings keep their characters in fk.data. */
static void make_str(const struct pyabi *a, const uint32_t *cps, size_t n,
		     unsigned kind, int compact, int ascii)
{
	int64_t len = (int64_t)n;
	uint8_t *dst;
	size_t i;

	memset(&fk, 0, sizeof(fk));
	memcpy(fk.obj + a->u_length, &len, sizeof(len));
	put_state(a, kind, compact, ascii);
	if (compact) {
		dst = fk.obj + (ascii ? a->u_ascii_size : a->u_compact_size);
	} else {
		uintptr_t p = (uintptr_t)(fk.obj + FAKE_DATA);

		memcpy(fk.obj + a->u_data_any, &p, sizeof(p));
		dst = fk.obj + FAKE_DATA;
	}
	for (i = 0; i < n; i++) {
		if (kind == 1) {
			dst[i] = (uint8_t)cps[i];
		} else if (kind == 2) {
			uint16_t u = (uint16_t)cps[i];

			memcpy(dst + 2 * i, &u, 2);
		} else {
			memcpy(dst + 4 * i, &cps[i], 4);
		}
	}
	/* The reader sees the object and its characters, no more. */
	window(fk.obj, (size_t)(dst - fk.obj) + n * kind);
}

static int rs(const struct pyabi *a, char *out, size_t cap)
{
	return pycode_read_str(a, fk.obj, rd_window, out, cap);
}

/* Strings of each kind, as code points. */
static const uint32_t hello[] = { 'h', 'e', 'l', 'l', 'o' };
static const uint32_t cafe[] = { 'c', 'a', 'f', 0xe9 };
static const uint32_t zhuk[] = { 0x416, 0x443, 0x43a };
static const uint32_t emoji[] = { 'a', 0x1f600, 0xe9 };

/* 5.1-5.7: compact strings of each kind, and truncating them. */
static void test_unicode_compact(const struct pyabi *a, const char *ver)
{
	char out[20000], msg[120];
	int n;

	snprintf(msg, sizeof(msg), "5.1 %s compact ascii", ver);
	make_str(a, hello, 5, 1, 1, 1);
	n = rs(a, out, sizeof(out));
	CHECK(n == 5 && strcmp(out, "hello") == 0, msg);

	snprintf(msg, sizeof(msg), "5.2 %s compact latin-1", ver);
	make_str(a, cafe, 4, 1, 1, 0);
	n = rs(a, out, sizeof(out));
	CHECK(n == 5 && strcmp(out, "caf\xc3\xa9") == 0, msg);

	snprintf(msg, sizeof(msg), "5.3 %s compact ucs2", ver);
	make_str(a, zhuk, 3, 2, 1, 0);
	n = rs(a, out, sizeof(out));
	CHECK(n == 6 && strcmp(out, "\xd0\x96\xd1\x83\xd0\xba") == 0, msg);

	snprintf(msg, sizeof(msg), "5.4 %s compact ucs4", ver);
	make_str(a, emoji, 3, 4, 1, 0);
	n = rs(a, out, sizeof(out));
	CHECK(n == 7 && strcmp(out, "a\xf0\x9f\x98\x80\xc3\xa9") == 0, msg);

	/* Truncation: "a" fits in 2, the emoji needs 4 more bytes. */
	snprintf(msg, sizeof(msg), "5.5 %s truncation at a character boundary", ver);
	n = rs(a, out, 5);
	CHECK(n == 1 && strcmp(out, "a") == 0, msg);
	n = rs(a, out, 6);
	CHECK(n == 5 && strcmp(out, "a\xf0\x9f\x98\x80") == 0, msg);
	n = rs(a, out, 1);
	CHECK(n == 0 && out[0] == '\0', "5.6 out_cap 1: empty string");
	CHECK(rs(a, out, 0) == -EINVAL, "5.7 out_cap 0: -EINVAL");
}

/* 5.8-5.15: non-compact strings, then objects the reader must refuse. */
static void test_unicode_odd(const struct pyabi *a, const char *ver)
{
	static const uint32_t surr[] = { 'x', 0xd800, 0xdfff, 'y' };
	static const uint32_t big[] = { 'x', 0x110000, 'y' };
	static const uint32_t huge[] = { 'x', 0xffffffff, 'y' };
	char out[20000], msg[120];
	unsigned kind;
	int n;

	for (kind = 1; kind <= 4; kind *= 2) {
		snprintf(msg, sizeof(msg), "5.8 %s non-compact kind %u", ver, kind);
		make_str(a, kind == 1 ? cafe : kind == 2 ? zhuk
							 : emoji,
			 kind == 1 ? 4 : 3, kind, 0, 0);
		n = rs(a, out, sizeof(out));
		CHECK(n > 0 && (uint8_t)out[n - 1] >= 0x80, msg);
	}
	snprintf(msg, sizeof(msg), "5.9 %s non-compact without data: -EINVAL", ver);
	make_str(a, hello, 5, 1, 0, 1);
	memset(fk.obj + a->u_data_any, 0, sizeof(uintptr_t));
	CHECK(rs(a, out, sizeof(out)) == -EINVAL && out[0] == '\0', msg);

	snprintf(msg, sizeof(msg), "5.10 %s lone surrogates become U+FFFD", ver);
	make_str(a, surr, 4, 4, 1, 0);
	n = rs(a, out, sizeof(out));
	CHECK(n == 2 + 3 * 2 &&
		      strcmp(out, "x\xef\xbf\xbd\xef\xbf\xbdy") == 0,
	      msg);
	/* No str holds these: memory that is no longer a str (a code
	 * object's name freed after the sample), not a name. */
	snprintf(msg, sizeof(msg), "5.10b %s past U+10FFFF: -EINVAL", ver);
	make_str(a, big, 3, 4, 1, 0);
	CHECK(rs(a, out, sizeof(out)) == -EINVAL && out[0] == '\0', msg);
	make_str(a, huge, 3, 4, 0, 0);
	CHECK(rs(a, out, sizeof(out)) == -EINVAL && out[0] == '\0', msg);
	snprintf(msg, sizeof(msg), "5.10c %s an ASCII str with a byte past 0x7f: -EINVAL", ver);
	make_str(a, cafe, 4, 1, 1, 1);
	CHECK(rs(a, out, sizeof(out)) == -EINVAL && out[0] == '\0', msg);

	for (kind = 0; kind < 8; kind++) {
		if (kind == 1 || kind == 2 || kind == 4)
			continue;
		snprintf(msg, sizeof(msg), "5.11 %s kind %u: -EINVAL", ver, kind);
		make_str(a, hello, 5, 1, 1, 0);
		put_state(a, kind, 1, 0);
		CHECK(rs(a, out, sizeof(out)) == -EINVAL, msg);
	}
	snprintf(msg, sizeof(msg), "5.12 %s ascii flag on kind 2: -EINVAL", ver);
	make_str(a, zhuk, 3, 2, 1, 1);
	CHECK(rs(a, out, sizeof(out)) == -EINVAL, msg);

	snprintf(msg, sizeof(msg), "5.13 %s negative length: -EINVAL", ver);
	make_str(a, hello, 5, 1, 1, 1);
	{
		int64_t len = -1;

		memcpy(fk.obj + a->u_length, &len, sizeof(len));
		CHECK(rs(a, out, sizeof(out)) == -EINVAL, msg);
		len = (int64_t)1 << 50;
		memcpy(fk.obj + a->u_length, &len, sizeof(len));
		snprintf(msg, sizeof(msg), "5.14 %s absurd length: -EINVAL", ver);
		CHECK(rs(a, out, sizeof(out)) == -EINVAL, msg);
		/* A plausible length past the object: the reader refuses,
		 * nothing is read outside it. */
		len = 3000;
		memcpy(fk.obj + a->u_length, &len, sizeof(len));
		snprintf(msg, sizeof(msg), "5.15 %s length past the object: -EFAULT", ver);
		CHECK(rs(a, out, sizeof(out)) == -EFAULT && out[0] == '\0', msg);
	}
}

/* 5.16: a long string is cut. */
static void test_unicode_long(const struct pyabi *a, const char *ver)
{
	static uint32_t many[10000];
	char out[20000], msg[120];
	size_t i;
	int n;

	/* 10000 characters: only PYCODE_STR_MAX_CHARS are decoded. */
	for (i = 0; i < 10000; i++)
		many[i] = i % 2 ? 0x416 : 'z';
	make_str(a, many, 10000, 2, 1, 0);
	n = rs(a, out, sizeof(out));
	snprintf(msg, sizeof(msg), "5.16 %s 10000 characters cut at %d", ver,
		 PYCODE_STR_MAX_CHARS);
	CHECK(n == PYCODE_STR_MAX_CHARS / 2 * 3, msg);
}

static void test_unicode_row(const struct pyabi *a, const char *ver)
{
	test_unicode_compact(a, ver);
	test_unicode_odd(a, ver);
	test_unicode_long(a, ver);
}

static void test_unicode(void)
{
	static const int rows[][2] = { { 3, 6 }, { 3, 11 }, { 3, 12 }, { 3, 13 } };
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct pyabi *a = pyabi_find(rows[i][0], rows[i][1]);
		char ver[16];

		snprintf(ver, sizeof(ver), "%d.%d", rows[i][0], rows[i][1]);
		CHECK(a != NULL, "5.0 row exists");
		if (a)
			test_unicode_row(a, ver);
	}
}

/* ---- 6. 2.7 byte strings ---- */

static void make_bytes(const struct pyabi *a, const char *s, size_t n)
{
	int64_t size = (int64_t)n;

	memset(&fk, 0, sizeof(fk));
	memcpy(fk.obj + a->var_size, &size, sizeof(size));
	memcpy(fk.obj + a->bytes_sval, s, n);
	window(fk.obj, (size_t)a->bytes_sval + n);
}

static void test_bytes_str(void)
{
	const struct pyabi *a = pyabi_find(2, 7);
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"; /* a é € 😀 */
	static const int cut[] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10 };
	char out[64], msg[80];
	size_t cap;
	int n;

	CHECK(a && a->str_kind == PYABI_STR_BYTES, "6.0 2.7 row uses byte strings");
	if (!a)
		return;
	make_bytes(a, s, 10);
	n = pycode_read_str(a, fk.obj, rd_window, out, sizeof(out));
	CHECK(n == 10 && memcmp(out, s, 11) == 0, "6.1 copied as is");
	for (cap = 1; cap <= 12; cap++) {
		n = pycode_read_str(a, fk.obj, rd_window, out, cap);
		snprintf(msg, sizeof(msg), "6.2 out_cap %zu keeps %d bytes", cap, cut[cap - 1]);
		CHECK(n == cut[cap - 1] && out[n] == '\0' && memcmp(out, s, (size_t)n) == 0, msg);
	}
	/* Invalid UTF-8 is not ours to fix: 0xff 0xfe come out as they are. */
	make_bytes(a, "\xff\xfe", 2);
	CHECK(pycode_read_str(a, fk.obj, rd_window, out, sizeof(out)) == 2 &&
		      memcmp(out, "\xff\xfe", 3) == 0,
	      "6.3 non-UTF-8 bytes as is");
	make_bytes(a, "x", 1);
	{
		int64_t size = -3;

		memcpy(fk.obj + a->var_size, &size, sizeof(size));
	}
	CHECK(pycode_read_str(a, fk.obj, rd_window, out, sizeof(out)) == -EINVAL,
	      "6.4 negative size: -EINVAL");
}

/* ---- 7. bytes objects (line tables) ---- */

static void test_read_bytes(void)
{
	const struct pyabi *a = pyabi_find(3, 12);
	uint8_t got[16];
	int64_t size;

	make_bytes(a, "\x01\x02\x03\x00\x05", 5);
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, sizeof(got)) == 5 &&
		      memcmp(got, "\x01\x02\x03\x00\x05", 5) == 0,
	      "7.1 contents");
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, 5) == 5, "7.2 exact fit");
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, 4) == -E2BIG, "7.3 -E2BIG");
	make_bytes(a, "", 0);
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, NULL, 0) == 0, "7.4 empty");
	size = -1;
	memcpy(fk.obj + a->var_size, &size, sizeof(size));
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, sizeof(got)) == -EINVAL,
	      "7.5 negative size");
	size = (int64_t)1 << 40;
	memcpy(fk.obj + a->var_size, &size, sizeof(size));
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, sizeof(got)) == -E2BIG,
	      "7.6 huge size is -E2BIG, nothing read");
	size = 12; /* fits the buffer, not the object */
	memcpy(fk.obj + a->var_size, &size, sizeof(size));
	CHECK(pycode_read_bytes(a, fk.obj, rd_window, got, sizeof(got)) == -EFAULT,
	      "7.7 size past the object: -EFAULT");
	CHECK(pycode_read_bytes(a, NULL, rd_window, got, sizeof(got)) == -EFAULT,
	      "7.8 NULL object");
	CHECK(pycode_read_bytes(NULL, fk.obj, rd_window, got, sizeof(got)) == -EINVAL,
	      "7.9 NULL abi");
}

/* ---- 8. failing readers ---- */

static void test_readers(void)
{
	static const uint32_t long_mixed[] = { 'a', 0x1f600, 'b', 0xe9, 'c', 0x416 };
	static uint32_t cps[1500];
	const struct pyabi *a = pyabi_find(3, 13);
	char out[8192];
	int n, total, i, ok = 1;
	size_t k;

	CHECK(pycode_read_str(a, NULL, rd_window, out, sizeof(out)) == -EFAULT &&
		      out[0] == '\0',
	      "8.1 NULL object: -EFAULT");
	CHECK(pycode_read_str(NULL, fk.obj, rd_window, out, sizeof(out)) == -EINVAL,
	      "8.2 NULL abi: -EINVAL");
	CHECK(pycode_read_str(a, fk.obj, NULL, out, sizeof(out)) == -EINVAL,
	      "8.3 NULL reader: -EINVAL");

	/* Fail the Nth read for every N a full decode makes: always
	 * -EFAULT and an empty out, never a partial string. */
	for (k = 0; k < 1500; k++)
		cps[k] = long_mixed[k % 6];
	make_str(a, cps, 1500, 4, 1, 0);
	n = rs(a, out, sizeof(out));
	total = n_reads;
	CHECK(n > 0 && total > 3, "8.4 a long string takes several reads");
	for (i = 1; i <= total; i++) {
		n_reads = 0;
		fail_at = i;
		if (rs(a, out, sizeof(out)) != -EFAULT || out[0] != '\0')
			ok = 0;
	}
	CHECK(ok, "8.5 a failure at every read gives -EFAULT and \"\"");
	make_str(a, cps, 3, 4, 0, 0);
	fail_at = 2; /* the data.any pointer */
	CHECK(rs(a, out, sizeof(out)) == -EFAULT, "8.6 failing data.any read");

	/* A row whose offsets point outside any header: refused, not used. */
	{
		struct pyabi broken = *a;

		broken.u_state = 1000;
		make_str(a, long_mixed, 2, 4, 1, 0);
		CHECK(pycode_read_str(&broken, fk.obj, rd_window, out, sizeof(out)) == -EINVAL,
		      "8.7 row with an absurd u_state");
		broken = *a;
		broken.u_kind_shift = 40;
		CHECK(pycode_read_str(&broken, fk.obj, rd_window, out, sizeof(out)) == -EINVAL,
		      "8.8 row with an absurd kind shift");
		broken = *a;
		broken.str_kind = 9;
		CHECK(pycode_read_str(&broken, fk.obj, rd_window, out, sizeof(out)) == -EINVAL,
		      "8.9 unknown str_kind");
	}
}

int main(void)
{
	test_lnotab();
	test_310();
	test_311();
	test_hostile_tables();
	test_unicode();
	test_bytes_str();
	test_read_bytes();
	test_readers();
	return check_summary();
}
