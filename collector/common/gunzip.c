/*
 * gunzip.c - inflating a buffer in memory, capped (see gunzip.h).
 *
 * Any thread; not for signal handlers.
 */
#include "common/gunzip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Makes room in *buf (capacity *cap, used bytes in use) when it is full,
 * doubling up to max bytes: 0, -ENOMEM, or -E2BIG when it already holds
 * max. A NULL *buf gets its first *cap bytes. */
static int grow(uint8_t **buf, size_t *cap, size_t used, size_t max)
{
	uint8_t *nb;

	if (*buf && used < *cap)
		return 0;
	if (*buf)
		*cap *= 2;
	if (*cap > max)
		*cap = max;
	if (*buf && used == *cap)
		return -E2BIG;
	nb = realloc(*buf, *cap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	return 0;
}

int gunzip_mem(const uint8_t *in, size_t len, size_t max, uint8_t **out,
	       size_t *out_len, char *err, size_t err_len)
{
	z_stream zs;
	uint8_t *buf = NULL;
	size_t cap = len * 4 + 4096, used = 0;
	int rc = -ENOMEM, zrc;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 32: a gzip or zlib header, detected. */
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)(uintptr_t)in;
	for (;;) {
		rc = grow(&buf, &cap, used, max);
		if (rc == -E2BIG)
			snprintf(err, err_len, "inflates to more than "
					       "%zu bytes",
				 max);
		if (rc < 0)
			goto out;
		size_t in_left = len - (size_t)zs.total_in;
		zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
		size_t out_left = cap - used;
		zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX
						     : (uInt)out_left;
		zs.next_out = buf + used;
		zrc = inflate(&zs, Z_NO_FLUSH);
		used = (size_t)zs.total_out;
		if (zrc == Z_STREAM_END)
			break;
		if (zrc == Z_BUF_ERROR && zs.avail_in == 0 &&
		    (size_t)zs.total_in == len) {
			snprintf(err, err_len, "gzip data is truncated");
			rc = -EINVAL;
			goto out;
		}
		if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			snprintf(err, err_len, "bad gzip data: %s",
				 zs.msg ? zs.msg : "inflate failed");
			rc = -EINVAL;
			goto out;
		}
	}
	*out = buf;
	*out_len = used;
	buf = NULL;
	rc = 0;
out:
	inflateEnd(&zs);
	free(buf);
	return rc;
}

int gzip_mem(const void *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	z_stream zs;
	uint8_t *buf = NULL;
	size_t cap;
	int err = -EIO;

	memset(&zs, 0, sizeof(zs));
	/* 15 + 16: a gzip wrapper, as pprof requires on disk. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, in_len) + 32;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.next_out = buf;
	/* deflateBound's sizes fit zlib's uInt for anything we can build
	 * in memory, but feed it in uInt-sized steps to be safe. */
	for (;;) {
		size_t in_left = in_len - (size_t)zs.total_in;
		zs.avail_in = in_left > UINT32_MAX ? UINT32_MAX
						   : (uInt)in_left;
		size_t out_left = cap - (size_t)zs.total_out;
		zs.avail_out = out_left > UINT32_MAX ? UINT32_MAX
						     : (uInt)out_left;
		int rc = deflate(&zs, in_left > zs.avail_in ? Z_NO_FLUSH
							    : Z_FINISH);
		if (rc == Z_STREAM_END)
			break;
		if (rc != Z_OK || zs.avail_out == 0)
			goto out;
	}
	*out = buf;
	*out_len = (size_t)zs.total_out;
	buf = NULL;
	err = 0;
out:
	deflateEnd(&zs);
	free(buf);
	return err;
}
