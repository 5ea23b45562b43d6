/*
 * spool.c - the push spool's files (see spool.h).
 *
 * The list of windows is kept in memory, sorted by sequence number, with
 * each file's size: the directory is listed once, at open, and after that
 * only this process changes it (the lock). Windows are added from two
 * threads (push.h) but numbered by one, so an insertion is usually at the
 * end and a spilled window lands after the older ones still queued.
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

#include "common/fileio.h"
#include "common/grow.h"
#include "common/readfile.h"

#define SPOOL_MAGIC "pyprof-push 1\n"
#define SPOOL_MAX_FILE (1ull << 31)

struct entry {
	uint64_t seq, size;
};

struct spool {
	pthread_mutex_t mu;   /* guards everything below */
	char dir[4096];
	int lock_fd;
	uint64_t max;
	struct entry *e;      /* sorted by seq */
	size_t n, cap;
	uint64_t bytes;
	uint64_t last_seq;
	uint64_t n_dropped, dropped_bytes;
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
		int d = c >= '0' && c <= '9' ? c - '0'
		      : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
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

static void remove_at(struct spool *s, size_t i)
{
	char path[4200];
	if (file_name(s, s->e[i].seq, path, sizeof(path)) == 0)
		unlink(path);
	s->bytes -= s->e[i].size;
	memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
	s->n--;
}

static int scan(struct spool *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return -errno;
	while (rc == 0 && (de = readdir(d))) {
		uint64_t seq = seq_of(de->d_name);
		struct stat st;
		if (!seq || fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		rc = insert(s, seq, (uint64_t)st.st_size);
		if (seq > s->last_seq)
			s->last_seq = seq;
	}
	closedir(d);
	return rc;
}

struct spool *spool_open(const char *dir, uint64_t max, char *err,
			 size_t err_len)
{
	struct spool *s = calloc(1, sizeof(*s));
	char lock[4200];
	int rc;

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
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			  0600);
	if (s->lock_fd < 0) {
		snprintf(err, err_len, "cannot open %s: %s", lock,
			 strerror(errno));
		goto fail;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, err_len, "%s is used by another collector "
			 "(locked)", dir);
		goto fail;
	}
	if ((rc = scan(s)) < 0) {
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

/* Drops the oldest windows until size more bytes fit. Locked. */
static void make_room(struct spool *s, uint64_t size)
{
	while (s->n > 0 && s->bytes + size > s->max) {
		s->n_dropped++;
		s->dropped_bytes += s->e[0].size;
		remove_at(s, 0);
	}
}

int spool_add(struct spool *s, uint64_t seq, const char *dest,
	      const char *query, const void *body, size_t len)
{
	size_t hlen = strlen(SPOOL_MAGIC) + strlen(dest) + strlen(query) + 2;
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
	snprintf(buf, hlen + 1, "%s%s\n%s\n", SPOOL_MAGIC, dest, query);
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

/* Splits a file's text into the item's parts. 0 or -EINVAL. */
static int parse(uint8_t *data, size_t len, struct spool_item *it)
{
	size_t m = strlen(SPOOL_MAGIC);
	uint8_t *dest, *query, *nl1, *nl2;

	if (len < m || memcmp(data, SPOOL_MAGIC, m) != 0)
		return -EINVAL;
	dest = data + m;
	nl1 = memchr(dest, '\n', len - m);
	if (!nl1 || (size_t)(nl1 - dest) >= sizeof(it->dest))
		return -EINVAL;
	query = nl1 + 1;
	nl2 = memchr(query, '\n', len - (size_t)(query - data));
	if (!nl2 || query[0] != '/')
		return -EINVAL;
	memcpy(it->dest, dest, (size_t)(nl1 - dest));
	it->dest[nl1 - dest] = 0;
	it->query = strndup((char *)query, (size_t)(nl2 - query));
	it->len = len - (size_t)(nl2 + 1 - data);
	it->body = malloc(it->len ? it->len : 1);
	if (!it->query || !it->body) {
		spool_item_free(it);
		return -ENOMEM;
	}
	memcpy(it->body, nl2 + 1, it->len);
	return 0;
}

int spool_read(struct spool *s, uint64_t seq, struct spool_item *it)
{
	char path[4200];
	uint8_t *data = NULL;
	size_t len = 0;
	int fd, rc;

	memset(it, 0, sizeof(*it));
	it->seq = seq;
	if ((rc = file_name(s, seq, path, sizeof(path))) < 0)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = read_fd_all(fd, SPOOL_MAX_FILE, &data, &len);
	close(fd);
	if (rc == -E2BIG)
		rc = -EINVAL;
	if (rc == 0)
		rc = parse(data, len, it);
	free(data);
	if (rc == -EINVAL)
		spool_remove(s, seq);
	return rc;
}

void spool_item_free(struct spool_item *it)
{
	free(it->query);
	free(it->body);
	it->query = NULL;
	it->body = NULL;
}

void spool_remove(struct spool *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].seq == seq) {
			remove_at(s, i);
			break;
		}
	pthread_mutex_unlock(&s->mu);
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
