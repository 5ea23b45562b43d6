/*
 * wall.h - wall-clock sampling (PYPROF_MODE=wall).
 *
 * One thread of ours wakes at jittered intervals around the period and
 * samples every Python thread of the process from the outside: it walks the
 * interpreters' thread lists and each thread's frames with guarded reads,
 * exactly as the signal handler does for its own thread, and writes the
 * records into the same ring. No signal is sent, so threads blocked in a
 * system call are neither woken nor interrupted (no EINTR, no early
 * return from sleep).
 *
 * Each sample says whether its thread was on CPU (its CPU clock advanced
 * by at least half of the elapsed interval since the previous tick) and,
 * where the interpreter tells, whether it held the GIL. Its value is the
 * wall time since the previous tick, so values sum to wall time even though
 * the interval is jittered (uniform in [0.5, 1.5] periods, so that sampling
 * cannot stay in lockstep with periodic work in the program).
 *
 * The sampler thread runs with every signal blocked and never takes the
 * GIL or calls the C API.
 */
#ifndef PYPROF_WALL_H
#define PYPROF_WALL_H

/* Starts the wall sampler (agent thread, once the interpreter is up).
 * 0 or -errno. */
int wall_start(void);

/* Stops it and waits for it (agent thread). Idempotent. */
void wall_stop(void);

/* Fork child: the sampler thread did not survive. */
void wall_after_fork_child(void);

#endif /* PYPROF_WALL_H */
