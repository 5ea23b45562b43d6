/*
 * spool.h - the push spool: windows that could not be sent yet, one file
 * each in a private directory, kept across crashes and restarts, sent
 * oldest first (push.h).
 *
 * Layout. The directory is 0700 (made so when missing) and locked with
 * flock(2) on ".lock" while a collector uses it, so that two collectors
 * never send the same window. Each window is a file
 * <seq as 16 hex digits>.push, mode 0600, written atomically (fileio.h):
 *
 *   pyprof-push 1\n
 *   <destination>\n          "pyroscope"
 *   <path and query>\n       /ingest?name=...&from=...&until=...
 *   <the request body>       (the gzipped pprof profile)
 *
 * Sequence numbers only grow (a new collector continues after the
 * largest it finds), so the names sort in the order the windows ended.
 * Files of another shape are left alone; a .push file that cannot be
 * parsed is dropped when its turn comes, and logged.
 *
 * Size. The files may hold at most max bytes in all: a new one that
 * would pass it pushes out the oldest first, and one bigger than max is
 * not kept; what is dropped is counted (spool_take_dropped) for the log.
 *
 * Threads: the push thread, and the loop thread when the push queue is
 * full (push.h); an internal mutex orders them. Blocking file I/O.
 */
#ifndef PYPROF_SPOOL_H
#define PYPROF_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

/* A window read back. */
struct spool_item {
	uint64_t seq;
	char dest[32];
	char *query;  /* malloc'd */
	void *body;   /* malloc'd */
	size_t len;
};

/* Opens dir (made with its parents, 0700, when missing), locks it and
 * lists the windows in it. NULL with a one-line reason in err. */
struct spool *spool_open(const char *dir, uint64_t max, char *err,
			 size_t err_len);
/* Unlocks and frees (the files stay). NULL is fine. */
void spool_close(struct spool *s);

/* Writes a window; older ones may be dropped to make room (counted).
 * 0, -EFBIG (bigger than max: not kept, counted), or a negative errno
 * from writing. */
int spool_add(struct spool *s, uint64_t seq, const char *dest,
	      const char *query, const void *body, size_t len);

/* The oldest window's sequence number, or 0 when there is none. */
uint64_t spool_oldest(struct spool *s);
/* The largest sequence number seen in the directory at open (0: none). */
uint64_t spool_last_seq(const struct spool *s);
/* Reads the window seq into *it (free with spool_item_free). 0, -ENOENT
 * (dropped meanwhile), -EINVAL (not a spooled window: the file is
 * removed) or another negative errno. */
int spool_read(struct spool *s, uint64_t seq, struct spool_item *it);
void spool_item_free(struct spool_item *it);
/* Removes the window seq (sent, or refused by the server). */
void spool_remove(struct spool *s, uint64_t seq);

/* Windows and bytes held now. */
void spool_usage(struct spool *s, size_t *n, uint64_t *bytes);
/* Windows dropped to make room since the last call, and their bytes. */
uint64_t spool_take_dropped(struct spool *s, uint64_t *bytes);

#endif /* PYPROF_SPOOL_H */
