/*
 * view_pprof.c - `pyprof convert --format pprof --intervals`: the profile
 * as it was, gzipped pprof, with the table of `pyprof top --intervals`
 * added to its comments, one comment per line of the table, so that
 * `go tool pprof -comments` (or any pprof reader) shows each top
 * function's flat and cumulative share with its interval beside the
 * profile, and so that the numbers travel with the file.
 *
 * The table is view_top's own text: the same estimator, the same
 * rounding, escaped as top escapes it. The profile's own messages are
 * written back unchanged; the new strings go at the end of its string
 * table, so no index in it moves.
 */
#include "common/gunzip.h"
#include "views/renderers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The lines of text (changed in place: each '\n' ends a string) in a
 * malloc'd array, *n of them. NULL when memory ran out. */
static const char **split_lines(char *text, size_t *n)
{
	size_t cap = 1;
	const char **v;

	for (const char *c = text; *c; c++)
		cap += *c == '\n';
	v = malloc(cap * sizeof(*v));
	if (!v)
		return NULL;
	*n = 0;
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		v[(*n)++] = line;
		if (!nl)
			break;
		*nl = 0;
		line = nl + 1;
	}
	return v;
}

int view_pprof_intervals(FILE *out, const struct view_profile *p,
			 const struct view_top_opts *o, char *err)
{
	char *text = NULL;
	size_t text_len = 0, n_lines = 0, plain_len = 0, gz_len = 0;
	const char **lines = NULL;
	uint8_t *plain = NULL, *gz = NULL;
	FILE *ms;
	int rc;

	err[0] = 0;
	ms = open_memstream(&text, &text_len);
	if (!ms) {
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	rc = view_top(ms, p, o, err);
	if (fclose(ms) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	lines = split_lines(text, &n_lines);
	if (!lines)
		goto out;
	if (view_pack_commented(p, lines, n_lines, &plain, &plain_len) < 0 ||
	    gzip_mem(plain, plain_len, &gz, &gz_len) < 0)
		goto out;
	rc = fwrite(gz, 1, gz_len, out) == gz_len ? 0 : -EIO;
	if (rc < 0)
		snprintf(err, ERR_LEN, "write error");
out:
	if (rc == -ENOMEM && !err[0])
		snprintf(err, ERR_LEN, "out of memory");
	free(text);
	free(lines);
	free(plain);
	free(gz);
	return rc;
}
