/*
 * test_leb128.c - the LEB128 reader (include/pyprof/leb128.h) and the
 * wire protocol's varint on top of it.
 *
 * 1.x  unsigned: DWARF's examples, lengths, truncation, > 64 bits.
 * 2.x  signed: DWARF's examples, sign extension, truncation.
 * 3.x  wire_get_varint: round trip with wire_put_varint, refuses more
 *      than 10 bytes or a value over 64 bits.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "pyprof/leb128.h"
#include "pyprof/wire.h"

static uint64_t u(const uint8_t *b, size_t n, size_t *len)
{
	uint64_t v = 1;
	*len = leb128_get_u(b, b + n, &v);
	return v;
}

static int64_t s(const uint8_t *b, size_t n, size_t *len)
{
	int64_t v = 1;
	*len = leb128_get_s(b, b + n, &v);
	return v;
}

static void test_unsigned(void)
{
	size_t len;
	CHECK(u((const uint8_t[]){ 0x02 }, 1, &len) == 2 && len == 1, "1.0 2");
	CHECK(u((const uint8_t[]){ 0x7f }, 1, &len) == 127 && len == 1,
	      "1.1 127");
	CHECK(u((const uint8_t[]){ 0x80, 0x01 }, 2, &len) == 128 && len == 2,
	      "1.2 128");
	CHECK(u((const uint8_t[]){ 0xe5, 0x8e, 0x26, 0xff }, 4, &len) ==
			      624485 &&
		      len == 3,
	      "1.3 624485, and the byte after it is not read");
	CHECK(u((const uint8_t[]){ 0xe5, 0x8e }, 2, &len) == 0 && len == 0,
	      "1.4 truncated: 0, length 0");
	CHECK(u((const uint8_t[]){ 0 }, 0, &len) == 0 && len == 0,
	      "1.5 empty: 0, length 0");
	const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
				0xff, 0xff, 0xff, 0xff, 0x01 };
	CHECK(u(max, 10, &len) == UINT64_MAX && len == 10 &&
		      leb128_fits_u64(max, len),
	      "1.6 2^64-1 in 10 bytes fits");
	const uint8_t wide[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
				 0x80, 0x80, 0x80, 0x80, 0x02 };
	CHECK(u(wide, 10, &len) == 0 && len == 10 &&
		      !leb128_fits_u64(wide, len),
	      "1.7 2^64: low 64 bits kept, does not fit");
	const uint8_t pad[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
				0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	CHECK(u(pad, sizeof pad, &len) == 1 && len == 12 &&
		      !leb128_fits_u64(pad, len),
	      "1.8 padded to 12 bytes: read whole, does not fit");
}

static void test_signed(void)
{
	size_t len;
	CHECK(s((const uint8_t[]){ 0x02 }, 1, &len) == 2 && len == 1, "2.0 2");
	CHECK(s((const uint8_t[]){ 0x7e }, 1, &len) == -2 && len == 1, "2.1 -2");
	CHECK(s((const uint8_t[]){ 0xff, 0x00 }, 2, &len) == 127 && len == 2,
	      "2.2 127");
	CHECK(s((const uint8_t[]){ 0x81, 0x7f }, 2, &len) == -127 && len == 2,
	      "2.3 -127");
	CHECK(s((const uint8_t[]){ 0x80, 0x7f }, 2, &len) == -128 && len == 2,
	      "2.4 -128");
	const uint8_t min[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
				0x80, 0x80, 0x80, 0x80, 0x7f };
	CHECK(s(min, 10, &len) == INT64_MIN && len == 10, "2.5 -2^63");
	CHECK(s((const uint8_t[]){ 0x80, 0x80 }, 2, &len) == 0 && len == 0,
	      "2.6 truncated: 0, length 0");
	const uint8_t nine[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
				 0x80, 0x80, 0x80, 0x7f };
	CHECK(s(nine, 9, &len) == -((int64_t)1 << 56) && len == 9,
	      "2.7 -2^56 in 9 bytes: sign extended from bit 63");
}

static void test_wire(void)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, 1ull << 35,
					 UINT64_MAX - 1, UINT64_MAX };
	uint8_t buf[16 * 10];
	struct wire_out w = { buf, buf + sizeof buf, 1 };
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
		wire_put_varint(&w, vals[i]);
	struct wire_in r = { buf, w.p, 1 };
	int same = w.ok;
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++)
		same &= wire_get_varint(&r) == vals[i];
	CHECK(same && r.ok && wire_at_end(&r), "3.0 round trip");

	const uint8_t wide[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
				 0x80, 0x80, 0x80, 0x80, 0x02 };
	r = (struct wire_in){ wide, wide + sizeof wide, 1 };
	CHECK(wire_get_varint(&r) == 0 && !r.ok && wire_at_end(&r),
	      "3.1 over 64 bits: refused, cursor at the end");
	const uint8_t pad[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80,
				0x80, 0x80, 0x80, 0x80, 0x00 };
	r = (struct wire_in){ pad, pad + sizeof pad, 1 };
	CHECK(wire_get_varint(&r) == 0 && !r.ok, "3.2 11 bytes: refused");
	const uint8_t cut[] = { 0x05, 0x80 };
	r = (struct wire_in){ cut, cut + sizeof cut, 1 };
	CHECK(wire_get_varint(&r) == 5 && r.ok, "3.3 first varint read");
	CHECK(wire_get_varint(&r) == 0 && !r.ok && wire_at_end(&r),
	      "3.4 truncated: refused");
	CHECK(wire_get_varint(&r) == 0 && !r.ok, "3.5 later reads return 0");
}

int main(void)
{
	test_unsigned();
	test_signed();
	test_wire();
	return check_summary();
}
