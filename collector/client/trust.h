/*
 * trust.h - whom a client of a collector believes: our own user, root,
 * and the user PYPROF_COLLECTOR_USER names (read by the library's own
 * rule, include/pyprof/envcheck.h). The collector's socket, its
 * listener and the files that name its HTTP server are believed only
 * when one of those owns them.
 *
 * Pure apart from getenv and geteuid.
 */
#ifndef PYPROF_CLIENT_TRUST_H
#define PYPROF_CLIENT_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* The uid PYPROF_COLLECTOR_USER trusts, or -1: when it is unset, and
 * when it is wrong (then err, size n, says why; else err is ""). */
long client_trusted_uid(char *err, size_t n);

/* Whether uid is ours, root's or trust's (trust -1: none). */
int client_uid_trusted(uid_t uid, long trust);

#endif /* PYPROF_CLIENT_TRUST_H */
