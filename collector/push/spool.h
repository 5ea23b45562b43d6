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
 *   pyprof-push 2\n
 *   <destination>\n          "pyroscope"
 *   <base URL>\n             the URL the window was made for
 *   <path and query>\n       /ingest?name=...&from=...&until=...
 *   <the request body>       (the gzipped pprof profile)
 *
 * (Version 1, written before the base URL was kept, has no URL line;
 * such a window is read with an empty url.)
 *
 * Trust. The windows are sent with the user's credentials, so nobody
 * else may put one there: the directory is opened through checked.h
 * (ours or root's, not writable by others, no symbolic link: refused at
 * open with one line), and so is each file (a regular file of ours: a
 * FIFO or a link swapped in is set aside, never waited on or followed).
 * A file that is not a window of this shape (no magic, a path with a
 * blank or control character, bigger than max, a sequence number past
 * SPOOL_SEQ_MAX) is set aside: renamed <name>.rejected, logged once, and
 * counted; it is never retried. Whether a window belongs to the
 * destination (its URL and path) is the caller's check (push.c).
 *
 * Sequence numbers only grow (a new collector continues after the
 * largest it finds), so the names sort in the order the windows ended.
 *
 * Size. The files may hold at most max bytes in all, those found at
 * open included (the oldest go first); a new one that would pass it
 * pushes out the oldest first, and one bigger than max is not kept; what
 * is dropped is counted (spool_take_dropped) for the log. A file is
 * never read past max bytes.
 *
 * Threads: the push thread, and the loop thread when the push queue is
 * full (push.h); an internal mutex orders them. Blocking file I/O.
 */
#ifndef PYPROF_SPOOL_H
#define PYPROF_SPOOL_H

#include <stddef.h>
#include <stdint.h>

/* Sequence numbers stop here: a file numbered higher is set aside, so
 * that the next number never wraps to 0 (which means "none"). */
#define SPOOL_SEQ_MAX (1ull << 62)

struct spool;

/* A window read back. */
struct spool_item {
	uint64_t seq;
	char dest[32];
	char *url;   /* malloc'd; "" for a version-1 file */
	char *query; /* malloc'd: '/' then printable ASCII, no blank */
	void *body;  /* malloc'd */
	size_t len;
};

/* Opens dir (made with its parents, 0700, when missing), checks it
 * (checked.h), locks it and lists the windows in it (setting aside what
 * is no window, dropping the oldest past max). NULL with a one-line
 * reason in err. */
struct spool *spool_open(const char *dir, uint64_t max, char *err,
			 size_t err_len);
/* Unlocks and frees (the files stay). NULL is fine. */
void spool_close(struct spool *s);

/* Writes a window; older ones may be dropped to make room (counted).
 * 0, -EFBIG (bigger than max: not kept, counted), or a negative errno
 * from writing. */
int spool_add(struct spool *s, uint64_t seq, const char *dest,
	      const char *url, const char *query, const void *body,
	      size_t len);

/* The oldest window's sequence number, or 0 when there is none. */
uint64_t spool_oldest(struct spool *s);
/* The largest sequence number seen in the directory at open (0: none). */
uint64_t spool_last_seq(const struct spool *s);
/* Reads the window seq into *it (free with spool_item_free). 0, -ENOENT
 * (dropped meanwhile), -EINVAL (not a spooled window: set aside and
 * logged) or another negative errno. */
int spool_read(struct spool *s, uint64_t seq, struct spool_item *it);
void spool_item_free(struct spool_item *it);
/* Removes the window seq (sent, or refused by the server). */
void spool_remove(struct spool *s, uint64_t seq);
/* Sets the window seq aside (<name>.rejected; removed if it cannot be
 * renamed), logging why: one that can never be sent. Counted. */
void spool_set_aside(struct spool *s, uint64_t seq, const char *why);
/* Windows set aside since the last call. */
uint64_t spool_take_set_aside(struct spool *s);

/* Windows and bytes held now. */
void spool_usage(struct spool *s, size_t *n, uint64_t *bytes);
/* Windows dropped to make room since the last call, and their bytes. */
uint64_t spool_take_dropped(struct spool *s, uint64_t *bytes);

#endif /* PYPROF_SPOOL_H */
