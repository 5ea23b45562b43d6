/*
 * opcodes.h - the name of an opcode byte for a given CPython version, for
 * the "opcode" label of profiles recorded with PYPROF_OPCODES=1.
 *
 * The library sends the byte as stored in the innermost frame's code
 * (wire.h, WIRE_SF_OPCODE); what it means depends on the interpreter's
 * minor version, which the process sent in HELLO (PYVERSION, "3.11.7").
 * The names come from collector/symbols/opcodes_table.h, generated from each
 * interpreter by tools/gen-opcodes (2.7, 3.6 to 3.13; specialized
 * instructions included from 3.11).
 *
 * Pure lookups on constant tables: any thread.
 */
#ifndef PYPROF_OPCODES_H
#define PYPROF_OPCODES_H

/* The name of opcode op under Python pyversion ("3.11.7", "2.7.18+"), or
 * NULL when the version is not in the table or has no opcode op. */
const char *opcodes_name(const char *pyversion, unsigned op);

/* Writes the label text for op into buf (n bytes): its name, or
 * "opcode_N" when opcodes_name has none, so an unknown version still
 * tells opcodes apart. Returns buf. */
const char *opcodes_label(const char *pyversion, unsigned op, char *buf,
			  unsigned long n);

#endif /* PYPROF_OPCODES_H */
