/*
 * attach.c - the library's entry point when `pyprof attach` brings it into
 * a running interpreter.
 *
 * The attach command has the target run a small Python script at a safe
 * point of its interpreter (PEP 768, 3.14+: sys.remote_exec); the script
 * loads this library with ctypes (dlopen: the constructor sees an
 * initialized interpreter and does nothing, init.c) and calls
 * pyprof_attach_start with its settings as text, one PYPROF_NAME=value per
 * line: the environment of a running process cannot be changed from
 * outside, and changing os.environ would change what the program sees.
 * A second attach finds the library loaded (dlopen returns the same
 * handle) and dormant, still trying its collector's socket; the call is
 * then a no-op and the attach command switches sampling on through the
 * control channel (control.h) as for any dormant process.
 *
 * The start itself (init_start_late: the checks, the layout, the
 * handlers, the agent and the other threads, the waits' GOT slots) runs
 * on a thread of its own, "pyprof-start", so that the thread that runs
 * the script, the program's main thread as a rule, returns to its Python
 * code at once: its part is to copy the settings and create that thread
 * (a start on that thread held it 4 to 8 ms idle, and up to 120 ms on a loaded server). Native
 * stacks (PYPROF_NATIVE) are the exception: libunwind must be touched by
 * each thread before a signal unwinds it (native.h), and the calling
 * thread is one that already runs; that start stays on it.
 *
 * Contexts: attach_start on the thread that runs the attach script,
 * holding the GIL (the script calls it with ctypes' FUNCFLAG_PYTHONAPI);
 * start_main on the pyprof-start thread, without it.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "attach.h"
#include "init.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/tid.h"
#include "sample/ownthread.h"
#include "sample/threads.h"

#define ATTACH_VARS 24
#define ATTACH_TEXT 2048

struct attach_settings {
	char text[ATTACH_TEXT];
	const char *name[ATTACH_VARS];
	const char *value[ATTACH_VARS];
	int n;
};

static const char *settings_lookup(const char *name, void *arg)
{
	const struct attach_settings *s = arg;

	for (int i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return s->value[i];
	return NULL; /* what the attach command did not set: the default */
}

/* Splits "NAME=value\n..." (a copy in s->text). Lines without '=' or not
 * starting with PYPROF_ are ignored. -EINVAL when too long. */
static int settings_parse(struct attach_settings *s, const char *config)
{
	size_t len = strlen(config);
	char *p;

	if (len >= sizeof s->text)
		return -EINVAL;
	memcpy(s->text, config, len + 1);
	s->n = 0;
	for (p = s->text; *p && s->n < ATTACH_VARS;) {
		char *nl = strchr(p, '\n');
		char *eq;

		if (nl)
			*nl = '\0';
		eq = strchr(p, '=');
		if (eq && strncmp(p, "PYPROF_", 7) == 0) {
			*eq = '\0';
			s->name[s->n] = p;
			s->value[s->n] = eq + 1;
			s->n++;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return 0;
}

/* The settings of the one start at a time, and who runs it. starting is
 * set (atomic exchange) by the attach_start that begins a start and
 * cleared when it is over: a second attach_start meanwhile (a late run of
 * an earlier script, the request another thread ran too) returns at once,
 * as it would once the library runs. settings and after are written
 * before the start thread is created and read by it alone afterwards. */
static struct attach_settings settings;
static int (*after_start)(void);
static int starting;
/* the process starting was set in: a child forked from a process in the
 * middle of its start has starting set and no start thread; its own
 * attach starts anew */
static pid_t starting_pid;

/* The start, on whichever thread runs it; clears starting. */
static int start_now(void)
{
	uint64_t t0 = mono_ns();
	int rc = init_start_late(settings_lookup, &settings);

	if (rc == 0 && after_start)
		after_start();
	plog_debug("attach: the library started in %.2f ms (%d)",
		   (double)(mono_ns() - t0) / 1e6, rc);
	__atomic_store_n(&starting, 0, __ATOMIC_RELEASE);
	return rc;
}

static void *start_main(void *arg)
{
	(void)arg;
	threads_internal_self();
	start_now();
	threads_internal_leave();
	return NULL;
}

/* PYPROF_NATIVE asks for native stacks: "1", "all" and the like, not
 * "0", "false", "no", "off" or empty (config.c's words). */
static int wants_native(void)
{
	const char *v = settings_lookup("PYPROF_NATIVE", &settings);
	static const char *const off[] = { "", "0", "false", "no", "off" };

	if (!v)
		return 0;
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
		if (strcasecmp(v, off[i]) == 0)
			return 0;
	return 1;
}

/*
 * Called by the attach script. Returns 0 when the start was begun (on its
 * thread) or made (native stacks: here), 1 when the library was already
 * running or starting in this process, a negative errno when it cannot
 * start (the collector is told why, as for a preloaded library that
 * refuses). Never raises into the program: ctypes only sees an int.
 */
int attach_start(const char *config, int (*after)(void))
{
	pthread_t th;
	int rc;

	if (!config)
		return -EINVAL;
	if (__atomic_exchange_n(&starting, 1, __ATOMIC_ACQ_REL) &&
	    __atomic_load_n(&starting_pid, __ATOMIC_ACQUIRE) == getpid())
		return 1; /* one start at a time */
	__atomic_store_n(&starting_pid, getpid(), __ATOMIC_RELEASE);
	if (settings_parse(&settings, config) < 0) {
		__atomic_store_n(&starting, 0, __ATOMIC_RELEASE);
		return -EINVAL;
	}
	after_start = after;
	/* whatever the library says goes to the collector, never onto the
	 * program's own stderr, unless the settings ask for a log (pyprof
	 * attach passes its own PYPROF_LOG on: debugging) */
	plog_quiet = !settings_lookup("PYPROF_LOG", &settings);
	/* a thread of the program's that stays (the start thread ends): the
	 * thread tid.c checks its offset against */
	tid_note_main();
	if (wants_native())
		return start_now();
	rc = ownthread_create(&th, start_main, NULL, "pyprof-start");
	if (rc != 0)
		return start_now(); /* no thread: here, as before */
	pthread_detach(th);
	return 0;
}
