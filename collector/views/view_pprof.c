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
#include "views/renderers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* in, gzipped (pprof's files are), in *out (malloc'd) and *out_len. 0 or
 * -ENOMEM. */
static int gzip_mem(const uint8_t *in, size_t in_len, uint8_t **out,
		    size_t *out_len)
{
	z_stream zs;
	uint8_t *buf = NULL;
	size_t cap;
	int rc = -ENOMEM;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip wrapper */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, in_len) + 32;
	buf = malloc(cap);
	if (!buf)
		goto out;
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.next_out = buf;
	for (;;) {
		size_t in_left = in_len - (size_t)zs.total_in;
		size_t out_left = cap - (size_t)zs.total_out;
		int z;
		zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
		zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX
						     : (uInt)out_left;
		z = deflate(&zs, in_left > zs.avail_in ? Z_NO_FLUSH : Z_FINISH);
		if (z == Z_STREAM_END)
			break;
		if (z != Z_OK || zs.avail_out == 0)
			goto out;
	}
	*out = buf;
	*out_len = (size_t)zs.total_out;
	buf = NULL;
	rc = 0;
out:
	deflateEnd(&zs);
	free(buf);
	return rc;
}

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
		snprintf(err, VIEW_ERR_LEN, "out of memory");
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
		snprintf(err, VIEW_ERR_LEN, "write error");
out:
	if (rc == -ENOMEM && !err[0])
		snprintf(err, VIEW_ERR_LEN, "out of memory");
	free(text);
	free(lines);
	free(plain);
	free(gz);
	return rc;
}
