/*
 * pidring.h - "have we said this about that pid lately?", for log lines
 * about clients that retry: a refused library tries again every second or
 * so, and its refusal is logged at warn once, later ones at debug.
 *
 * A ring of the last PIDRING_LEN pids seen; pid 0 (a peer whose pid the
 * kernel could not give) is a pid like any other. Embedded by its owner;
 * single-threaded (the collector's loop).
 */
#ifndef PYPROF_PIDRING_H
#define PYPROF_PIDRING_H

#include <sys/types.h>

#define PIDRING_LEN 64

struct pidring {
	pid_t pids[PIDRING_LEN];
	unsigned n; /* pids noted so far; slots past n are unused */
};

/* Notes pid; returns 1 when it was among the last PIDRING_LEN noted
 * (then it is not noted again), else 0. */
static inline int pidring_seen(struct pidring *r, pid_t pid)
{
	for (unsigned i = 0; i < PIDRING_LEN && i < r->n; i++)
		if (r->pids[i] == pid)
			return 1;
	r->pids[r->n++ % PIDRING_LEN] = pid;
	return 0;
}

#endif /* PYPROF_PIDRING_H */
