/*
 * taskstate.c - see taskstate.h. A few kept descriptors of
 * /proc/self/task/TID/syscall, replaced least recently used first.
 */
#include "taskstate.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fdutil.h"

struct slot {
	int tid; /* 0 = free */
	int fd;
	struct fd_id id; /* what fd named when opened */
	unsigned long used;
};

static struct slot slots[TASKSTATE_FDS];
static unsigned long uses;

/* Forgets s; closes its descriptor only if it still names our file (a
 * program that closed it may have reused the number). */
static void slot_drop(struct slot *s)
{
	if (s->tid)
		fd_close_own(s->fd, &s->id);
	s->tid = 0;
	s->fd = -1;
}

static struct slot *slot_open(int tid)
{
	struct slot *s = &slots[0];
	for (int i = 1; i < TASKSTATE_FDS; i++)
		if (!slots[i].tid || (s->tid && slots[i].used < s->used))
			s = &slots[i];
	slot_drop(s);
	char path[48];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
	int fd = fd_open_parked(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	if (fd_id_get(fd, &s->id) < 0) {
		close(fd);
		return NULL;
	}
	s->tid = tid;
	s->fd = fd;
	return s;
}

/* The state a syscall line says: "running", or "NR ARGS... SP PC" with
 * NR -1 outside a system call. */
static enum taskstate parse_state(const char *buf, int n)
{
	if (n >= 7 && memcmp(buf, "running", 7) == 0)
		return TASKSTATE_RUNNABLE;
	if (n < 2 || !(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
		return TASKSTATE_UNKNOWN;
	long nr = strtol(buf, NULL, 10);
#ifdef SYS_futex_waitv
	if (nr == SYS_futex_waitv)
		return TASKSTATE_FUTEX;
#endif
	return nr == SYS_futex ? TASKSTATE_FUTEX : TASKSTATE_BLOCKED;
}

/* tid's state through slot s. */
static enum taskstate slot_read(struct slot *s)
{
	char buf[64]; /* the number and the first argument suffice */
	if (!fd_is(s->fd, &s->id))
		return TASKSTATE_UNKNOWN;
	ssize_t n = pread(s->fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return TASKSTATE_UNKNOWN;
	buf[n] = 0;
	return parse_state(buf, (int)n);
}

enum taskstate taskstate_get(int tid)
{
	struct slot *s = NULL;
	for (int i = 0; i < TASKSTATE_FDS; i++)
		if (slots[i].tid == tid)
			s = &slots[i];
	enum taskstate st = s ? slot_read(s) : TASKSTATE_UNKNOWN;
	if (st == TASKSTATE_UNKNOWN) { /* not kept, gone, or its number
					* taken: open it again */
		if (s)
			slot_drop(s);
		s = slot_open(tid);
		st = s ? slot_read(s) : TASKSTATE_UNKNOWN;
	}
	if (s)
		s->used = ++uses;
	return st;
}

void taskstate_close_all(void)
{
	for (int i = 0; i < TASKSTATE_FDS; i++)
		slot_drop(&slots[i]);
}

void taskstate_after_fork_child(void)
{
	taskstate_close_all();
}
