/*
 * transport.c - see transport.h. Agent thread only.
 */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

#define BACKOFF_MIN_NS 50000000ull
#define BACKOFF_MAX_NS 1000000000ull

void transport_init(struct transport *t, const char *path, long trust_uid)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	t->spare = -1;
	strncpy(t->path, path, sizeof t->path - 1);
	t->trust_uid = trust_uid;
	t->backoff_ns = BACKOFF_MIN_NS;
}

void transport_fini(struct transport *t)
{
	if (t->fd >= 0)
		fd_close_own(t->fd, &t->id);
	if (t->spare >= 0)
		fd_close_own(t->spare, &t->spare_id);
	free(t->buf);
	free(t->marks);
	memset(t, 0, sizeof *t);
	t->fd = -1;
	t->spare = -1;
}

/* A new unconnected socket, parked; -1 on failure. */
static int new_socket(struct fd_id *id)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	fd = fd_park(fd);
	if (fd_id_get(fd, id) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

void transport_prepare(struct transport *t)
{
	if (t->spare >= 0 && fd_is(t->spare, &t->spare_id))
		return;
	t->spare = new_socket(&t->spare_id);
}

size_t transport_pending(const struct transport *t)
{
	return t->len - t->off;
}

static int ensure(struct transport *t, size_t more)
{
	if (t->len + more <= t->cap)
		return 0;
	if (t->off > 0) { /* compact first */
		size_t shift = t->off;
		memmove(t->buf, t->buf + shift, t->len - shift);
		t->len -= shift;
		t->off = 0;
		for (size_t i = t->first_mark; i < t->n_marks; i++)
			t->marks[i].start -= shift;
		memmove(t->marks, t->marks + t->first_mark,
			(t->n_marks - t->first_mark) * sizeof *t->marks);
		t->n_marks -= t->first_mark;
		t->first_mark = 0;
		if (t->len + more <= t->cap)
			return 0;
	}
	size_t nc = t->cap ? t->cap : 65536;
	while (nc < t->len + more)
		nc *= 2;
	uint8_t *p = realloc(t->buf, nc);
	if (!p)
		return -ENOMEM;
	t->buf = p;
	t->cap = nc;
	return 0;
}

static int put_bytes(struct transport *t, const void *p, size_t n)
{
	if (ensure(t, n) < 0)
		return -ENOMEM;
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	return 0;
}

/* Encodes one definition frame with a payload built by the caller. */
static int put_frame(struct transport *t, unsigned type,
		     const uint8_t *payload, size_t n)
{
	uint8_t hdr[WIRE_HDR_LEN];
	wire_put_hdr_at(hdr, type, n);
	if (ensure(t, WIRE_HDR_LEN + n) < 0)
		return -ENOMEM;
	put_bytes(t, hdr, sizeof hdr);
	put_bytes(t, payload, n);
	return 0;
}

static int put_def(struct transport *t, const struct intern *in, int kind,
		   uint32_t id)
{
	uint8_t tmp[WIRE_MAX_STRING + 32];
	struct wire_out w = { tmp, tmp + sizeof tmp, 1 };
	unsigned type = 0;
	switch (kind) {
	case 0: {
		const struct istr *e = &in->strs[id - 1];
		size_t n = e->len > WIRE_MAX_STRING ? WIRE_MAX_STRING : e->len;
		wire_put_string(&w, &(struct wire_string){
					    id, (const uint8_t *)e->s, n });
		type = WIRE_STRING;
		break;
	}
	case 1: {
		const struct ifunc *e = &in->funcs[id - 1];
		wire_put_function(&w, &(struct wire_function){
					      id, e->name, e->system_name, e->filename,
					      (uint32_t)(e->start_line < 0 ? 0 : e->start_line) });
		type = WIRE_FUNCTION;
		break;
	}
	case 2: {
		const struct iloc *e = &in->locs[id - 1];
		if (e->native) {
			wire_put_address(&w, &(struct wire_address){
						     id, e->mapping, e->addr });
			type = WIRE_ADDRESS;
			break;
		}
		wire_put_location(&w, &(struct wire_location){
					      id, e->func, (uint32_t)(e->line < 0 ? 0 : e->line) });
		type = WIRE_LOCATION;
		break;
	}
	case 3: {
		const struct inode *e = &in->nodes[id - 1];
		wire_put_node(&w, &(struct wire_node){ id, e->parent, e->loc });
		type = WIRE_NODE;
		break;
	}
	case 4: {
		const struct ithread *e = &in->threads[id - 1];
		wire_put_thread(&w, &(struct wire_thread){
					    id, (uint64_t)(unsigned)e->tid, e->name });
		type = WIRE_THREAD;
		break;
	}
	case 6: {
		const struct ilabels *e = &in->labels[id - 1];
		uint64_t kv[2 * WIRE_MAX_LABELS];
		size_t n = e->n > WIRE_MAX_LABELS ? WIRE_MAX_LABELS : e->n;
		for (size_t i = 0; i < 2 * n; i++)
			kv[i] = in->label_kv[e->first + i];
		wire_put_labels(&w, &(struct wire_labels){ id, n, kv });
		type = WIRE_LABELS;
		break;
	}
	case 5: {
		const struct imapping *e = &in->maps[id - 1];
		wire_put_mapping(&w, &(struct wire_mapping){
					     id, e->start, e->limit, e->offset, e->file,
					     e->build_id, e->build_id_len });
		type = WIRE_MAPPING;
		break;
	}
	}
	if (!w.ok)
		return -EINVAL;
	return put_frame(t, type, tmp, (size_t)(w.p - tmp));
}

int transport_put_defs(struct transport *t, const struct intern *in)
{
	const uint32_t counts[7] = { in->n_strs, in->n_funcs, in->n_locs,
				     in->n_nodes, in->n_threads, in->n_maps,
				     in->n_labels };
	/* definitions before use: a mapping names a string, an ADDRESS
	 * location a mapping, a label set strings */
	static const int order[7] = { 0, 5, 1, 2, 3, 4, 6 };
	if (t->fd < 0)
		return 0;
	for (int o = 0; o < 7; o++) {
		int k = order[o];
		while (t->sent[k] < counts[k]) {
			int rc = put_def(t, in, k, t->sent[k] + 1);
			if (rc == -ENOMEM)
				return rc;
			t->sent[k]++;
		}
	}
	return 0;
}

int transport_put_thread(struct transport *t, const struct intern *in,
			 uint32_t ref)
{
	if (t->fd < 0 || ref > t->sent[4])
		return 0; /* sent with the next replay or batch */
	/* the new name may be a string not sent yet: definitions first */
	int rc = transport_put_defs(t, in);
	return rc < 0 ? rc : put_def(t, in, 4, ref);
}

int transport_put_data(struct transport *t, const uint8_t *frame,
		       size_t len)
{
	if (t->refused)
		return 0; /* nobody will ever read it */
	if (t->data_bytes + len > TRANSPORT_DATA_CAP)
		return -ENOSPC;
	if (t->n_marks == t->cap_marks) {
		/* compact marks already sent before growing */
		if (t->first_mark) {
			memmove(t->marks, t->marks + t->first_mark,
				(t->n_marks - t->first_mark) *
					sizeof *t->marks);
			t->n_marks -= t->first_mark;
			t->first_mark = 0;
		}
		if (t->n_marks == t->cap_marks) {
			size_t nc = t->cap_marks ? t->cap_marks * 2 : 256;
			void *p = realloc(t->marks, nc * sizeof *t->marks);
			if (!p)
				return -ENOMEM;
			t->marks = p;
			t->cap_marks = nc;
		}
	}
	if (ensure(t, len) < 0)
		return -ENOMEM;
	t->marks[t->n_marks++] = (struct tmark){ t->len, len };
	put_bytes(t, frame, len);
	t->data_bytes += len;
	return 0;
}

int transport_put_frame(struct transport *t, const struct intern *in,
			uint8_t *frame, const struct wire_out *w,
			unsigned type)
{
	size_t len = wire_end_frame(frame, w, type);
	if (in)
		transport_put_defs(t, in);
	return transport_put_data(t, frame, len);
}

struct wire_out transport_hello_begin(uint8_t *frame, size_t cap)
{
	return wire_hello_begin(frame, cap, (uint64_t)getpid(),
				(uint64_t)getppid());
}

/* Forgets the data frames that have been sent completely. */
static void retire_sent(struct transport *t)
{
	while (t->first_mark < t->n_marks) {
		struct tmark *m = &t->marks[t->first_mark];
		if (m->start + m->len > t->off)
			break;
		t->data_bytes -= m->len;
		t->first_mark++;
	}
	if (t->off == t->len) {
		t->off = t->len = 0;
		t->n_marks = t->first_mark = 0;
	}
}

/* Keeps only unsent data frames, whole, at the start of the buffer. */
static void disconnect(struct transport *t, uint64_t now_ns, const char *why)
{
	plog_info("collector connection lost (%s); will reconnect", why);
	fd_close_own(t->fd, &t->id);
	t->fd = -1;
	t->rlen = 0;
	memset(t->sent, 0, sizeof t->sent);
	size_t w = 0, nm = 0;
	for (size_t i = t->first_mark; i < t->n_marks; i++) {
		struct tmark m = t->marks[i];
		memmove(t->buf + w, t->buf + m.start, m.len);
		t->marks[nm++] = (struct tmark){ w, m.len };
		w += m.len;
	}
	t->len = w;
	t->off = 0;
	t->n_marks = nm;
	t->first_mark = 0;
	t->next_try_ns = now_ns + t->backoff_ns;
}

/* ---- who may hear us (see transport.h) ---------------------------------- */

static int trusted(long trust_uid, uid_t uid)
{
	return uid == geteuid() || uid == 0 ||
	       (trust_uid >= 0 && uid == (uid_t)trust_uid);
}

int transport_check_dir(const char *path, long trust_uid, char *why,
			size_t cap)
{
	char dir[TRANSPORT_PATH_CAP];
	const char *slash = strrchr(path, '/');
	struct stat sb;

	if (!slash) /* config.c takes absolute paths only */
		return -EINVAL;
	if (slash == path)
		strcpy(dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (lstat(dir, &sb) < 0)
		return -errno;
	if (S_ISLNK(sb.st_mode)) {
		snprintf(why, cap, "its directory %s is a symbolic link", dir);
		return -EPERM;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(why, cap, "%s is not a directory", dir);
		return -EPERM;
	}
	if (!trusted(trust_uid, sb.st_uid)) {
		snprintf(why, cap,
			 "its directory %s belongs to uid %u, not to you "
			 "(uid %u) or root; if that user runs your collector "
			 "(the package's: pyprof), set "
			 "PYPROF_COLLECTOR_USER=%u; else remove that "
			 "directory, or set PYPROF_SOCKET (or XDG_RUNTIME_DIR) "
			 "to a place of your own",
			 dir, (unsigned)sb.st_uid, (unsigned)geteuid(),
			 (unsigned)sb.st_uid);
		return -EPERM;
	}
	/* others could put their own socket in our place; sticky (as
	 * /tmp) stops them from removing ours, and the peer check below
	 * catches one of theirs under a free name */
	if ((sb.st_mode & (S_IWGRP | S_IWOTH)) && !(sb.st_mode & S_ISVTX)) {
		snprintf(why, cap,
			 "its directory %s is writable by other users (mode "
			 "%04o); chmod go-w it, or set PYPROF_SOCKET to a "
			 "place of your own",
			 dir, (unsigned)(sb.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int transport_check_peer(int fd, long trust_uid, char *why, size_t cap)
{
	struct ucred cr;
	socklen_t n = sizeof cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
		return -errno;
	if (!trusted(trust_uid, cr.uid)) {
		snprintf(why, cap,
			 "the collector there runs as uid %u, not as you "
			 "(uid %u) or root; if you trust that user, set "
			 "PYPROF_COLLECTOR_USER=%u",
			 (unsigned)cr.uid, (unsigned)geteuid(),
			 (unsigned)cr.uid);
		return -EPERM;
	}
	return 0;
}

/* Forgets everything queued and never connects again. */
static int refuse(struct transport *t, const char *why)
{
	plog_always("not connecting to the collector socket %s: %s; "
		    "profiling is off",
		    t->path, why);
	t->refused = 1;
	t->len = t->off = 0;
	t->n_marks = t->first_mark = 0;
	t->data_bytes = 0;
	free(t->buf);
	free(t->marks);
	t->buf = NULL;
	t->marks = NULL;
	t->cap = t->cap_marks = 0;
	return -EPERM;
}

int transport_connect(struct transport *t, uint64_t now_ns,
		      size_t (*hello)(uint8_t *buf, size_t cap, uint32_t seq,
				      void *arg),
		      void *arg, const struct intern *in)
{
	char why[400];
	int rc;

	if (t->refused || t->fd >= 0 || now_ns < t->next_try_ns)
		return 0;
	if ((rc = transport_check_dir(t->path, t->trust_uid, why, sizeof why)) == -EPERM)
		return refuse(t, why);
	if (rc < 0)
		goto retry; /* no collector there yet */
	/* the prepared socket (transport_prepare) if the program has not
	 * closed its number; else a new one */
	struct fd_id id = t->spare_id;
	int fd = t->spare >= 0 && fd_is(t->spare, &id) ? t->spare : -1;
	t->spare = -1;
	if (fd < 0 && (fd = new_socket(&id)) < 0)
		goto retry;
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, t->path, sizeof sa.sun_path - 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		/* no collector listening yet: the socket stays unconnected
		 * and serves the next try */
		if (errno == ENOENT || errno == ECONNREFUSED ||
		    errno == EAGAIN) {
			t->spare = fd;
			t->spare_id = id;
		} else {
			close(fd);
		}
		goto retry;
	}
	/* before a single byte goes out */
	if ((rc = transport_check_peer(fd, t->trust_uid, why, sizeof why)) < 0) {
		close(fd);
		if (rc == -EPERM)
			return refuse(t, why);
		goto retry;
	}
	/* Rebuild the buffer: HELLO, every definition, then the kept data. */
	uint8_t hbuf[16384];
	size_t hn = hello(hbuf, sizeof hbuf, t->conn_seq, arg);
	size_t keep = t->len - t->off;
	uint8_t *data = malloc(keep ? keep : 1);
	if (!data || !hn) {
		free(data);
		close(fd);
		goto retry;
	}
	memcpy(data, t->buf + t->off, keep);
	size_t base_mark = t->first_mark;
	size_t data_start = t->off;
	t->len = t->off = 0;
	t->fd = fd;
	t->id = id;
	memset(t->sent, 0, sizeof t->sent);
	if (put_bytes(t, hbuf, hn) < 0 || transport_put_defs(t, in) < 0) {
		free(data);
		close(fd);
		t->fd = -1;
		goto retry;
	}
	size_t shift_to = t->len;
	if (put_bytes(t, data, keep) < 0) {
		free(data);
		close(fd);
		t->fd = -1;
		goto retry;
	}
	free(data);
	size_t nm = 0;
	for (size_t i = base_mark; i < t->n_marks; i++) {
		struct tmark m = t->marks[i];
		t->marks[nm++] = (struct tmark){ m.start - data_start + shift_to,
						 m.len };
	}
	t->n_marks = nm;
	t->first_mark = 0;
	t->conn_seq++;
	t->backoff_ns = BACKOFF_MIN_NS;
	plog_info("connected to the collector at %s", t->path);
	return 1;
retry:
	t->next_try_ns = now_ns + t->backoff_ns;
	t->backoff_ns *= 2;
	if (t->backoff_ns > BACKOFF_MAX_NS)
		t->backoff_ns = BACKOFF_MAX_NS;
	return 0;
}

int transport_put_ctl(struct transport *t, const uint8_t *frame,
		      size_t len)
{
	if (t->fd < 0)
		return -ENOTCONN;
	return put_bytes(t, frame, len);
}

/* Hands over every whole frame in rbuf. 0, or -EPROTO (a frame that is
 * not a control frame for us, or too long). */
static int take_frames(struct transport *t)
{
	size_t off = 0;
	while (t->rlen - off >= WIRE_HDR_LEN) {
		unsigned type;
		size_t plen;
		wire_get_hdr(t->rbuf + off, &type, &plen);
		if (type < WIRE_CTL_DOWN_FIRST || type > WIRE_CTL_DOWN_LAST ||
		    plen > WIRE_MAX_CTL_PAYLOAD)
			return -EPROTO;
		if (t->rlen - off < WIRE_HDR_LEN + plen)
			break;
		if (t->on_frame)
			t->on_frame(type, t->rbuf + off + WIRE_HDR_LEN, plen,
				    t->frame_arg);
		if (t->fd < 0)
			return 0; /* the handler dropped the connection */
		off += WIRE_HDR_LEN + plen;
	}
	memmove(t->rbuf, t->rbuf + off, t->rlen - off);
	t->rlen -= off;
	return 0;
}

void transport_drop(struct transport *t, uint64_t now_ns, const char *why)
{
	if (t->fd >= 0)
		disconnect(t, now_ns, why);
}

void transport_pump(struct transport *t, uint64_t now_ns)
{
	if (t->fd < 0)
		return;
	if (!fd_is(t->fd, &t->id)) {
		/* the program closed our socket (a daemon closing every
		 * descriptor) and may have reused the number */
		disconnect(t, now_ns, "descriptor closed by the program");
		return;
	}
	for (;;) {
		ssize_t r = recv(t->fd, t->rbuf + t->rlen,
				 sizeof t->rbuf - t->rlen, MSG_DONTWAIT);
		if (r > 0) {
			t->rlen += (size_t)r;
			if (take_frames(t) < 0) {
				disconnect(t, now_ns, "malformed control "
						      "frame");
				return;
			}
			if (t->fd < 0)
				return;
			continue;
		}
		if (r == 0) {
			disconnect(t, now_ns, "closed by the collector");
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			disconnect(t, now_ns, strerror(errno));
			return;
		}
		break;
	}
	while (t->off < t->len) {
		ssize_t w = send(t->fd, t->buf + t->off, t->len - t->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			t->off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		disconnect(t, now_ns, w < 0 ? strerror(errno) : "short send");
		return;
	}
	retire_sent(t);
}
