/*
 * linetable_check.c - checks pycode_addr2line() against one interpreter's
 * own answers, as dumped by tests/versions/dump_lines.py.
 *
 * usage: linetable_check DUMP
 *
 * The dump names the interpreter's version (the row, and so the line-table
 * format, comes from pyabi_find(): a wrong lines_kind in the table fails
 * here too), then gives for each code object its raw table, co_firstlineno
 * and the interpreter's line for every instruction offset. Every offset is
 * checked; the first mismatches are printed with the code object's name.
 * Each table is also decoded cut short (every offset, three truncations)
 * so that a run under ASan or valgrind shows any read past the end.
 *
 * Prints `N offsets checked in M code objects` and exits 0, or exits 1
 * after listing mismatches, 2 on a malformed dump. Run by linetable.sh.
 */
#include "pyabi.h"
#include "pycode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHOWN 20

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes hex into a fresh exact-size buffer (so ASan sees its end). */
static uint8_t *unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex), i;
	uint8_t *buf;

	if (strcmp(hex, "-") == 0)
		n = 0;
	if (n % 2)
		return NULL;
	buf = malloc(n / 2 ? n / 2 : 1);
	if (!buf)
		return NULL;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(buf);
			return NULL;
		}
		buf[i] = (uint8_t)(hi << 4 | lo);
	}
	*len = n / 2;
	return buf;
}

int main(int argc, char **argv)
{
	const struct pyabi *abi = NULL;
	char *line = NULL, *hex = NULL, *where = NULL;
	size_t cap = 0, table_len = 0;
	uint8_t *table = NULL;
	long n_offsets = 0, n_codes = 0, n_bad = 0;
	int firstlineno = 0, step = 0, code_len = 0, major, minor, micro;
	int rc = 2;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: linetable_check DUMP\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (!f) {
		fprintf(stderr, "linetable_check: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'V') {
			if (sscanf(line, "V %d %d %d", &major, &minor, &micro) != 3)
				goto bad;
			abi = pyabi_find(major, minor);
			if (!abi) {
				fprintf(stderr, "linetable_check: no pyabi row for %d.%d\n",
					major, minor);
				goto out;
			}
		} else if (line[0] == 'C') {
			free(hex);
			free(where);
			free(table);
			hex = where = NULL;
			table = NULL;
			if (!abi ||
			    sscanf(line, "C %d %d %d %ms %ms", &firstlineno, &code_len,
				   &step, &hex, &where) != 5 ||
			    step <= 0)
				goto bad;
			table = unhex(hex, &table_len);
			if (!table)
				goto bad;
			n_codes++;
		} else if (line[0] == 'L') {
			char *p = line + 1, *end;
			long i = 0, want;
			int got;
			size_t cut;

			if (!table)
				goto bad;
			for (;; i++) {
				want = strtol(p, &end, 10);
				if (end == p)
					break;
				p = end;
				got = pycode_addr2line(abi->lines_kind, table,
						       table_len, firstlineno,
						       (uint32_t)(i * step));
				n_offsets++;
				if (got != want && n_bad++ < MAX_SHOWN)
					fprintf(stderr,
						"MISMATCH %d.%d %s offset %ld: "
						"interpreter %ld, pycode %d\n",
						major, minor, where, i * step,
						want, got);
			}
			if (i != (code_len + step - 1) / step)
				goto bad;
			/* Truncated copies: any answer >= -1 is fine, a read
			 * past the end is not (ASan/valgrind). */
			for (cut = 1; cut <= 3 && cut <= table_len; cut++) {
				size_t n = cut == 3 ? table_len / 2 : table_len - cut;
				uint8_t *copy = malloc(n ? n : 1);
				long j;

				if (!copy)
					goto out;
				memcpy(copy, table, n);
				for (j = 0; j * step < code_len; j++)
					if (pycode_addr2line(abi->lines_kind, copy, n,
							     firstlineno,
							     (uint32_t)(j * step)) < -1)
						n_bad++;
				free(copy);
			}
		} else {
			goto bad;
		}
	}
	if (!abi || n_codes == 0)
		goto bad;
	if (n_bad) {
		fprintf(stderr, "linetable_check: %d.%d: %ld of %ld offsets wrong\n",
			major, minor, n_bad, n_offsets);
		rc = 1;
		goto out;
	}
	printf("%ld offsets checked in %ld code objects\n", n_offsets, n_codes);
	rc = 0;
	goto out;
bad:
	fprintf(stderr, "linetable_check: %s: malformed dump near: %.80s\n",
		argv[1], line ? line : "(start)");
	rc = 2;
out:
	free(table);
	free(hex);
	free(where);
	free(line);
	fclose(f);
	return rc;
}
