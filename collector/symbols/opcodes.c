/*
 * opcodes.c - opcode names by CPython version (see opcodes.h); the tables
 * are generated (opcodes_table.h, tools/gen-opcodes).
 */
#include "symbols/opcodes.h"

#include <stdio.h>
#include <stdlib.h>

#include "symbols/opcodes_table.h"

/* "3.11.7" -> 3, 11. Returns 0, or -1 if s does not start with
 * MAJOR.MINOR. */
static int parse_version(const char *s, int *major, int *minor)
{
	char *end;
	long a, b;

	if (!s || *s < '0' || *s > '9')
		return -1;
	a = strtol(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return -1;
	b = strtol(end + 1, &end, 10);
	if (a > 99 || b > 999)
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

const char *opcodes_name(const char *pyversion, unsigned op)
{
	int major, minor;

	if (op > 255 || parse_version(pyversion, &major, &minor) < 0)
		return NULL;
	for (size_t i = 0; i < sizeof(opcodes_rows) / sizeof(opcodes_rows[0]);
	     i++)
		if (opcodes_rows[i].major == major &&
		    opcodes_rows[i].minor == minor)
			return opcodes_rows[i].names[op];
	return NULL;
}

const char *opcodes_label(const char *pyversion, unsigned op, char *buf,
			  unsigned long n)
{
	const char *name = opcodes_name(pyversion, op);

	if (name)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "opcode_%u", op);
	return buf;
}
