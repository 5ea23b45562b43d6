/*
 * control.h - whether the library samples now, with which settings, and
 * who said so: a process can start dormant (PYPROF_START=off) and sample
 * only when asked.
 *
 * Two layers decide:
 *   - the process's own state: PYPROF_START (on by default), flipped by
 *     the toggle signal (PYPROF_TOGGLE_SIGNAL) and turned off by a hard
 *     CTL_STOP; its settings are the environment's (PYPROF_HZ...);
 *   - a command's override: CTL_START from the collector, with its own
 *     settings, for its lease (or until CTL_STOP), and never longer than
 *     the connection that carried it: a collector that goes away takes
 *     its requests with it. When it ends the process's own state applies
 *     again.
 * Sampling is on when an override holds or the own state is on, and never
 * before the interpreter is initialized or after it finalized.
 *
 * Dormant (PYPROF_START=off and nothing asked): no timer, no perf_event
 * fd, no wall sampler, no names thread, no allocation hook; the agent
 * thread sleeps in poll() on its socket, waking every AGENT_IDLE_MS to
 * reconnect, notice the interpreter's end, or take a toggle signal.
 *
 * A forked child keeps the parent's own state (so a toggled-on parent's
 * child samples at once) but not the override, which belonged to the
 * parent's connection: the collector sends the child its own CTL_START
 * when a request covers it.
 *
 * Contexts: sampling_* and control_* run on the agent thread (control_init
 * and control_after_fork_child: constructor and fork child), except where
 * said. The toggle signal's handler is in sig_toggle.c.
 */
#ifndef PYPROF_CONTROL_H
#define PYPROF_CONTROL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

/* The settings of one period of sampling. */
struct sampling_settings {
	int mode;	    /* enum config_mode (fixed for the process)  */
	uint64_t period_ns; /* between two samples                        */
	uint64_t heap_rate; /* mean bytes between heap samples; 0 off     */
	int native;	    /* enum config_native (fixed at start-up)     */
	uint64_t waits_ns;  /* block and mutex profiles' rate; 0 off (can
	                       change while armed: no re-arming)           */
};

/* Arms sampling with s: timers (or perf counters) for every thread, or
 * the wall sampler; the names thread; heap hooks. 0, or -EALREADY when on
 * (stop first). Agent thread, interpreter initialized. */
int sampling_start(const struct sampling_settings *s);
/* Disarms everything sampling_start armed; samples already in the ring
 * stay for the agent to send. Idempotent. Agent thread. */
void sampling_stop(void);
/* 1 while armed. Any thread (relaxed). */
int sampling_is_on(void);
int sampling_is_on_sigsafe(void); /* the same, for exec's wrappers */

/* Reads the configuration: the own state and settings, the toggle signal
 * (installed here unless the program already handles it). Constructor. */
void control_init(const struct config *c);

/* The interpreter is initialized: the state applies from now on. */
void control_ready(void);
/* The interpreter finalized (or the process exits): off for good. */
void control_finalized(void);

/*
 * Lease expiry, toggle signals, the program taking the toggle signal for
 * itself: brings sampling in line with the state. When the state changed
 * by itself (not by a command) and frame is not NULL, writes a CTL_STATE
 * frame there (cap bytes) and returns its length, else returns 0.
 */
size_t control_tick(uint64_t now_ns, uint8_t *frame, size_t cap);

/* Milliseconds until control_tick has something to do (a lease ending),
 * at most max_ms. */
int control_next_ms(uint64_t now_ns, int max_ms);

/*
 * A command frame from the collector (type WIRE_CTL_START..STATUS,
 * payload p/len): applies it and writes the reply (CTL_REPLY) into
 * reply/cap. Returns the reply's length, or -EPROTO for a malformed or
 * unknown frame (then nothing changed; the caller drops the connection).
 * *flush_first is set when the caller must send every sample taken so
 * far before the reply (STOP, FLUSH).
 */
int control_command(unsigned type, const uint8_t *p, size_t len,
		    uint64_t now_ns, uint8_t *reply, size_t cap,
		    int *flush_first);

/* The connection to the collector is gone: its override ends. */
void control_disconnected(void);

/* Fork child: drops the override; returns 1 if the child samples at once
 * (its own state is on, in CPU mode), with sampler.period_ns set. */
int control_after_fork_child(void);

/* Counters for BYE and logs. */
uint64_t control_achieved_ns(void); /* 0 unless >10% off, see agent.c */


#endif /* PYPROF_CONTROL_H */
