/*
 * agent.h - the library's one background thread.
 *
 * The agent waits for the interpreter to be initialized (looking every
 * AGENT_START_POLL_MS at first, so that a 10 ms program is sampled from
 * its start), arms the thread timers, then every AGENT_TICK_MS drains the
 * sample ring, names new code objects (symbolize.c), interns stacks
 * (intern.c) and streams them to the collector (transport.c). When the
 * interpreter finalizes it stops the timers, so no sample touches a
 * finalized interpreter. At exit it drains what is left, sends BYE (after
 * a HELLO, for a process that ended before it connected: every process is
 * reported, even with no sample) and waits for the bytes to leave while a
 * collector takes them (at most AGENT_EXIT_WAIT_MS); with no collector
 * listening it does not wait at all.
 *
 * It runs with every signal blocked, never takes the GIL and never calls
 * the Python C API (the application may be deadlocked on the GIL and we must
 * still work); it reads interpreter memory only through guard_copy().
 */
#ifndef PYPROF_AGENT_H
#define PYPROF_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

#define AGENT_TICK_MS 20
#define AGENT_IDLE_MS 250 /* dormant: see control.h */
#define AGENT_SCAN_MS 200
#define AGENT_EXIT_WAIT_MS 2000 /* at most, sending what is left    */
#define AGENT_EXIT_STALL_MS 500 /* ...while the collector takes bytes */
#define AGENT_CHILD_DELAY_MS 20
/* Until the interpreter is seen up, during the first AGENT_START_FAST_MS,
 * the agent looks for it every AGENT_START_POLL_MS (a short program's
 * samples; about 100 wake-ups for a 100 ms start-up) */
#define AGENT_START_POLL_MS 1
#define AGENT_START_FAST_MS 500
#define AGENT_PAUSE_WAIT_MS 1000 /* at most, for the agent to pause  */

/* What the agent says about the process in HELLO. */
struct agent_info {
	char pyversion[32];
	char exe[4096];
	char comm[64];
	char *args; /* NUL-separated argv, n_args entries */
	size_t args_len;
	uint64_t start_unix_ns, start_mono_ns;
};

/* Starts the agent thread (constructor). 0 or -errno. */
int agent_start(const struct config *c, struct agent_info *info);

/* Stops it: final drain, BYE, bounded wait (destructor). Idempotent. */
void agent_stop(void);

/* Before agent_stop, in a process that tried to exec and is ending: say
 * nothing at all (no HELLO) unless there are samples to send or a
 * collector heard from us already. */
void agent_quiet_if_empty(void);
/* Before a fork (forkpause.h): the agent thread ends, its state kept;
 * 1 if it has, 0 if it was not running or did not end within
 * AGENT_PAUSE_WAIT_MS (it ends soon after; agent_resume waits for it).
 * agent_resume starts it again; agent_stop resumes first. The forking
 * thread, or the main thread (a pending call). */
int agent_pause(void);
void agent_resume(void);

/* Fork: prepare takes the agent's lock so that no drain is half done in
 * the child; parent releases it. The child is a new process: it forgets
 * the parent's connection and queued data and, if follow is set, starts
 * its own agent (which re-arms sampling for the one thread that survived
 * and connects with a HELLO naming its parent). */
void agent_fork_prepare(void);
void agent_fork_parent(void);
void agent_after_fork_child(int follow);

/*
 * Called when a code object is about to be freed, on the application
 * thread that frees it (the GIL is held). Names every sample still in the
 * ring while the object is alive, so that a module's code, freed right
 * after the import that ran it, is not reported as "[unknown]". Returns at
 * once when the ring is empty.
 */
void agent_code_dying(void *code);

#endif /* PYPROF_AGENT_H */
