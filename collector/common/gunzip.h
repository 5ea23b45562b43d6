/*
 * gunzip.h - inflating a gzip (or zlib) buffer in memory with a cap on
 * what it may inflate to: the one inflate loop of the profile readers
 * (the views' view_read.c, the OTLP encoder push/otlp.c), so that a
 * truncated file or a gzip bomb gets the same answer everywhere; and the
 * one deflate loop of the profile writers (daemon/pprof.c,
 * views/view_pprof.c): pprof's files are gzipped.
 *
 * Plain memory and zlib, no state: any thread, not signal handlers.
 */
#ifndef PYPROF_GUNZIP_H
#define PYPROF_GUNZIP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Inflates in[0..len) (a gzip or zlib header, detected) into *out
 * (malloc'd, *out_len bytes; the caller frees it). At most max bytes are
 * produced. Returns 0; -EINVAL with a one-line reason in err[0..err_len)
 * ("gzip data is truncated", "bad gzip data: ...", "inflates to more
 * than N bytes"); or -ENOMEM. *out is set only on success.
 */
int gunzip_mem(const uint8_t *in, size_t len, size_t max, uint8_t **out,
	       size_t *out_len, char *err, size_t err_len);

/*
 * Deflates in[0..len) with a gzip wrapper into *out (malloc'd, *out_len
 * bytes; the caller frees it). Returns 0, -ENOMEM, or -EIO if zlib
 * fails. *out is set only on success.
 */
int gzip_mem(const void *in, size_t len, uint8_t **out, size_t *out_len);

#endif /* PYPROF_GUNZIP_H */
