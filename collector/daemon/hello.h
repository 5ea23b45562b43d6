/*
 * hello.h - decoding the two tagged-field frames, HELLO and BYE, into
 * structs: bytes in, a struct and an error message out. No connection,
 * no process table: conn.c applies what these return, and a unit test
 * can run them on any bytes.
 *
 * Collector loop thread (or any thread: no shared state).
 */
#ifndef PYPROF_HELLO_H
#define PYPROF_HELLO_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/proc.h"
#include "common/errbuf.h"


/* A decoded HELLO. Byte strings point into the payload given to
 * hello_decode and are valid as long as it is. */
struct hello {
	struct proc_hello h;	 /* h.args points to args */
	struct proc_bytes *args; /* owned: hello_free */
	int sampling;		 /* SAMPLING: 1, 0, or -1 if not sent */
	int refused;		 /* REFUSED was sent; why in refused_why */
	struct proc_bytes refused_why;
};

/*
 * Decodes a HELLO payload (after the frame header) of len bytes at p
 * into *out, checking what wire.h requires of it: the magic, VERSION
 * first and the one this collector speaks, tags of the right kind and
 * not repeated (ARG excepted, at most WIRE_MAX_ARGS), a PID, a known
 * mode. Unknown tags are skipped.
 * Returns 0; -EPROTO with err (ERR_LEN bytes) saying why; or
 * -ENOMEM (err "out of memory"). *out needs hello_free either way.
 */
int hello_decode(const uint8_t *p, size_t len, struct hello *out,
		 char *err);
void hello_free(struct hello *hl);

/* Decodes a BYE payload into *out (absent fields 0, has_ unset; unknown
 * tags skipped). 0, or -EPROTO if a field is malformed or cut short. */
int bye_decode(const uint8_t *p, size_t len, struct proc_bye *out);

#endif /* PYPROF_HELLO_H */
