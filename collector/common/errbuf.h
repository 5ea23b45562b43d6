/*
 * errbuf.h - the size of every error message the collector's libraries
 * write for their callers (char err[ERR_LEN], one line, no newline): one
 * size, so that a message handed up from one layer to the next (a
 * profile's reader to the HTTP server, a session to a connection) is
 * never cut on the way. Room for a path and its reason.
 *
 * Header only.
 */
#ifndef PYPROF_COLLECTOR_ERRBUF_H
#define PYPROF_COLLECTOR_ERRBUF_H

#define ERR_LEN 512

#endif /* PYPROF_COLLECTOR_ERRBUF_H */
