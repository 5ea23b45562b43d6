/*
 * loop.c - epoll event loop and timers (see loop.h).
 *
 * Fd registrations live in a table indexed by fd number, so dispatch is an
 * array lookup; epoll's user data carries fd | generation << 32 and an
 * event whose generation no longer matches (the fd was removed, maybe
 * reused) is dropped. Timers sit in a binary min-heap by deadline; each
 * timer knows its heap slot, so cancelling one is O(log n). Expected load:
 * tens to thousands of fds, a handful of timers now, one per HTTP client
 * later.
 *
 * Runs on the collector's one thread.
 */
#include "common/loop.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/grow.h"

#define LOOP_MAX_EVENTS 128

struct loop_fd {
	loop_fd_fn fn;
	void *arg;
	uint32_t gen; /* bumped on every add; 0 never used */
	int used;
};

struct loop_timer {
	uint64_t deadline_ns;
	uint64_t interval_ns;
	loop_timer_fn fn;
	void *arg;
	size_t heap_idx; /* slot in loop->heap while pending */
	int firing;	 /* its callback is running */
	int cancelled;	 /* loop_del_timer was called while firing */
};

struct loop {
	int epfd;
	int stop;
	struct loop_fd *fds;
	size_t fds_cap;
	uint32_t next_gen;
	struct loop_timer **heap;
	size_t n_heap, heap_cap;
};

uint64_t loop_now_ns(void)
{
	return now_mono_ns();
}

struct loop *loop_new(void)
{
	struct loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int e = errno;
		free(loop);
		errno = e;
		return NULL;
	}
	loop->next_gen = 1;
	return loop;
}

void loop_free(struct loop *loop)
{
	if (!loop)
		return;
	for (size_t i = 0; i < loop->n_heap; i++)
		free(loop->heap[i]);
	free(loop->heap);
	free(loop->fds);
	close(loop->epfd);
	free(loop);
}

/* ---- fds ---------------------------------------------------------------- */

static uint64_t fd_key(int fd, uint32_t gen)
{
	return (uint64_t)(uint32_t)fd | (uint64_t)gen << 32;
}

int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn,
		void *arg)
{
	struct epoll_event ev = { 0 };
	struct loop_fd *slot;
	assert(fd >= 0 && fn);
	if ((size_t)fd >= loop->fds_cap) {
		size_t cap = loop->fds_cap ? loop->fds_cap : 64;
		while (cap <= (size_t)fd)
			cap *= 2;
		struct loop_fd *fds = realloc(loop->fds, cap * sizeof(*fds));
		if (!fds)
			return -ENOMEM;
		for (size_t i = loop->fds_cap; i < cap; i++)
			fds[i] = (struct loop_fd){ 0 };
		loop->fds = fds;
		loop->fds_cap = cap;
	}
	slot = &loop->fds[fd];
	if (slot->used)
		return -EEXIST;
	if (++loop->next_gen == 0)
		loop->next_gen = 1;
	ev.events = events;
	ev.data.u64 = fd_key(fd, loop->next_gen);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	*slot = (struct loop_fd){ fn, arg, loop->next_gen, 1 };
	return 0;
}

int loop_mod_fd(struct loop *loop, int fd, uint32_t events)
{
	struct epoll_event ev = { 0 };
	if (fd < 0 || (size_t)fd >= loop->fds_cap || !loop->fds[fd].used)
		return -ENOENT;
	ev.events = events;
	ev.data.u64 = fd_key(fd, loop->fds[fd].gen);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

int loop_del_fd(struct loop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->fds_cap || !loop->fds[fd].used)
		return -ENOENT;
	/* Fails only if fd is already closed, and then epoll forgot it. */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	loop->fds[fd].used = 0;
	loop->fds[fd].gen = 0;
	return 0;
}

/* ---- timers: a binary min-heap on deadline_ns ---------------------------- */

static void heap_set(struct loop *loop, size_t i, struct loop_timer *t)
{
	loop->heap[i] = t;
	t->heap_idx = i;
}

static void heap_up(struct loop *loop, size_t i)
{
	struct loop_timer *t = loop->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (loop->heap[parent]->deadline_ns <= t->deadline_ns)
			break;
		heap_set(loop, i, loop->heap[parent]);
		i = parent;
	}
	heap_set(loop, i, t);
}

static void heap_down(struct loop *loop, size_t i)
{
	struct loop_timer *t = loop->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= loop->n_heap)
			break;
		if (child + 1 < loop->n_heap &&
		    loop->heap[child + 1]->deadline_ns <
			    loop->heap[child]->deadline_ns)
			child++;
		if (t->deadline_ns <= loop->heap[child]->deadline_ns)
			break;
		heap_set(loop, i, loop->heap[child]);
		i = child;
	}
	heap_set(loop, i, t);
}

static int heap_push(struct loop *loop, struct loop_timer *t)
{
	if (grow_array(&loop->heap, &loop->heap_cap, loop->n_heap + 1,
		       sizeof(*loop->heap), 16) < 0)
		return -ENOMEM;
	heap_set(loop, loop->n_heap++, t);
	heap_up(loop, loop->n_heap - 1);
	return 0;
}

static void heap_remove(struct loop *loop, struct loop_timer *t)
{
	size_t i = t->heap_idx;
	assert(i < loop->n_heap && loop->heap[i] == t);
	struct loop_timer *last = loop->heap[--loop->n_heap];
	if (last != t) {
		heap_set(loop, i, last);
		heap_down(loop, i);
		heap_up(loop, last->heap_idx);
	}
}

struct loop_timer *loop_add_timer(struct loop *loop, uint64_t delay_ns,
				  uint64_t interval_ns, loop_timer_fn fn,
				  void *arg)
{
	struct loop_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->deadline_ns = loop_now_ns() + delay_ns;
	t->interval_ns = interval_ns;
	t->fn = fn;
	t->arg = arg;
	if (heap_push(loop, t) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

void loop_del_timer(struct loop *loop, struct loop_timer *t)
{
	if (!t)
		return;
	if (t->firing) {
		t->cancelled = 1; /* run_timers frees it after the callback */
		return;
	}
	heap_remove(loop, t);
	free(t);
}

static void run_timers(struct loop *loop)
{
	uint64_t now = loop_now_ns();
	while (loop->n_heap > 0 && loop->heap[0]->deadline_ns <= now) {
		struct loop_timer *t = loop->heap[0];
		heap_remove(loop, t);
		t->firing = 1;
		t->fn(loop, t, t->arg);
		t->firing = 0;
		if (t->cancelled || t->interval_ns == 0) {
			free(t);
			continue;
		}
		/* Keep the period's phase, but never queue a burst of
		 * catch-up calls after a stall. */
		t->deadline_ns += t->interval_ns;
		if (t->deadline_ns <= now)
			t->deadline_ns = now + t->interval_ns;
		if (heap_push(loop, t) < 0)
			free(t); /* cannot happen: the slot was just freed */
	}
}

/* Milliseconds epoll_wait may sleep: until the next timer (rounded up, so
 * we never wake early and spin), or forever. */
static int wait_ms(struct loop *loop)
{
	if (loop->n_heap == 0)
		return -1;
	uint64_t now = loop_now_ns(), due = loop->heap[0]->deadline_ns;
	if (due <= now)
		return 0;
	uint64_t ms = (due - now + 999999) / 1000000;
	return ms > 60000 ? 60000 : (int)ms;
}

int loop_run(struct loop *loop)
{
	struct epoll_event evs[LOOP_MAX_EVENTS];
	int err = 0;

	loop->stop = 0;
	while (!loop->stop) {
		int n = epoll_wait(loop->epfd, evs, LOOP_MAX_EVENTS,
				   wait_ms(loop));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		for (int i = 0; i < n; i++) {
			int fd = (int)(uint32_t)evs[i].data.u64;
			uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
			struct loop_fd *slot = &loop->fds[fd];
			/* Removed (and maybe re-added) since epoll_wait. */
			if (!slot->used || slot->gen != gen)
				continue;
			slot->fn(loop, fd, evs[i].events, slot->arg);
		}
		run_timers(loop);
	}
out:
	return err;
}

void loop_stop(struct loop *loop)
{
	loop->stop = 1;
}
