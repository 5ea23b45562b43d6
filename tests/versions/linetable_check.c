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
#include "pyprof/pyabi.h"
#include "cpython/pycode.h"

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

/* What the dump said so far, and the counts. */
struct dump {
	const struct pyabi *abi;
	int major, minor, micro;
	/* the current code object (its C line) */
	char *hex, *where;
	uint8_t *table;
	size_t table_len;
	int firstlineno, step, code_len;
	long n_offsets, n_codes, n_bad;
};

/* What a line handler returns besides 0. */
enum { MALFORMED = -1, FAILED = -2 };

/* V MAJOR MINOR MICRO: the interpreter, and so the pyabi row. */
static int on_version(struct dump *d, const char *line)
{
	if (sscanf(line, "V %d %d %d", &d->major, &d->minor, &d->micro) != 3)
		return MALFORMED;
	d->abi = pyabi_find(d->major, d->minor);
	if (!d->abi) {
		fprintf(stderr, "linetable_check: no pyabi row for %d.%d\n",
			d->major, d->minor);
		return FAILED;
	}
	return 0;
}

/* C FIRSTLINENO CODE_LEN STEP HEX WHERE: the next code object. */
static int on_code(struct dump *d, const char *line)
{
	free(d->hex);
	free(d->where);
	free(d->table);
	d->hex = d->where = NULL;
	d->table = NULL;
	if (!d->abi ||
	    sscanf(line, "C %d %d %d %ms %ms", &d->firstlineno, &d->code_len,
		   &d->step, &d->hex, &d->where) != 5 ||
	    d->step <= 0)
		return MALFORMED;
	d->table = unhex(d->hex, &d->table_len);
	if (!d->table)
		return MALFORMED;
	d->n_codes++;
	return 0;
}

/* The interpreter's line at each offset (the numbers after L) against
 * pycode_addr2line. */
static int check_offsets(struct dump *d, const char *line)
{
	const char *p = line + 1;
	char *end;
	long i = 0, want;
	int got;

	for (;; i++) {
		want = strtol(p, &end, 10);
		if (end == p)
			break;
		p = end;
		got = pycode_addr2line(d->abi->lines_kind, d->table,
				       d->table_len, d->firstlineno,
				       (uint32_t)(i * d->step));
		d->n_offsets++;
		if (got != want && d->n_bad++ < MAX_SHOWN)
			fprintf(stderr,
				"MISMATCH %d.%d %s offset %ld: "
				"interpreter %ld, pycode %d\n",
				d->major, d->minor, d->where, i * d->step,
				want, got);
	}
	return i != (d->code_len + d->step - 1) / d->step ? MALFORMED : 0;
}

/* Truncated copies of the table: any answer >= -1 is fine, a read past
 * the end is not (ASan/valgrind). */
static int check_truncated(struct dump *d)
{
	for (size_t cut = 1; cut <= 3 && cut <= d->table_len; cut++) {
		size_t n = cut == 3 ? d->table_len / 2 : d->table_len - cut;
		uint8_t *copy = malloc(n ? n : 1);

		if (!copy)
			return FAILED;
		memcpy(copy, d->table, n);
		for (long j = 0; j * d->step < d->code_len; j++)
			if (pycode_addr2line(d->abi->lines_kind, copy, n,
					     d->firstlineno,
					     (uint32_t)(j * d->step)) < -1)
				d->n_bad++;
		free(copy);
	}
	return 0;
}

/* L LINE...: the current code object's lines. */
static int on_lines(struct dump *d, const char *line)
{
	int rc;
	if (!d->table)
		return MALFORMED;
	if ((rc = check_offsets(d, line)) < 0)
		return rc;
	return check_truncated(d);
}

static int on_line(struct dump *d, const char *line)
{
	switch (line[0]) {
	case 'V': return on_version(d, line);
	case 'C': return on_code(d, line);
	case 'L': return on_lines(d, line);
	default: return MALFORMED;
	}
}

int main(int argc, char **argv)
{
	struct dump d = { 0 };
	char *line = NULL;
	size_t cap = 0;
	int rc = 2, r = 0;
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
	while (r == 0 && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		r = on_line(&d, line);
	}
	if (r == 0 && (!d.abi || d.n_codes == 0))
		r = MALFORMED;
	if (r == MALFORMED) {
		fprintf(stderr, "linetable_check: %s: malformed dump near: %.80s\n",
			argv[1], line ? line : "(start)");
	} else if (r == 0 && d.n_bad) {
		fprintf(stderr, "linetable_check: %d.%d: %ld of %ld offsets wrong\n",
			d.major, d.minor, d.n_bad, d.n_offsets);
		rc = 1;
	} else if (r == 0) {
		printf("%ld offsets checked in %ld code objects\n", d.n_offsets,
		       d.n_codes);
		rc = 0;
	}
	free(d.table);
	free(d.hex);
	free(d.where);
	free(line);
	fclose(f);
	return rc;
}
