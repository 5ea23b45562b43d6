/*
 * test_opcodes.c - opcode names by Python version (collector/symbols/opcodes.h,
 * generated table): the add opcodes of each era, specialized ones from
 * 3.11, version strings as HELLO sends them, unknowns.
 */
#include <string.h>

#include "check.h"
#include "symbols/opcodes.h"

static int is(const char *got, const char *want)
{
	return got && !strcmp(got, want);
}

int main(void)
{
	char buf[32];

	CHECK(is(opcodes_name("2.7.18", 23), "BINARY_ADD"), "1.1 2.7 add");
	CHECK(is(opcodes_name("3.6.15", 23), "BINARY_ADD"), "1.2 3.6 add");
	CHECK(is(opcodes_name("3.10.13", 23), "BINARY_ADD"), "1.3 3.10 add");
	CHECK(is(opcodes_name("3.11.7", 122), "BINARY_OP"), "1.4 3.11 op");
	CHECK(is(opcodes_name("3.11.2", 5), "BINARY_OP_ADD_INT"),
	      "1.5 3.11 specialized (Debian's 3.11.2 too)");
	CHECK(is(opcodes_name("3.12.1", 7), "BINARY_OP_ADD_INT"),
	      "1.6 3.12 specialized");
	CHECK(is(opcodes_name("3.13.0", 151), "BINARY_OP_ADD_INT"),
	      "1.7 3.13 specialized");
	CHECK(is(opcodes_name("3.13.0", 45), "BINARY_OP"), "1.8 3.13 op");
	CHECK(is(opcodes_name("3.12.1+", 7), "BINARY_OP_ADD_INT"),
	      "1.9 a suffix after the version is fine");
	CHECK(opcodes_name("3.99.0", 1) == NULL, "1.10 unknown version");
	CHECK(opcodes_name("", 1) == NULL && opcodes_name(NULL, 1) == NULL &&
		      opcodes_name("x.y", 1) == NULL,
	      "1.11 no version");
	CHECK(opcodes_name("3.11.7", 256) == NULL, "1.12 not a byte");
	CHECK(is(opcodes_label("3.99", 9, buf, sizeof(buf)), "opcode_9"),
	      "1.13 label of an unknown version: opcode_N");
	CHECK(is(opcodes_label("3.11.7", 5, buf, sizeof(buf)),
		 "BINARY_OP_ADD_INT"),
	      "1.14 label");
	return check_summary();
}
