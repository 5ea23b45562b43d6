/*
 * test_loop.c - the event loop (collector/common/loop.h): fd callbacks, removal
 * during a round, one-shot and periodic timers, cancelling, stopping.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/loop.h"

struct state {
	int order[16];
	int n_order;
	int ticks;
	struct loop_timer *periodic;
	int pipes[2][2];
	int reads[2];
};

static void record(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct state *s = arg;
	(void)loop;
	(void)t;
	s->order[s->n_order] = s->n_order;
	s->n_order++;
}

static void on_tick(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct state *s = arg;
	if (++s->ticks == 3)
		loop_del_timer(loop, t); /* cancel itself from inside */
}

static void on_stop(struct loop *loop, struct loop_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	loop_stop(loop);
}

static int order_of[3];

static void mark(struct loop *loop, struct loop_timer *t, void *arg)
{
	static int n;
	(void)loop;
	(void)t;
	order_of[n++] = (int)(intptr_t)arg;
}

/* Reading end i: reads a byte, and removes the other pipe from the loop
 * (both are readable in the same round: the other must not be called). */
static void on_pipe(struct loop *loop, int fd, uint32_t events, void *arg)
{
	struct state *s = arg;
	char c;
	int i = fd == s->pipes[0][0] ? 0 : 1;
	(void)events;
	if (read(fd, &c, 1) == 1)
		s->reads[i]++;
	loop_del_fd(loop, s->pipes[1 - i][0]);
	loop_stop(loop);
}

int main(void)
{
	struct loop *loop = loop_new();
	struct state s;
	CHECK_OR_RETURN(loop != NULL, "0.1 loop_new", 1);
	memset(&s, 0, sizeof(s));

	/* 1: timers fire in deadline order, whatever the insertion order. */
	loop_add_timer(loop, 30000000, 0, mark, (void *)(intptr_t)3);
	loop_add_timer(loop, 10000000, 0, mark, (void *)(intptr_t)1);
	loop_add_timer(loop, 20000000, 0, mark, (void *)(intptr_t)2);
	loop_add_timer(loop, 40000000, 0, on_stop, NULL);
	uint64_t t0 = loop_now_ns();
	CHECK(loop_run(loop) == 0, "1.1 loop_run returns 0 after stop");
	CHECK(loop_now_ns() - t0 >= 40000000, "1.2 did not wake early");
	CHECK(order_of[0] == 1 && order_of[1] == 2 && order_of[2] == 3,
	      "1.3 timers in deadline order");

	/* 2: a periodic timer runs until it cancels itself; a cancelled
	 * timer never runs. */
	s.periodic = loop_add_timer(loop, 1000000, 5000000, on_tick, &s);
	struct loop_timer *never = loop_add_timer(loop, 2000000, 0, record,
						  &s);
	loop_del_timer(loop, never);
	loop_add_timer(loop, 50000000, 0, on_stop, NULL);
	loop_run(loop);
	CHECK(s.ticks == 3, "2.1 periodic timer ran 3 times then stopped");
	CHECK(s.n_order == 0, "2.2 cancelled timer never ran");

	/* 3: removing an fd inside a round drops its pending event. */
	CHECK_OR_RETURN(pipe(s.pipes[0]) == 0 && pipe(s.pipes[1]) == 0,
			"3.0 pipes", 1);
	loop_add_fd(loop, s.pipes[0][0], EPOLLIN, on_pipe, &s);
	loop_add_fd(loop, s.pipes[1][0], EPOLLIN, on_pipe, &s);
	CHECK(loop_add_fd(loop, s.pipes[1][0], EPOLLIN, on_pipe, &s) != 0,
	      "3.1 adding an fd twice is refused");
	if (write(s.pipes[0][1], "x", 1) != 1 ||
	    write(s.pipes[1][1], "y", 1) != 1)
		return 1;
	loop_run(loop);
	CHECK(s.reads[0] + s.reads[1] == 1,
	      "3.2 only one of two ready fds ran: the other was removed");
	CHECK(loop_del_fd(loop, s.pipes[0][0]) + loop_del_fd(loop,
							     s.pipes[1][0]) !=
		      0,
	      "3.3 removing an unknown fd is an error");
	for (int i = 0; i < 2; i++) {
		close(s.pipes[i][0]);
		close(s.pipes[i][1]);
	}
	/* A pending timer is freed with the loop (valgrind checks it). */
	loop_add_timer(loop, 1000000000, 0, record, &s);
	loop_free(loop);
	return check_summary();
}
