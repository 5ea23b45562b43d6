/*
 * control.c - see control.h: the own state and a command's override, and
 * arming or disarming sampling to match. Agent thread, except
 * control_init (constructor) and control_after_fork_child (fork child,
 * one thread).
 */
#include "control.h"
#include "sample/heap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "sample/cpuclock.h"
#include "base/log.h"
#include "sample/threadnames.h"
#include "pyprof/defaults.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"
#include "base/sampler.h"
#include "sample/threads.h"
#include "base/tid.h"
#include "sample/wall.h"
#include "signal/sig_heap.h"
#include "signal/sig_toggle.h"
#include "signal/sig_waits.h"

static struct {
	const struct config *cfg;
	struct sampling_settings own; /* from the environment          */
	int own_on;		      /* PYPROF_START, toggle, hard stop */
	int cmd_on;		      /* a CTL_START holds               */
	struct sampling_settings cmd;
	uint64_t lease_end_ns; /* 0: until stopped                */
	int ready, finalized;

	int on;			      /* armed (atomic for readers)      */
	struct sampling_settings cur; /* what is armed                   */
	uint64_t since_ns;	      /* when it was last armed/disarmed */
	unsigned long runs_at_start;  /* sampler.n_periods when armed    */
	uint64_t cpu_at_start;	      /* application CPU when armed      */
	/* CPU time and handler runs of the sessions at the own period, for
	 * BYE's achieved period */
	uint64_t own_cpu, own_runs;

	unsigned toggles_seen;
	int taken_said; /* the program took the signal     */
	int tid_done;
	char toggle_name[16];
} cs;

/* The application's CPU time: the process's, less this (agent) thread's
 * and the CPU-clock sampler's. */
static uint64_t app_cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID) -
	       clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpuclock_cpu_ns();
}

int sampling_is_on(void)
{
	return __atomic_load_n(&cs.on, __ATOMIC_RELAXED);
}

int sampling_is_on_sigsafe(void)
{
	return sampling_is_on();
}

/* Which source samples CPU time, and what it counts: once per start. */
static void log_source(unsigned hz)
{
	if (threads_using_clock())
		plog_info("sampling at %u Hz from the threads' CPU clocks "
			  "(user and system time; no signal), %d thread(s)",
			  hz, threads_armed());
	else if (threads_using_perf())
		plog_info("sampling at %u Hz with perf_event counters of user "
			  "time (time in the kernel is not sampled%s), %d "
			  "thread(s) armed",
			  hz, sampler.native ? ": native stacks need a signal" : "",
			  threads_armed());
	else
		plog_info("sampling at %u Hz with CPU timers (user and "
			  "system time), %d thread(s) armed",
			  hz, threads_armed());
}

int sampling_start(const struct sampling_settings *s)
{
	if (cs.on)
		return -EALREADY;
	if (!cs.tid_done) {
		cs.tid_done = 1;
		if (tid_init() < 0)
			plog_info("cannot map thread idents to tids: thread "
				  "names and on-CPU state may be missing "
				  "before Python 3.11");
	}
	/* Read by the handler and the wall sampler without a lock: written
	 * before the first timer is armed (a system call orders it). */
	sampler.period_ns = s->period_ns;
	threadnames_start();
	cs.cur = *s;
	cs.cpu_at_start = app_cpu_ns();
	cs.runs_at_start = __atomic_load_n(&sampler.n_periods,
					   __ATOMIC_RELAXED);
	cs.since_ns = clock_ns(CLOCK_MONOTONIC);
	__atomic_store_n(&sampler.active, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&cs.on, 1, __ATOMIC_RELAXED);
	waits_set(s->waits_ns); /* records need sampler.active */
	if (s->heap_rate && heap_sampling_supported) {
		__atomic_store_n(&heap_sampling_rate, s->heap_rate,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&heap_sampling_on, 1, __ATOMIC_RELEASE);
		heap_sampling_started();
	}
	unsigned hz = (unsigned)(1000000000u / s->period_ns);
	if (s->mode == CONFIG_MODE_WALL) {
		int rc = wall_start();
		if (rc < 0)
			plog_error("cannot start the wall-clock sampler: %s",
				   strerror(-rc));
		plog_info("wall-clock sampling at %u Hz", hz);
		return 0;
	}
	threads_start(cs.cfg->cpu_source);
	if (threads_clock_thread()) {
		int rc = cpuclock_start();
		if (rc < 0)
			plog_error("cannot start the CPU clock sampler: %s",
				   strerror(-rc));
		else
			threads_await_opened();
	}
	log_source(hz);
	return 0;
}

void sampling_stop(void)
{
	if (!cs.on)
		return;
	waits_set(0);
	__atomic_store_n(&heap_sampling_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&sampler.active, 0, __ATOMIC_RELEASE);
	if (cs.cur.mode == CONFIG_MODE_WALL) {
		wall_stop();
	} else {
		threads_stop_sigsafe();
		cpuclock_stop();
	}
	if (cs.cur.period_ns == cs.own.period_ns) {
		cs.own_cpu += app_cpu_ns() - cs.cpu_at_start;
		cs.own_runs += __atomic_load_n(&sampler.n_periods,
					       __ATOMIC_RELAXED) -
			       cs.runs_at_start;
	}
	__atomic_store_n(&cs.on, 0, __ATOMIC_RELAXED);
	cs.since_ns = clock_ns(CLOCK_MONOTONIC);
	/* HELLO on a reconnection says the process's own rate */
	sampler.period_ns = cs.own.period_ns;
	plog_info("sampling stopped");
}

/* Whether (and how) sampling should run now. */
static const struct sampling_settings *wanted(void)
{
	if (!cs.ready || cs.finalized)
		return NULL;
	if (cs.cmd_on)
		return &cs.cmd;
	return cs.own_on ? &cs.own : NULL;
}

static int same(const struct sampling_settings *a,
		const struct sampling_settings *b)
{
	return a->mode == b->mode && a->period_ns == b->period_ns &&
	       a->heap_rate == b->heap_rate && a->native == b->native;
}

/* Arms, disarms or re-arms to match wanted(). Waits alone (not in
 * same()) switch without re-arming the timers: a request for block and
 * mutex profiles joins a CPU session without a gap in its samples. */
static void apply(void)
{
	const struct sampling_settings *w = wanted();
	if (cs.on && (!w || !same(w, &cs.cur)))
		sampling_stop();
	if (w && !cs.on) {
		sampling_start(w);
	} else if (w && cs.cur.waits_ns != w->waits_ns) {
		cs.cur.waits_ns = w->waits_ns;
		waits_set(w->waits_ns);
	}
}

void control_init(const struct config *c)
{
	memset(&cs, 0, sizeof cs);
	cs.cfg = c;
	cs.own.mode = c->mode;
	cs.own.period_ns = 1000000000ull / (uint64_t)c->hz;
	cs.own.native = c->native;
	cs.own.heap_rate = c->heap_rate;
	cs.own.waits_ns = c->waits_ns;
	cs.own_on = c->start;
	if (c->toggle_sig) {
		int sig = c->toggle_sig;
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev)
			snprintf(cs.toggle_name, sizeof cs.toggle_name,
				 "SIG%s", abbrev);
		else
			snprintf(cs.toggle_name, sizeof cs.toggle_name, "%d",
				 sig);
		int rc = control_toggle_install(sig);
		if (rc == -EBUSY)
			plog_always("PYPROF_TOGGLE_SIGNAL=%s is not available: "
				    "the program already handles or ignores "
				    "that signal (it keeps it); pick another "
				    "one",
				    cs.toggle_name);
		else if (rc < 0)
			plog_always("PYPROF_TOGGLE_SIGNAL=%s is not available: "
				    "%s",
				    cs.toggle_name, strerror(-rc));
		else
			plog_info("%s toggles sampling", cs.toggle_name);
	}
}

void control_ready(void)
{
	cs.ready = 1;
	apply();
}

void control_finalized(void)
{
	cs.finalized = 1;
	apply();
}

void control_disconnected(void)
{
	cs.cmd_on = 0;
	apply();
}

int control_after_fork_child(void)
{
	cs.cmd_on = 0;
	cs.on = 0;
	cs.own_cpu = cs.own_runs = 0;
	cs.runs_at_start = 0;
	cs.cpu_at_start = app_cpu_ns();
	int heap_was = heap_sampling_on;
	heap_sampling_on = 0;
	waits_set(0); /* the override's, if any, was the parent's */
	sampler.period_ns = cs.own.period_ns;
	if (!cs.ready && heap_was && cs.own_on && !cs.finalized) {
		/* forked before the parent's agent saw the interpreter: its
		 * heap sampling, on from the start (no command can have come
		 * yet), goes on in the child; CPU sampling starts when the
		 * child's agent sees the interpreter */
		__atomic_store_n(&heap_sampling_on, 1, __ATOMIC_RELEASE);
		return 0;
	}
	if (!cs.own_on || cs.own.mode != CONFIG_MODE_CPU || !cs.ready ||
	    cs.finalized)
		return 0;
	/* the caller arms the one thread; the agent finds it armed */
	cs.on = 1;
	cs.cur = cs.own;
	waits_set(cs.own.waits_ns);
	if (cs.own.heap_rate && heap_sampling_supported)
		__atomic_store_n(&heap_sampling_on, 1, __ATOMIC_RELEASE);
	cs.since_ns = clock_ns(CLOCK_MONOTONIC);
	return 1;
}

/* ---- frames ---------------------------------------------------------- */

/* CPU time per timer period accounted for since sampling was armed (a
 * handler run stands for 1 + the expiries it missed: a thread that had
 * SIGPROF blocked is not under-sampled, its samples weigh more), in CPU
 * mode, when it is more than 10% off the period asked for (the kernel
 * tick caps CPU timers at 250 Hz here), else 0. What is left to lower it:
 * CPU time of threads that were never armed, and expiries lost (a
 * handler already running on that thread). */
static uint64_t achieved(uint64_t cpu, uint64_t runs, uint64_t want)
{
	if (runs < 20 || cpu < 100000000u)
		return 0; /* too little to tell */
	uint64_t got = cpu / runs;
	if (got * 10 < want * 11 && got * 10 > want * 9)
		return 0;
	return got;
}

uint64_t control_achieved_ns(void)
{
	uint64_t cpu = cs.own_cpu, runs = cs.own_runs;
	if (cs.own.mode != CONFIG_MODE_CPU)
		return 0;
	if (cs.on && cs.cur.period_ns == cs.own.period_ns) {
		cpu += app_cpu_ns() - cs.cpu_at_start;
		runs += __atomic_load_n(&sampler.n_periods,
					__ATOMIC_RELAXED) -
			cs.runs_at_start;
	}
	return achieved(cpu, runs, cs.own.period_ns);
}

/* The state fields every reply and CTL_STATE carry. */
static void put_state(struct wire_out *w, uint64_t now)
{
	const struct sampling_settings *s = cs.on ? &cs.cur : &cs.own;
	wire_put_tag_varint(w, WIRE_C_SAMPLING, (uint64_t)cs.on);
	uint64_t origin = WIRE_ORIGIN_OFF;
	if (cs.on)
		origin = cs.cmd_on ? WIRE_ORIGIN_COMMAND : WIRE_ORIGIN_OWN;
	uint64_t heap_rate = cs.on && heap_sampling_on ? s->heap_rate : 0;
	wire_put_tag_varint(w, WIRE_C_ORIGIN, origin);
	wire_put_tag_varint(w, WIRE_C_MODE, (uint64_t)s->mode);
	wire_put_tag_varint(w, WIRE_C_PERIOD_NS, s->period_ns);
	wire_put_tag_varint(w, WIRE_C_HEAP_RATE, heap_rate);
	wire_put_tag_varint(w, WIRE_C_NATIVE, s->native != CONFIG_NATIVE_OFF);
	wire_put_tag_varint(w, WIRE_C_WAITS_NS, waits_rate_now());
	if (cs.on && s->mode == CONFIG_MODE_CPU) {
		uint64_t a = achieved(
			app_cpu_ns() - cs.cpu_at_start,
			__atomic_load_n(&sampler.n_periods,
					__ATOMIC_RELAXED) -
				cs.runs_at_start,
			s->period_ns);
		if (a)
			wire_put_tag_varint(w, WIRE_C_ACHIEVED_NS, a);
	}
	wire_put_tag_varint(w, WIRE_C_SAMPLES,
			    __atomic_load_n(&sampler.n_samples, __ATOMIC_RELAXED));
	wire_put_tag_varint(w, WIRE_C_SIGNALS,
			    __atomic_load_n(&sampler.n_signals, __ATOMIC_RELAXED));
	wire_put_tag_varint(w, WIRE_C_ARMED, (uint64_t)threads_armed());
	if (cs.on && cs.cmd_on && cs.lease_end_ns)
		wire_put_tag_varint(w, WIRE_C_LEASE_LEFT_MS,
				    cs.lease_end_ns > now
					    ? (cs.lease_end_ns - now) / 1000000u
					    : 0);
	wire_put_tag_varint(w, WIRE_C_SINCE_NS, cs.since_ns);
}

size_t control_tick(uint64_t now_ns, uint8_t *frame, size_t cap)
{
	int changed = 0;
	unsigned t = __atomic_load_n(&control_toggles, __ATOMIC_ACQUIRE);
	if (t != cs.toggles_seen) {
		/* Each signal flips the state: an odd number of them since
		 * the last look flips it once. Off means off, whoever had
		 * turned it on; on means the own settings. */
		if ((t - cs.toggles_seen) & 1) {
			if (wanted()) {
				cs.cmd_on = 0;
				cs.own_on = 0;
			} else {
				cs.own_on = 1;
			}
			plog_info("%s: sampling %s", cs.toggle_name,
				  cs.own_on ? "on" : "off");
			changed = 1;
		}
		cs.toggles_seen = t;
	}
	if (!cs.taken_said &&
	    __atomic_load_n(&control_toggle_taken, __ATOMIC_ACQUIRE)) {
		cs.taken_said = 1;
		plog_always("PYPROF_TOGGLE_SIGNAL=%s is no longer available: "
			    "the program installed its own disposition for "
			    "that signal (it keeps it)",
			    cs.toggle_name);
	}
	if (cs.cmd_on && cs.lease_end_ns && now_ns >= cs.lease_end_ns) {
		cs.cmd_on = 0;
		changed = 1;
		plog_info("the collector's request ran out");
	}
	int was_on = cs.on;
	apply();
	if (!frame || (!changed && was_on == cs.on))
		return 0;
	struct wire_out w = wire_tagged_begin(frame, cap);
	put_state(&w, now_ns);
	return wire_tagged_end(frame, &w, WIRE_CTL_STATE);
}

int control_next_ms(uint64_t now_ns, int max_ms)
{
	if (!cs.cmd_on || !cs.lease_end_ns)
		return max_ms;
	if (cs.lease_end_ns <= now_ns)
		return 0;
	uint64_t ms = (cs.lease_end_ns - now_ns + 999999u) / 1000000u;
	return ms < (uint64_t)max_ms ? (int)ms : max_ms;
}

/* The fields of a command; absent ones stay as the caller set them. */
struct cmd {
	uint64_t req, mode, period_ns, heap_rate, native, lease_ms, hard;
	uint64_t waits_ns;
	int has_mode, has_period, has_heap, has_native, has_waits;
};

static void cmd_field(void *ctx, uint64_t tag, uint64_t v)
{
	struct cmd *c = ctx;
	switch (tag) {
	case WIRE_C_REQ:
		c->req = v;
		break;
	case WIRE_C_MODE:
		c->mode = v;
		c->has_mode = 1;
		break;
	case WIRE_C_PERIOD_NS:
		c->period_ns = v;
		c->has_period = 1;
		break;
	case WIRE_C_HEAP_RATE:
		c->heap_rate = v;
		c->has_heap = 1;
		break;
	case WIRE_C_NATIVE:
		c->native = v;
		c->has_native = 1;
		break;
	case WIRE_C_LEASE_MS:
		c->lease_ms = v;
		break;
	case WIRE_C_WAITS_NS:
		c->waits_ns = v;
		c->has_waits = 1;
		break;
	case WIRE_C_HARD:
		c->hard = v;
		break;
	default:
		break; /* unknown tags are skipped */
	}
}

/* No byte fields in commands yet: any is skipped. */
static int parse_cmd(const uint8_t *p, size_t len, struct cmd *c)
{
	return wire_fields_varints(p, len, WIRE_MAX_CTL_PAYLOAD, cmd_field, c);
}

/* Appends "; " and the note to msg. */
static void note(char *msg, size_t cap, const char *what)
{
	size_t n = strlen(msg);
	snprintf(msg + n, cap - n, "%s%s", n ? "; " : "", what);
}

static int on_start(const struct cmd *c, uint64_t now, char *msg,
		    size_t cap)
{
	struct sampling_settings s = cs.own;
	int status = WIRE_CTL_OK;

	if (cs.finalized) {
		note(msg, cap, "the interpreter has finalized");
		return WIRE_CTL_REFUSED;
	}
	if (c->has_period) {
		if (c->period_ns < 1000000000ull / PYPROF_MAX_HZ ||
		    c->period_ns > 1000000000ull) {
			note(msg, cap, "rate out of range (1 to 10000 Hz)");
			return WIRE_CTL_REFUSED;
		}
		s.period_ns = c->period_ns;
	}
	/* One process, one mode: the collector keeps one sample type per
	 * process (its HELLO said which). */
	if (c->has_mode && c->mode != (uint64_t)cs.own.mode) {
		note(msg, cap,
		     cs.own.mode == CONFIG_MODE_WALL
			     ? "this process samples in wall mode, set as "
			       "pyprof started in it (PYPROF_MODE, or the "
			       "first attach's --mode), not cpu"
			     : "this process samples in cpu mode, set as "
			       "pyprof started in it (PYPROF_MODE, or the "
			       "first attach's --mode), not wall");
		status = WIRE_CTL_PARTIAL;
	}
	/* libunwind and every thread's preparation are decided at start-up
	 * (native.h); native stacks cannot be added later. */
	if (c->has_native && c->native && cs.own.native == CONFIG_NATIVE_OFF) {
		note(msg, cap, "native stacks need PYPROF_NATIVE=1 (or the "
			       "first attach's --native) as pyprof starts "
			       "in the process");
		status = WIRE_CTL_PARTIAL;
	}
	if (c->has_heap && c->heap_rate) {
		if (heap_sampling_supported) {
			s.heap_rate = c->heap_rate;
		} else {
			note(msg, cap, "heap sampling is not available in this "
				       "build");
			status = WIRE_CTL_PARTIAL;
		}
	}
	if (c->has_waits && c->waits_ns) {
		if (c->waits_ns > 1000000000ull) {
			note(msg, cap, "waits rate out of range (1 ns to 1 s)");
			return WIRE_CTL_REFUSED;
		}
		if (waits_supported()) {
			s.waits_ns = c->waits_ns;
		} else {
			note(msg, cap, "block and mutex profiles need Python "
				       "3.8 or later");
			status = WIRE_CTL_PARTIAL;
		}
	}
	if (c->lease_ms > 366ull * 86400 * 1000) { /* would overflow ns */
		note(msg, cap, "lease longer than a year");
		return WIRE_CTL_REFUSED;
	}
	cs.cmd = s;
	cs.cmd_on = 1;
	cs.lease_end_ns = c->lease_ms ? now + c->lease_ms * 1000000ull : 0;
	apply();
	return status;
}

int control_command(unsigned type, const uint8_t *p, size_t len,
		    uint64_t now_ns, uint8_t *reply, size_t cap,
		    int *flush_first)
{
	struct cmd c;
	char msg[256] = "";
	int status = WIRE_CTL_OK;

	memset(&c, 0, sizeof c);
	*flush_first = 0;
	if (parse_cmd(p, len, &c) < 0)
		return -EPROTO;
	switch (type) {
	case WIRE_CTL_START:
		status = on_start(&c, now_ns, msg, sizeof msg);
		break;
	case WIRE_CTL_STOP:
		cs.cmd_on = 0;
		if (c.hard)
			cs.own_on = 0;
		apply();
		*flush_first = 1;
		break;
	case WIRE_CTL_FLUSH:
		*flush_first = 1;
		break;
	case WIRE_CTL_STATUS:
		break;
	default:
		return -EPROTO;
	}
	struct wire_out w = wire_tagged_begin(reply, cap);
	wire_put_tag_varint(&w, WIRE_C_REQ, c.req);
	wire_put_tag_varint(&w, WIRE_C_STATUS, (uint64_t)status);
	if (msg[0])
		wire_put_tag_str(&w, WIRE_C_MSG, msg);
	put_state(&w, now_ns);
	return (int)wire_tagged_end(reply, &w, WIRE_CTL_REPLY);
}
