/*
 * spool.c - the push spool's files (see spool.h).
 *
 * The list of windows is kept in memory, sorted by sequence number, with
 * each file's size: the directory is listed once, at open, and after that
 * only this process changes it (the lock). Windows are added from two
 * threads (push.h) but numbered by one, so an insertion is usually at the
 * end and a spilled window lands after the older ones still queued.
 *
 * Every file is opened through checked.h (never a FIFO, a link or a file
 * of another user) and read at most up to the spool's size: what the
 * directory holds is never trusted further than its shape.
 */
#include "push/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/fileio.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/readfile.h"

#define SPOOL_MAGIC "pyprof-push 2\n"
#define SPOOL_MAGIC_V1 "pyprof-push 1\n"
#define SPOOL_MAX_FILE (1ull << 31)

struct entry {
	uint64_t seq, size;
};

struct spool {
	pthread_mutex_t mu; /* guards everything below */
	char dir[4096];
	int lock_fd;
	uint64_t max;
	struct entry *e; /* sorted by seq */
	size_t n, cap;
	uint64_t bytes;
	uint64_t last_seq;
	uint64_t n_dropped, dropped_bytes;
	uint64_t n_set_aside;
};

static const struct checked_rules dir_rules = {
	.what = "spool directory",
	.harm = "another user could add windows, sent with your credentials",
	.fix = "remove it, or give --spool-dir a directory of your own",
	.trust_uid = -1,
	.how = CHECKED_DIR,
};

static const struct checked_rules file_rules = {
	.what = "spooled window",
	.harm = NULL,
	.fix = "it is set aside",
	.trust_uid = -1,
	.how = CHECKED_FILE | CHECKED_SECRET,
};

static int file_name(const struct spool *s, uint64_t seq, char *out,
		     size_t cap)
{
	if ((size_t)snprintf(out, cap, "%s/%016" PRIx64 ".push", s->dir, seq) >=
	    cap)
		return -ENAMETOOLONG;
	return 0;
}

/* "<16 hex>.push": its number, else 0. */
static uint64_t seq_of(const char *name)
{
	uint64_t v = 0;

	if (strlen(name) != 21 || strcmp(name + 16, ".push") != 0)
		return 0;
	for (int i = 0; i < 16; i++) {
		char c = name[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
					       : -1;
		if (d < 0)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	return v;
}

/* Where seq goes in the sorted list. */
static size_t position(const struct spool *s, uint64_t seq)
{
	size_t i = s->n;
	while (i > 0 && s->e[i - 1].seq > seq)
		i--;
	return i;
}

static int insert(struct spool *s, uint64_t seq, uint64_t size)
{
	size_t at;

	if (grow_array(&s->e, &s->cap, s->n + 1, sizeof(*s->e), 64) < 0)
		return -ENOMEM;
	at = position(s, seq);
	memmove(&s->e[at + 1], &s->e[at], (s->n - at) * sizeof(*s->e));
	s->e[at] = (struct entry){ seq, size };
	s->n++;
	s->bytes += size;
	return 0;
}

/* Renames the file of seq to <name>.rejected (removes it if it cannot
 * be), and says why. */
static void put_aside(struct spool *s, uint64_t seq, const char *why)
{
	char path[4200], to[4300];

	s->n_set_aside++;
	if (file_name(s, seq, path, sizeof(path)) < 0)
		return;
	snprintf(to, sizeof(to), "%s.rejected", path);
	if (rename(path, to) == 0)
		log_warn("push: %s is not a window this collector can send "
			 "(%s): set aside as %s",
			 path, why, to);
	else if (unlink(path) == 0 || errno == ENOENT)
		log_warn("push: %s is not a window this collector can send "
			 "(%s): removed",
			 path, why);
}

static void remove_at(struct spool *s, size_t i, const char *aside)
{
	char path[4200];
	if (aside)
		put_aside(s, s->e[i].seq, aside);
	else if (file_name(s, s->e[i].seq, path, sizeof(path)) == 0)
		unlink(path);
	s->bytes -= s->e[i].size;
	memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
	s->n--;
}

/* Drops the oldest windows until size more bytes fit. Locked. */
static void make_room(struct spool *s, uint64_t size)
{
	while (s->n > 0 && s->bytes + size > s->max) {
		s->n_dropped++;
		s->dropped_bytes += s->e[0].size;
		remove_at(s, 0, NULL);
	}
}

/* Near the end of the numbers (a window named past every real one: one
 * called 4000000000000000.push left the next ones past SPOOL_SEQ_MAX,
 * all set aside at the next start), the windows kept are numbered again
 * from 1, in their order: numbers only order them. */
static void renumber(struct spool *s)
{
	char from[4200], to[4200];

	if (s->last_seq <= SPOOL_SEQ_MAX - (1ull << 32))
		return;
	log_warn("push: the spool's windows are numbered up to %016" PRIx64
		 ": numbering its %zu windows again from 1",
		 s->last_seq,
		 s->n);
	for (size_t i = 0; i < s->n; i++) {
		if (file_name(s, s->e[i].seq, from, sizeof(from)) < 0 ||
		    file_name(s, i + 1, to, sizeof(to)) < 0 ||
		    (s->e[i].seq != i + 1 && rename(from, to) < 0))
			break;
		s->e[i].seq = i + 1;
	}
	s->last_seq = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].seq > s->last_seq)
			s->last_seq = s->e[i].seq;
}

/* Lists the windows at open. A name past SPOOL_SEQ_MAX, or a file
 * bigger than the whole spool, is set aside at once; a file that is not
 * regular is left for spool_read to set aside in its turn. Then the
 * oldest go until the rest fit in max. */
static int scan(struct spool *s, int dfd)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (rc == 0 && (de = readdir(d))) {
		uint64_t seq = seq_of(de->d_name);
		struct stat st;
		if (!seq || fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (seq > SPOOL_SEQ_MAX) {
			put_aside(s, seq, "its sequence number is past the "
					  "largest one used");
			continue;
		}
		if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > s->max) {
			put_aside(s, seq, "bigger than --spool-max");
			continue;
		}
		rc = insert(s, seq, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
		if (seq > s->last_seq)
			s->last_seq = seq;
	}
	closedir(d);
	if (rc == 0)
		make_room(s, 0);
	if (rc == 0)
		renumber(s);
	return rc;
}

struct spool *spool_open(const char *dir, uint64_t max, char *err,
			 size_t err_len)
{
	struct spool *s = calloc(1, sizeof(*s));
	char lock[4200];
	int rc, dfd;

	if (!s) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->lock_fd = -1;
	s->max = max;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	if ((rc = file_mkdirs(dir, 0700)) < 0) {
		snprintf(err, err_len, "cannot make %s: %s", dir,
			 strerror(-rc));
		goto fail;
	}
	if ((dfd = checked_open(dir, O_RDONLY, &dir_rules, err, err_len)) < 0)
		goto fail;
	s->lock_fd = openat(dfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (s->lock_fd < 0) {
		snprintf(lock, sizeof(lock), "%s/.lock", dir);
		snprintf(err, err_len, "cannot open %s: %s", lock,
			 strerror(errno));
		close(dfd);
		goto fail;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, err_len, "%s is used by another collector "
				       "(locked)",
			 dir);
		close(dfd);
		goto fail;
	}
	if ((rc = scan(s, dfd)) < 0) {
		snprintf(err, err_len, "cannot list %s: %s", dir,
			 strerror(-rc));
		goto fail;
	}
	return s;
fail:
	spool_close(s);
	return NULL;
}

void spool_close(struct spool *s)
{
	if (!s)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	pthread_mutex_destroy(&s->mu);
	free(s->e);
	free(s);
}

int spool_add(struct spool *s, uint64_t seq, const char *dest,
	      const char *url, const char *query, const void *body,
	      size_t len)
{
	size_t hlen = strlen(SPOOL_MAGIC) + strlen(dest) + strlen(url) +
		      strlen(query) + 3;
	char path[4200];
	char *buf;
	int rc;

	if (hlen + len > s->max) {
		pthread_mutex_lock(&s->mu);
		s->n_dropped++;
		s->dropped_bytes += hlen + len;
		pthread_mutex_unlock(&s->mu);
		return -EFBIG;
	}
	buf = malloc(hlen + len + 1);
	if (!buf)
		return -ENOMEM;
	snprintf(buf, hlen + 1, "%s%s\n%s\n%s\n", SPOOL_MAGIC, dest, url,
		 query);
	memcpy(buf + hlen, body, len);
	pthread_mutex_lock(&s->mu);
	make_room(s, hlen + len);
	rc = file_name(s, seq, path, sizeof(path));
	if (rc == 0)
		rc = file_write_atomic(path, buf, hlen + len,
				       FILEIO_REPLACE | FILEIO_PRIVATE);
	if (rc == 0 && (rc = insert(s, seq, hlen + len)) < 0)
		unlink(path);
	pthread_mutex_unlock(&s->mu);
	free(buf);
	return rc;
}

uint64_t spool_oldest(struct spool *s)
{
	uint64_t seq;
	pthread_mutex_lock(&s->mu);
	seq = s->n ? s->e[0].seq : 0;
	pthread_mutex_unlock(&s->mu);
	return seq;
}

uint64_t spool_last_seq(const struct spool *s)
{
	return s->last_seq;
}

/* The line at *p (up to '\n', within end), printable ASCII without
 * blanks: its length, *p moved past its '\n'; -1 if it is not one. */
static ssize_t take_line(uint8_t **p, uint8_t *end)
{
	uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
	ssize_t n;

	if (!nl)
		return -1;
	for (uint8_t *c = *p; c < nl; c++)
		if (*c <= 0x20 || *c >= 0x7f)
			return -1;
	n = nl - *p;
	*p = nl + 1;
	return n;
}

/* Splits a file's text into the item's parts. 0, -EINVAL (with why) or
 * -ENOMEM. */
static int parse(uint8_t *data, size_t len, struct spool_item *it,
		 const char **why)
{
	size_t m = strlen(SPOOL_MAGIC);
	uint8_t *p = data + m, *end = data + len, *dest, *url, *query;
	ssize_t ndest, nurl = 0, nquery;
	int v1;

	*why = "not a spooled window";
	if (len < m || (memcmp(data, SPOOL_MAGIC, m) != 0 &&
			memcmp(data, SPOOL_MAGIC_V1, m) != 0))
		return -EINVAL;
	v1 = memcmp(data, SPOOL_MAGIC_V1, m) == 0;
	*why = "a malformed destination, URL or request path";
	dest = p;
	if ((ndest = take_line(&p, end)) <= 0 ||
	    (size_t)ndest >= sizeof(it->dest))
		return -EINVAL;
	url = p;
	if (!v1 && (nurl = take_line(&p, end)) <= 0)
		return -EINVAL;
	query = p;
	if ((nquery = take_line(&p, end)) <= 0 || query[0] != '/')
		return -EINVAL;
	memcpy(it->dest, dest, (size_t)ndest);
	it->dest[ndest] = 0;
	it->url = strndup((char *)url, (size_t)nurl);
	it->query = strndup((char *)query, (size_t)nquery);
	it->len = (size_t)(end - p);
	it->body = malloc(it->len ? it->len : 1);
	if (!it->url || !it->query || !it->body) {
		spool_item_free(it);
		return -ENOMEM;
	}
	memcpy(it->body, p, it->len);
	return 0;
}

/* Reads the file at path: a regular file of ours, at most max bytes.
 * -EINVAL with why[] when it is none. */
static int read_window(struct spool *s, const char *path, uint8_t **data,
		       size_t *len, char *why, size_t cap)
{
	char err[4400];
	struct stat st;
	int fd = checked_open(path, O_RDONLY, &file_rules, err, sizeof(err));
	int rc;

	if (fd == -EPERM) {
		/* "refusing spooled window PATH: REASON; FIX": the reason */
		const char *r = strstr(err + strlen("refusing spooled window ") +
					       strlen(path),
				       ": ");
		r = r ? r + 2 : err;
		snprintf(why, cap, "%.*s", (int)strcspn(r, ";"), r);
		return -EINVAL;
	}
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > s->max) {
		close(fd);
		snprintf(why, cap, "bigger than --spool-max");
		return -EINVAL;
	}
	rc = read_fd_all(fd, s->max < SPOOL_MAX_FILE ? s->max : SPOOL_MAX_FILE, data, len);
	close(fd);
	if (rc == -E2BIG) {
		snprintf(why, cap, "bigger than --spool-max");
		return -EINVAL;
	}
	return rc;
}

int spool_read(struct spool *s, uint64_t seq, struct spool_item *it)
{
	char path[4200], why[512] = "";
	uint8_t *data = NULL;
	size_t len = 0;
	const char *reason = why;
	int rc;

	memset(it, 0, sizeof(*it));
	it->seq = seq;
	if ((rc = file_name(s, seq, path, sizeof(path))) < 0)
		return rc;
	rc = read_window(s, path, &data, &len, why, sizeof(why));
	if (rc == 0)
		rc = parse(data, len, it, &reason);
	free(data);
	if (rc == -EINVAL)
		spool_set_aside(s, seq, reason);
	return rc;
}

void spool_item_free(struct spool_item *it)
{
	free(it->url);
	free(it->query);
	free(it->body);
	it->url = NULL;
	it->query = NULL;
	it->body = NULL;
}

/* Removes (or sets aside, when aside says why) the window seq. */
static void drop(struct spool *s, uint64_t seq, const char *aside)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].seq == seq) {
			remove_at(s, i, aside);
			break;
		}
	pthread_mutex_unlock(&s->mu);
}

void spool_remove(struct spool *s, uint64_t seq)
{
	drop(s, seq, NULL);
}

void spool_set_aside(struct spool *s, uint64_t seq, const char *why)
{
	drop(s, seq, why);
}

uint64_t spool_take_set_aside(struct spool *s)
{
	uint64_t n;
	pthread_mutex_lock(&s->mu);
	n = s->n_set_aside;
	s->n_set_aside = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void spool_usage(struct spool *s, size_t *n, uint64_t *bytes)
{
	pthread_mutex_lock(&s->mu);
	*n = s->n;
	*bytes = s->bytes;
	pthread_mutex_unlock(&s->mu);
}

uint64_t spool_take_dropped(struct spool *s, uint64_t *bytes)
{
	uint64_t n;
	pthread_mutex_lock(&s->mu);
	n = s->n_dropped;
	*bytes = s->dropped_bytes;
	s->n_dropped = 0;
	s->dropped_bytes = 0;
	pthread_mutex_unlock(&s->mu);
	return n;
}
