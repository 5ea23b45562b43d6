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
 * Contexts: the thread that runs the attach script, holding the GIL.
 */
#include <errno.h>
#include <string.h>

#include "attach.h"
#include "init.h"
#include "base/log.h"

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

/*
 * Called by the attach script. Returns 0 when profiling started, 1 when
 * the library was already running in this process, a negative errno when
 * it cannot start (the collector is told why, as for a preloaded library
 * that refuses). Never raises into the program: ctypes only sees an int.
 */
int attach_start(const char *config)
{
	static struct attach_settings s; /* one attach at a time: GIL */

	if (!config || settings_parse(&s, config) < 0)
		return -EINVAL;
	/* whatever the library says goes to the collector, never onto the
	 * program's own stderr, unless the settings ask for a log (pyprof
	 * attach passes its own PYPROF_LOG on: debugging) */
	plog_quiet = !settings_lookup("PYPROF_LOG", &s);
	return init_start_late(settings_lookup, &s);
}
