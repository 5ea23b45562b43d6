/*
 * agent.c - see agent.h. Everything here runs on the agent thread, except
 * agent_start/agent_stop (constructor, destructor) and the fork hook.
 */
#include "agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "native/cfi.h"
#include "cpython/pylife.h"
#include "control.h"
#include "sample/cpuclock.h"
#include "base/clock.h"
#include "base/guard.h"
#include "base/intern.h"
#include "base/log.h"
#include "native/modules.h"
#include "native/native.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"
#include "base/sampler.h"
#include "symbolize.h"
#include "sample/threads.h"
#include "transport.h"
#include "sampleframe.h"
#include "sample/wall.h"
#include "sample/threadnames.h"
#include "base/tid.h"
#include "lastthread.h"
#include "sample/heap.h"
#include "heapframe.h"
#include "sample/ownthread.h"
#include "signal/sig_heap.h"
#include "signal/sig_waits.h"

struct agent {
	const struct config *cfg;
	struct agent_info *info;
	pthread_t thread;
	int started;
	int wake_fd, wake_wr; /* the wake-up pipe's two ends          */
	struct fd_id wake_id; /* what they named when opened          */
	int stop;	      /* set by agent_stop (atomic)           */
	int pause;	      /* set by agent_pause (atomic): the
				      thread returns, its state kept      */
	int paused;	      /* agent_pause stopped the thread       */
	int unjoined;	      /* ... but could not wait for it        */
	struct intern in;
	struct symbolizer *sym;
	struct transport tr;
	int connected;	    /* to the collector, as last seen       */
	uint64_t start_ns;  /* when the agent's loop began (mono)   */
	int quiet_if_empty; /* agent_quiet_if_empty (atomic)        */
	int running;	    /* agent state usable (atomic)          */
	int finalized;	    /* interpreter went away after init     */

	unsigned start_delay_ms; /* fork child: wait before starting     */

	/* PYPROF_NATIVE (merge.h): the loaded objects */
	struct modules *mods;

	/* heap profiling (heap.h): the HEAP frames (heapframe.h) */
	struct heapframe heap;

	/* samples collectors wrote (CTL_WRITTEN, wire.h): the sum over the
	 * connections before this one, and this one's last count */
	uint64_t written_before, written_now;
};

static struct agent ag;

/* Serializes the agent's work (draining, naming, queueing) with the code
 * object death hook, which drains on an application thread. Never held
 * while waiting for anything but this lock; never taken in signal
 * context. */
static pthread_mutex_t ag_lock = PTHREAD_MUTEX_INITIALIZER;

/* The agent's wake-up pipe, high up and identified (fdutil.h): a pipe,
 * not an eventfd, because every eventfd has the same inode, so that one
 * the program made at the number of ours would pass for ours. Both ends
 * name the same pipe inode. Returns 0 or -1. */
static int wake_open(void)
{
	int p[2];
	ag.wake_fd = ag.wake_wr = -1;
	if (fd_pipe_high(p) < 0)
		return -1;
	if (fd_id_get(p[0], &ag.wake_id) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	ag.wake_fd = p[0];
	ag.wake_wr = p[1];
	return 0;
}

/* Closes what is still ours of the pipe. */
static void wake_close(void)
{
	if (ag.wake_fd >= 0)
		fd_close_own(ag.wake_fd, &ag.wake_id);
	if (ag.wake_wr >= 0)
		fd_close_own(ag.wake_wr, &ag.wake_id);
	ag.wake_fd = ag.wake_wr = -1;
}

static size_t build_hello(uint8_t *buf, size_t cap, uint32_t seq, void *arg)
{
	struct agent *a = arg;
	const struct agent_info *inf = a->info;
	struct wire_out w = transport_hello_begin(buf, cap);
	wire_put_tag_varint(&w, WIRE_H_START_UNIX_NS, inf->start_unix_ns);
	wire_put_tag_varint(&w, WIRE_H_START_MONO_NS, inf->start_mono_ns);
	wire_put_tag_varint(&w, WIRE_H_MODE, (uint64_t)a->cfg->mode);
	wire_put_tag_varint(&w, WIRE_H_PERIOD_NS, sampler.period_ns);
	wire_put_tag_varint(&w, WIRE_H_MAX_DEPTH, (uint64_t)a->cfg->max_depth);
	wire_put_tag_bytes(&w, WIRE_H_PYVERSION, inf->pyversion,
			   strlen(inf->pyversion));
	wire_put_tag_bytes(&w, WIRE_H_EXE, inf->exe, strlen(inf->exe));
	wire_put_tag_bytes(&w, WIRE_H_COMM, inf->comm, strlen(inf->comm));
	size_t budget = cap / 2; /* keep HELLO well under its buffer */
	for (size_t off = 0, n = 0; off < inf->args_len && n < WIRE_MAX_ARGS;
	     n++) {
		size_t l = strlen(inf->args + off);
		if ((size_t)(w.p - buf) + l > budget)
			break;
		wire_put_tag_bytes(&w, WIRE_H_ARG, inf->args + off, l);
		off += l + 1;
	}
	wire_put_tag_varint(&w, WIRE_H_CONN_SEQ, seq);
	wire_put_tag_varint(&w, WIRE_H_UID, (uint64_t)getuid());
	wire_put_tag_varint(&w, WIRE_H_SAMPLING, (uint64_t)sampling_is_on());
	/* what collectors wrote so far; sent from the first connection on,
	 * which also asks for CTL_WRITTEN */
	wire_put_tag_varint(&w, WIRE_H_WRITTEN, a->written_before + a->written_now);
	return w.ok ? wire_end_frame(buf, &w, WIRE_HELLO) : 0;
}

/* The ring drained and everything sent but the samples still held for
 * their threads' names (all of them with force). */
static void drain(int force)
{
	if (ag.mods)
		modules_refresh(ag.mods); /* objects dlopen'd since */
	ring_drain(&sampler.ring, sampleframe_on_record, NULL);
	sampleframe_release_held(force);
	sampleframe_flush();
	if (ag.heap.buf)
		heapframe_flush(&ag.heap);
	sampleframe_put_lost();
	transport_put_defs(&ag.tr, &ag.in);
}

static void put_bye(void)
{
	uint8_t buf[128];
	struct wire_out w = wire_tagged_begin(buf, sizeof buf);
	struct sampleframe_stats st;
	sampleframe_stats(&st);
	struct wire_bye b = {
		.samples = st.n_samples,
		.lost = st.lost_total,
		.end_mono_ns = mono_ns(),
		.handler_n = __atomic_load_n(&sampler.n_handler_runs,
					     __ATOMIC_RELAXED),
		.handler_ns = __atomic_load_n(&sampler.n_handler_ns,
					      __ATOMIC_RELAXED),
		.faults = __atomic_load_n(&guard_faults, __ATOMIC_RELAXED),
		.achieved_ns = control_achieved_ns(),
		.native_unmerged = st.n_unmerged,
		.cpu_source = (uint64_t)threads_source(),
		.has_native = sampler.native != 0,
	};
	wire_put_bye(&w, &b);
	transport_put_frame(&ag.tr, NULL, buf, &w, WIRE_BYE);
}

/* A new connection: the last one's CTL_WRITTEN count, sent in its HELLO,
 * joins the sum. */
static void new_connection(void)
{
	ag.written_before += ag.written_now;
	ag.written_now = 0;
}

/* CTL_WRITTEN's field: a running count for this connection. */
static void written_field(void *ctx, uint64_t tag, uint64_t v)
{
	(void)ctx;
	if (tag == WIRE_C_WRITTEN && v > ag.written_now)
		ag.written_now = v;
}

/* A command from the collector (transport.h's on_frame, inside
 * transport_pump, ag_lock held): apply it, then reply; for STOP and FLUSH
 * after every sample taken before, so that the collector has them all
 * when it reads the reply. */
static void on_ctl_frame(unsigned type, const uint8_t *p, size_t len,
			 void *arg)
{
	(void)arg;
	uint8_t reply[WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD];
	int flush_first;
	uint64_t now = mono_ns();
	if (type == WIRE_CTL_WRITTEN) {
		/* a running count for this connection; no reply */
		if (wire_fields_varints(p, len, WIRE_MAX_CTL_PAYLOAD,
					written_field, NULL) < 0)
			transport_drop(&ag.tr, now, "malformed control frame");
		return;
	}
	int n = control_command(type, p, len, now, reply, sizeof reply,
				&flush_first);
	if (n < 0) {
		transport_drop(&ag.tr, now, "malformed control frame");
		return;
	}
	if (flush_first)
		drain(1);
	if (n > 0)
		transport_put_ctl(&ag.tr, reply, (size_t)n);
}

/* How long the agent may sleep: the tick while sampling (the ring must
 * be drained), while there is something to send, or before the
 * interpreter is up; longer while dormant, where only the socket, the
 * wake-up pipe and a lease can need it. */
static int poll_ms(uint64_t now, int initialized)
{
	int ms = AGENT_TICK_MS;
	if (initialized && !sampling_is_on() && !transport_pending(&ag.tr))
		ms = AGENT_IDLE_MS;
	else if (!initialized && !ag.finalized &&
		 now - ag.start_ns < AGENT_START_FAST_MS * 1000000ull)
		/* a program of 10 ms is half over after one tick: look for
		 * the interpreter often during its first moments, so that
		 * sampling starts with it */
		ms = AGENT_START_POLL_MS;
	return control_next_ms(now, ms);
}

/* At exit: sends what is left, if a collector takes it. Without a
 * connection it tries once more (the process may have ended before its
 * first attempt) and, if none listens, returns at once: what was sampled
 * is dropped and the log says how much. With one, it waits while the
 * collector takes bytes: until everything is sent, the collector has taken
 * nothing for AGENT_EXIT_STALL_MS, or AGENT_EXIT_WAIT_MS have passed. */
static void exit_flush(void)
{
	uint64_t start = mono_ns(), last_progress = start;
	size_t pending = transport_pending(&ag.tr);

	ag.tr.next_try_ns = 0;
	for (;;) {
		uint64_t now = mono_ns();
		if (ag.tr.fd < 0) {
			/* one attempt: no waiting for a collector */
			if (transport_connect(&ag.tr, now, build_hello, &ag,
					      &ag.in) <= 0) {
				/* a refusal (tr.refused) said so already */
				if (ag.tr.refused)
					return;
				struct sampleframe_stats st;
				sampleframe_stats(&st);
				if (ag.tr.conn_seq == 0)
					plog_info("no collector at %s: exiting "
						  "at once, %lu samples "
						  "dropped",
						  ag.tr.path, st.n_samples);
				else
					plog_info("collector gone at exit: %zu "
						  "bytes of samples dropped",
						  transport_pending(&ag.tr));
				return;
			}
			new_connection();
			ag.tr.next_try_ns = UINT64_MAX;
		}
		transport_pump(&ag.tr, now);
		size_t p = transport_pending(&ag.tr);
		if (ag.tr.fd >= 0 && !p)
			break;
		if (p < pending) {
			pending = p;
			last_progress = now;
		}
		if (ag.tr.fd >= 0 &&
		    (now - last_progress >=
			     AGENT_EXIT_STALL_MS * 1000000ull ||
		     now - start >= AGENT_EXIT_WAIT_MS * 1000000ull))
			break;
		if (ag.tr.fd >= 0) {
			struct pollfd pf = { ag.tr.fd, POLLOUT, 0 };
			poll(&pf, 1, 10);
		}
	}
	plog_debug("exit: %.1f ms sending what was left",
		   (double)(mono_ns() - start) / 1e6);
}

/* Whether the ring holds samples not drained yet. */
static int ring_pending(void)
{
	return __atomic_load_n(&sampler.ring.head, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&sampler.ring.tail, __ATOMIC_ACQUIRE);
}

/* The state of the agent's loop between ticks. */
struct loop {
	uint64_t last_scan, last_gone_check;
	int was_initialized; /* the interpreter was seen up */
	int saw_interp;	     /* an interpreter state was seen at all */
	int gone;	     /* the program's last thread has ended */
};

/* Empties the wake-up pipe. */
static void read_wake(void)
{
	char v[64];
	ssize_t r = read(ag.wake_fd, v, sizeof v);
	(void)r;
}

/* The wake-up pipe, checked before the agent sleeps on it: one end the
 * program closed (a daemon's closerange) is never read or written again,
 * since the number may now be the program's; the pipe is made anew. */
static void check_wake(void)
{
	if (ag.wake_fd >= 0 && fd_is(ag.wake_fd, &ag.wake_id) &&
	    fd_is(ag.wake_wr, &ag.wake_id))
		return;
	int was = ag.wake_fd >= 0;
	wake_close();
	if (wake_open() == 0 && was)
		plog_info("the program closed the agent's wake-up pipe: "
			  "opened again");
}

/* Sleeps until the next tick, a wake-up, or the collector's socket is
 * readable (or writable, with something to send). */
static void wait_tick(const struct loop *l)
{
	check_wake();
	struct pollfd p[2] = { { ag.wake_fd, POLLIN, 0 }, { ag.tr.fd, POLLIN, 0 } };
	if (ag.tr.fd >= 0 && transport_pending(&ag.tr))
		p[1].events |= POLLOUT;
	poll(p, ag.tr.fd >= 0 ? 2 : 1,
	     poll_ms(mono_ns(), l->was_initialized && !ag.finalized));
	if (p[0].revents)
		read_wake();
}

/* Every AGENT_SCAN_MS: whether the program's last thread has ended. */
static int program_ended(struct loop *l, uint64_t now)
{
	if (now - l->last_gone_check < AGENT_SCAN_MS * 1000000ull)
		return 0;
	l->last_gone_check = now;
	if (!program_gone())
		return 0;
	plog_debug("the program's last thread has ended: finishing");
	return 1;
}

/* Unwind tables for the objects loaded since (PYPROF_NATIVE); under the
 * lock: fork must not find us inside dl_iterate_phdr (the child would
 * inherit the loader's lock taken). */
static void refresh_unwind_tables(void)
{
	if (!sampler.native)
		return;
	pthread_mutex_lock(&ag_lock);
	cfi_refresh();
	pthread_mutex_unlock(&ag_lock);
}

/* Follows the interpreter: once up, sampling may begin; once finalized,
 * it stops for good. */
static void follow_interpreter(struct loop *l)
{
	int init = sampler.is_initialized();
	if (!l->saw_interp && sampler.interp_head())
		l->saw_interp = 1; /* from early in Py_Initialize to late in
				    * Py_Finalize: python -c pass's 10 ms */
	if (ag.finalized)
		return;
	if (init && !l->was_initialized) {
		l->was_initialized = 1;
		plog_debug("interpreter seen up %.1f ms after the agent began",
			   (double)(mono_ns() - ag.start_ns) / 1e6);
		heap_python_started();
		waits_python_started();
		control_ready();
	} else if (!init && l->was_initialized) {
		ag.finalized = 1;
		control_finalized();
		plog_debug("interpreter finalized: sampling stopped");
	}
}

/* While sampling: the names thread (a fork child's starts here, once),
 * and every AGENT_SCAN_MS the program's threads. */
static void follow_threads(struct loop *l, uint64_t now)
{
	if (!sampling_is_on())
		return;
	threadnames_start();
	if (threads_clock_thread())
		cpuclock_start(); /* a fork child's starts here */
	if (now - l->last_scan >= AGENT_SCAN_MS * 1000000ull) {
		threads_scan();
		l->last_scan = now;
	}
}

/* The connection: a new one when it is time, what is queued sent, what
 * the collector said read (on_ctl_frame). */
static void keep_connected(uint64_t now)
{
	int conn = transport_connect(&ag.tr, now, build_hello, &ag, &ag.in);
	if (conn > 0)
		new_connection();
	else if (conn == -EPERM)
		control_finalized(); /* not to be heard: off for good */
	transport_pump(&ag.tr, now);
	if (ag.connected && ag.tr.fd < 0)
		control_disconnected(); /* its requests end with it */
	ag.connected = ag.tr.fd >= 0;
}

/* One tick's work, under the lock: control's timers and status, the
 * ring drained, a heap snapshot when due, the connection kept. */
static void tick(uint64_t now)
{
	uint8_t st[WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD];
	pthread_mutex_lock(&ag_lock);
	size_t stn = control_tick(now, st, sizeof st);
	threads_check_counters(); /* before the drain counts what was lost */
	drain(0);
	if (stn)
		transport_put_ctl(&ag.tr, st, stn);
	if (ag.heap.buf)
		heapframe_put_snapshot(&ag.heap, now, ag.cfg->heap_snapshot_s);
	keep_connected(now);
	pthread_mutex_unlock(&ag_lock);
}

/* The numbers of the run, in the log at exit. */
static void log_exit_stats(void)
{
	unsigned long runs = __atomic_load_n(&sampler.n_handler_runs,
					     __ATOMIC_RELAXED);
	unsigned long ns = __atomic_load_n(&sampler.n_handler_ns,
					   __ATOMIC_RELAXED);
	unsigned long n_code, n_unknown;
	struct sampleframe_stats st;
	sampleframe_stats(&st);
	symbolize_stats(ag.sym, &n_code, &n_unknown);
	plog_info("handler: %lu runs of %lu signals, %lu ns mean, %lu ns "
		  "median, %lu ns p90; %lu samples sent; %lu faulted reads; "
		  "%lu code objects named, %lu frames unknown",
		  runs, __atomic_load_n(&sampler.n_signals, __ATOMIC_RELAXED),
		  runs ? ns / runs : 0, sampler_handler_quantile(0.5),
		  sampler_handler_quantile(0.9), st.n_samples,
		  __atomic_load_n(&guard_faults, __ATOMIC_RELAXED), n_code,
		  n_unknown);
	unsigned long cut = __atomic_load_n(&sampler.n_cut, __ATOMIC_RELAXED);
	if (cut)
		plog_info("%lu stacks cut at a generator's frame after every "
			  "walk (marked [truncated])",
			  cut);
	if (sampler.native) {
		unsigned long rows, objs, none;
		cfi_stats(&rows, &objs, &none);
		plog_info("native stacks: %lu samples, %lu not merged "
			  "(%.2f%%), %d executable segments; unwound "
			  "%lu times from our tables (%lu objects, %lu "
			  "rows), %lu by libunwind",
			  st.n_native, st.n_unmerged,
			  st.n_native ? 100.0 * (double)st.n_unmerged /
						(double)st.n_native
				      : 0.0,
			  ag.mods ? modules_count(ag.mods) : 0,
			  __atomic_load_n(&sampler.n_native_tables,
					  __ATOMIC_RELAXED),
			  objs, rows,
			  __atomic_load_n(&sampler.n_native_libunwind,
					  __ATOMIC_RELAXED));
	}
	if (ag.heap.buf)
		plog_info("heap: %lu allocations sampled, %lu of them "
			  "freed, %lu lost (table or ring full), %lu "
			  "frees lost",
			  heap_stats.n_sampled, heap_stats.n_freed,
			  heap_stats.n_lost, heap_stats.n_free_lost);
	if (__atomic_load_n(&waits_stats.n_waits, __ATOMIC_RELAXED))
		plog_info("waits: %lu seen, %lu block and %lu mutex records, "
			  "%lu lost (a table or the ring full)",
			  waits_stats.n_waits, waits_stats.n_block,
			  waits_stats.n_mutex, waits_stats.n_lost);
	if (ag.tr.fd >= 0 && transport_pending(&ag.tr))
		plog_warn("exiting with %zu bytes not sent to the "
			  "collector",
			  transport_pending(&ag.tr));
}

/* Final: no more samples, then everything we have, then BYE. */
static void finish(const struct loop *l)
{
	control_finalized();
	threadnames_stop();
	pthread_mutex_lock(&ag_lock);
	/* Even a program that ended before the loop saw its interpreter up
	 * (python -c pass takes 10 ms): every Python process says HELLO,
	 * with its samples (heap sampling starts with the library, a dying
	 * code object drains the ring) or with none, and BYE. With no
	 * collector listening this is one failed connect. Not a forked child
	 * whose exec failed (agent_quiet_if_empty), unless it has more, and
	 * not a program that links libpython but never started it (vim,
	 * gdb): no interpreter state was ever seen, it is not Python. */
	int was_python = l->saw_interp || sampler.interp_head() ||
			 pylife_ended();
	if ((was_python &&
	     !__atomic_load_n(&ag.quiet_if_empty, __ATOMIC_ACQUIRE)) ||
	    ag.tr.conn_seq || ring_pending() || ag.heap.n ||
	    sampleframe_pending()) {
		drain(1);
		put_bye();
		exit_flush();
		log_exit_stats();
	}
	__atomic_store_n(&ag.running, 0, __ATOMIC_RELEASE);
	if (l->gone) {
		/* We are (about to be) the last thread: returning makes glibc
		 * call exit(0), whose destructors must not wait for us. */
		ag.started = 0;
	}
	pthread_mutex_unlock(&ag_lock);
}

/* The loop's state lives across a pause (agent_pause). */
static struct loop ag_loop;

static void *agent_main(void *arg)
{
	struct loop *lp = &ag_loop;
	(void)arg;
	threads_internal_self();
	if (ag.start_delay_ms) {
		/* on the wake-up eventfd: a child that exits during the
		 * delay (agent_stop) is not held up by it */
		struct pollfd d = { ag.wake_fd, POLLIN, 0 };
		poll(&d, 1, (int)ag.start_delay_ms);
	}
	ag.start_ns = mono_ns();
	while (!__atomic_load_n(&ag.stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&ag.pause, __ATOMIC_ACQUIRE)) {
			threads_internal_leave();
			return NULL; /* agent_pause: back later, as we are */
		}
		wait_tick(lp);
		uint64_t now = mono_ns();
		if (program_ended(lp, now)) {
			lp->gone = 1;
			break;
		}
		refresh_unwind_tables();
		follow_interpreter(lp);
		if (!lp->was_initialized)
			continue; /* nothing to say before Python runs */
		follow_threads(lp, now);
		tick(now);
	}
	finish(lp);
	threads_internal_leave();
	return NULL;
}

void agent_code_dying(void *code)
{
	if (!__atomic_load_n(&ag.running, __ATOMIC_ACQUIRE))
		return;
	/* Only samples already in the ring can name the dying object: a
	 * code object that is being freed runs in no frame any more. And
	 * only a named object has an entry to forget. */
	int pending = ring_pending();
	if (!pending && !symbolize_maybe_known((uintptr_t)code))
		return;
	pthread_mutex_lock(&ag_lock);
	if (__atomic_load_n(&ag.running, __ATOMIC_ACQUIRE)) {
		if (pending)
			ring_drain(&sampler.ring, sampleframe_on_record, NULL);
		symbolize_forget(ag.sym, (uintptr_t)code);
	}
	pthread_mutex_unlock(&ag_lock);
}

void agent_fork_prepare(void)
{
	pthread_mutex_lock(&ag_lock);
}

void agent_fork_parent(void)
{
	pthread_mutex_unlock(&ag_lock);
}

/* Starts the agent thread (ownthread.h: no signal of the program's
 * reaches it). 0 or an errno number. */
static int spawn(void)
{
	ag.running = 1;
	int rc = ownthread_create(&ag.thread, agent_main, NULL,
				  "pyprof-agent");
	if (rc == 0)
		ag.started = 1;
	else
		ag.running = 0;
	return rc;
}

int agent_start(const struct config *c, struct agent_info *info)
{
	int rc = 0;

	memset(&ag, 0, sizeof ag);
	memset(&ag_loop, 0, sizeof ag_loop);
	ag.cfg = c;
	ag.info = info;
	ag.wake_fd = ag.wake_wr = -1;
	wake_open();
	ag.sym = symbolize_new(&ag.in);
	/* always: a command may switch heap sampling on (control.h) */
	if (heapframe_init(&ag.heap, &ag.tr, &ag.in) < 0 || ag.wake_fd < 0 ||
	    !ag.sym) {
		rc = -ENOMEM;
		goto out;
	}
	if (sampler.native && !(ag.mods = modules_new())) {
		rc = -ENOMEM;
		goto out;
	}
	if (sampleframe_init(&ag.in, ag.sym, &ag.tr, ag.mods, &ag.heap) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	transport_init(&ag.tr, c->socket, c->collector_uid);
	ag.tr.on_frame = on_ctl_frame;
	/* The files the agent keeps, opened here, before the program runs:
	 * opened later they would sit at a low number for a moment, where a
	 * program listing its descriptors (CPython's fd_status.py, right at
	 * its start) could see them. */
	program_gone_prepare();
	transport_prepare(&ag.tr);
	threads_prepare_scan();
	rc = -spawn();
out:
	if (rc < 0) {
		wake_close();
		sampleframe_free();
		heapframe_free(&ag.heap);
		symbolize_free(ag.sym);
		modules_free(ag.mods);
		memset(&ag, 0, sizeof ag);
	}
	return rc;
}

void agent_quiet_if_empty(void)
{
	__atomic_store_n(&ag.quiet_if_empty, 1, __ATOMIC_RELEASE);
}

/* Wakes the agent from its poll. */
static void wake_agent(void)
{
	if (ag.wake_wr >= 0 && fd_is(ag.wake_wr, &ag.wake_id)) {
		ssize_t r = write(ag.wake_wr, "", 1);
		(void)r;
	}
}

int agent_pause(void)
{
	if (!ag.started || ag.paused)
		return 0;
	__atomic_store_n(&ag.pause, 1, __ATOMIC_RELEASE);
	wake_agent();
	/* A tick's work at most; bounded all the same (a fork from a
	 * signal handler that interrupted the code object hook, which
	 * holds the agent's lock, must not wait for ever). */
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += AGENT_PAUSE_WAIT_MS * 1000000L;
	deadline.tv_sec += deadline.tv_nsec / 1000000000L;
	deadline.tv_nsec %= 1000000000L;
	ag.unjoined = pthread_timedjoin_np(ag.thread, NULL, &deadline) != 0;
	ag.started = 0;
	ag.paused = 1;
	return !ag.unjoined;
}

void agent_resume(void)
{
	if (!ag.paused)
		return;
	if (ag.unjoined)
		pthread_join(ag.thread, NULL); /* it was on its way out */
	ag.paused = ag.unjoined = 0;
	__atomic_store_n(&ag.pause, 0, __ATOMIC_RELEASE);
	ag.start_delay_ms = 0;
	if (!ag.stop)
		spawn();
}

void agent_stop(void)
{
	agent_resume(); /* a pause nobody ended: the rest is sent */
	if (!ag.started)
		return;
	ag.started = 0;
	__atomic_store_n(&ag.stop, 1, __ATOMIC_RELEASE);
	wake_agent();
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += AGENT_EXIT_WAIT_MS / 1000 + 1;
	if (pthread_timedjoin_np(ag.thread, NULL, &deadline) != 0)
		plog_warn("agent did not finish in time");
}

void agent_after_fork_child(int follow)
{
	/* The agent thread does not exist here, and its lock was taken in
	 * agent_fork_prepare by the forking thread: make it fresh. */
	pthread_mutex_init(&ag_lock, NULL);
	ag.started = 0;
	ag.running = 0;
	/* The parent's connection and the data waiting in it are the
	 * parent's: drop our copies (closing the fd does not touch the
	 * parent's connection). The wake-up pipe is shared with the parent's
	 * agent: take a new one. Interned tables and named code objects stay
	 * valid (the memory is a copy) and are replayed on our connection. */
	/* A socket refused by the parent stays refused: its children say
	 * nothing more about it (sampling is off for good there too). */
	int refused = ag.tr.refused;
	transport_fini(&ag.tr);
	transport_init(&ag.tr, ag.cfg->socket, ag.cfg->collector_uid);
	ag.tr.refused = refused;
	ag.tr.on_frame = on_ctl_frame;
	ag.connected = 0;
	wake_close();
	sampleframe_after_fork_child();
	heapframe_reset(&ag.heap);
	ag.written_before = ag.written_now = 0;
	ag.finalized = 0;
	ag.stop = 0;
	ag.quiet_if_empty = 0;
	ag.pause = ag.paused = ag.unjoined = 0;
	memset(&ag_loop, 0, sizeof ag_loop);
	if (!follow || refused)
		return;
	if (wake_open() < 0)
		return;
	/* The files the agent reads all the time, opened here, in the
	 * forking thread, before the program goes on: opened later by the
	 * agent they could take a low number at the moment the child
	 * dup2()s onto it before exec (EBUSY; subprocess with a std
	 * descriptor closed). */
	program_gone_prepare();
	transport_prepare(&ag.tr);
	threads_prepare_scan();
	/* Most forked children of a Python program exec at once
	 * (subprocess): the agent waits a moment before it arms anything,
	 * and an exec ends it silently. */
	ag.start_delay_ms = AGENT_CHILD_DELAY_MS;
	spawn();
}
