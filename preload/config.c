/*
 * config.c - PYPROF_* environment variables (see config.h; documented in
 * docs/environment.md and man/libpyprof.7).
 *
 * Every variable has one accepted form and one error line that says what
 * it accepts; the first bad variable turns profiling off and the program
 * runs as if pyprof were not there. The library's constructor reads them
 * (config_load, in init.c); `pyprof record` checks the ones it passes
 * before it starts anything: this file is compiled into both, and so
 * depends on nothing of either (no log; the variables come through the
 * caller's get function).
 */
#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h" /* the PLOG_* levels only */
#include "pyprof/defaults.h"

int config_parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* where config_check writes its one line */
struct bad_out {
	char *buf;
	size_t len;
};

static int bad_to(struct bad_out *o, const char *var, const char *val,
		  const char *accepts)
{
	if (o->len)
		snprintf(o->buf, o->len, "%s=\"%.64s\" is not valid: %s", var,
			 val ? val : "", accepts);
	return -EINVAL;
}

static int parse_bool(const char *s, int *out)
{
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "on")) {
		*out = 1;
		return 0;
	}
	if (!*s || !strcmp(s, "0") || !strcasecmp(s, "false") ||
	    !strcasecmp(s, "no") || !strcasecmp(s, "off")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

/* PYPROF_COLLECTOR_USER: a uid, or a name looked up in /etc/passwd
 * itself: fgetpwent parses the file without NSS, whose modules (LDAP,
 * systemd's userdb) have no place in the constructor of someone else's
 * program. */
static int parse_user(const char *s, long *uid)
{
	struct passwd *pw;
	FILE *f;
	long n;

	if (config_parse_int(s, 0, 4294967294L, &n) == 0) {
		*uid = n;
		return 0;
	}
	if (!(f = fopen("/etc/passwd", "re")))
		return -EINVAL;
	while ((pw = fgetpwent(f)) && strcmp(pw->pw_name, s) != 0)
		;
	if (pw)
		*uid = (long)pw->pw_uid;
	fclose(f);
	return pw ? 0 : -EINVAL;
}

/* PYPROF_TOGGLE_SIGNAL: a name (SIGUSR2, USR2, any case) or a number.
 * Refused: what cannot be caught or is taken (KILL, STOP, pyprof's own
 * SEGV, BUS, PROF), the synchronous faults, and glibc's internal
 * real-time signals below SIGRTMIN. */
static int parse_signal(const char *s)
{
	static const struct { const char *name; int sig; } names[] = {
		{"HUP", SIGHUP},     {"INT", SIGINT},       {"QUIT", SIGQUIT},
		{"USR1", SIGUSR1},   {"USR2", SIGUSR2},     {"ALRM", SIGALRM},
		{"TERM", SIGTERM},   {"CHLD", SIGCHLD},     {"CONT", SIGCONT},
		{"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU},
		{"URG", SIGURG},     {"WINCH", SIGWINCH},   {"IO", SIGIO},
		{"PWR", SIGPWR},     {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},
		{"VTALRM", SIGVTALRM}, {"PIPE", SIGPIPE},
	};
	long n;
	int sig = 0;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcasecmp(s, names[i].name))
			sig = names[i].sig;
	if (!sig && config_parse_int(s, 1, SIGRTMAX, &n) == 0)
		sig = (int)n;
	if (!sig || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
	    sig == SIGBUS || sig == SIGPROF || sig == SIGILL ||
	    sig == SIGFPE || sig == SIGTRAP || sig == SIGABRT ||
	    (sig > SIGSYS && sig < SIGRTMIN))
		return -EINVAL;
	return sig;
}

/* PYPROF_HEAP_RATE: bytes, with an optional binary suffix (k, KiB, M,
 * MiB; case-insensitive): 0 (off) to 1 GiB. */
static int parse_bytes(const char *s, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = { { "", 1 },	  { "k", 1024 },    { "kib", 1024 },
		      { "kb", 1024 },	  { "m", 1u << 20 }, { "mib", 1u << 20 },
		      { "mb", 1u << 20 } };
	char *end;
	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		if (v > (1ull << 30) / units[i].mult)
			return -EINVAL;
		*out = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int config_check(struct config *c,
		 const char *(*get)(const char *name, void *arg), void *arg,
		 char *err, size_t err_len)
{
	struct bad_out out = { err, err_len };
	const char *v;
	long n;

	if (err_len)
		err[0] = 0;

	memset(c, 0, sizeof *c);
	c->collector_uid = -1;
	c->hz = PYPROF_DEFAULT_HZ;
	c->mode = CONFIG_MODE_CPU;
	c->max_depth = PYPROF_DEFAULT_MAX_DEPTH;
	c->log_level = PLOG_OFF;

	if ((v = get("PYPROF_LOG", arg))) {
		static const char *const names[] = {"off", "error", "warn",
						    "info", "debug"};
		int found = -1;
		for (int i = 0; i < 5; i++)
			if (!strcasecmp(v, names[i]))
				found = i;
		if (!strcmp(v, "0"))
			found = PLOG_OFF;
		else if (!strcmp(v, "1"))
			found = PLOG_INFO;
		if (found < 0)
			return bad_to(&out, "PYPROF_LOG", v,
				   "expected off, error, warn, info, debug, "
				   "0 or 1");
		c->log_level = found;
	}
	if ((v = get("PYPROF_DISABLE", arg)) &&
	    parse_bool(v, &c->disabled) < 0)
		return bad_to(&out, "PYPROF_DISABLE", v,
			   "expected 1/true/yes/on or 0/false/no/off");
	if ((v = get("PYPROF_OPCODES", arg)) && parse_bool(v, &c->opcodes) < 0)
		return bad_to(&out, "PYPROF_OPCODES", v,
			   "expected 1/true/yes/on or 0/false/no/off");
	if ((v = get("PYPROF_NATIVE", arg))) {
		int on;
		if (!strcasecmp(v, "all"))
			c->native = CONFIG_NATIVE_ALL;
		else if (parse_bool(v, &on) == 0)
			c->native = on ? CONFIG_NATIVE_ON : CONFIG_NATIVE_OFF;
		else
			return bad_to(&out, "PYPROF_NATIVE", v,
				   "expected 1/true/yes/on, all, or "
				   "0/false/no/off");
	}
	c->start = 1;
	if ((v = get("PYPROF_START", arg))) {
		if (!strcasecmp(v, "on"))
			c->start = 1;
		else if (!strcasecmp(v, "off"))
			c->start = 0;
		else
			return bad_to(&out, "PYPROF_START", v,
				   "expected on (sample from the start) or off "
				   "(dormant until asked)");
	}
	if ((v = get("PYPROF_TOGGLE_SIGNAL", arg)) && *v) {
		int sig = parse_signal(v);
		if (sig < 0)
			return bad_to(&out, "PYPROF_TOGGLE_SIGNAL", v,
				   "expected a signal name or number that can "
				   "be caught, such as SIGUSR2 or 12 (not KILL, "
				   "STOP, SEGV, BUS, PROF, ILL, FPE, TRAP, "
				   "ABRT)");
		c->toggle_sig = sig;
	}
	c->children = 1;
	if ((v = get("PYPROF_CHILDREN", arg)) &&
	    parse_bool(v, &c->children) < 0)
		return bad_to(&out, "PYPROF_CHILDREN", v,
			   "expected 1/true/yes/on or 0/false/no/off");
	if ((v = get("PYPROF_HZ", arg))) {
		if (config_parse_int(v, 1, PYPROF_MAX_HZ, &n) < 0)
			return bad_to(&out, "PYPROF_HZ", v,
				   "expected a whole number of samples per "
				   "second from 1 to 10000");
		c->hz = (int)n;
	}
	if ((v = get("PYPROF_MODE", arg))) {
		if (!strcmp(v, "cpu"))
			c->mode = CONFIG_MODE_CPU;
		else if (!strcmp(v, "wall"))
			c->mode = CONFIG_MODE_WALL;
		else
			return bad_to(&out, "PYPROF_MODE", v, "expected cpu or wall");
	}
	if ((v = get("PYPROF_CPU_SOURCE", arg))) {
		if (!strcmp(v, "auto"))
			c->cpu_source = CONFIG_SOURCE_AUTO;
		else if (!strcmp(v, "timer"))
			c->cpu_source = CONFIG_SOURCE_TIMER;
		else if (!strcmp(v, "perf"))
			c->cpu_source = CONFIG_SOURCE_PERF;
		else
			return bad_to(&out, "PYPROF_CPU_SOURCE", v,
				   "expected auto, timer or perf");
	}
	if ((v = get("PYPROF_MAX_DEPTH", arg))) {
		if (config_parse_int(v, 1, PYPROF_MAX_MAX_DEPTH, &n) < 0)
			return bad_to(&out, "PYPROF_MAX_DEPTH", v,
				   "expected a whole number of frames from 1 "
				   "to 4096");
		c->max_depth = (int)n;
	}
	if ((v = get("PYPROF_HEAP_RATE", arg)) &&
	    parse_bytes(v, &c->heap_rate) < 0)
		return bad_to(&out, "PYPROF_HEAP_RATE", v,
			   "expected bytes between samples from 0 (off) to "
			   "1 GiB, such as 524288 or 512k");
	if ((v = get("PYPROF_HEAP_SNAPSHOT_SECONDS", arg))) {
		if (config_parse_int(v, 0, 86400, &n) < 0)
			return bad_to(&out, "PYPROF_HEAP_SNAPSHOT_SECONDS", v,
				   "expected a whole number of seconds from 0 "
				   "(none) to 86400");
		c->heap_snapshot_s = (int)n;
	}
	if ((v = get("PYPROF_COLLECTOR_USER", arg)) && *v &&
	    parse_user(v, &c->collector_uid) < 0)
		return bad_to(&out, "PYPROF_COLLECTOR_USER", v,
			   "expected a numeric uid or a user name in "
			   "/etc/passwd");
	if ((v = get("PYPROF_SOCKET", arg)) && *v) {
		if (v[0] != '/' || strlen(v) >= sizeof c->socket)
			return bad_to(&out, "PYPROF_SOCKET", v,
				   "expected an absolute path shorter than "
				   "108 bytes");
		strcpy(c->socket, v);
	} else if (pyprof_default_socket(c->socket, sizeof c->socket) < 0) {
		return bad_to(&out, "XDG_RUNTIME_DIR", get("XDG_RUNTIME_DIR", arg),
			   "the default socket path under it is longer than "
			   "108 bytes; set PYPROF_SOCKET");
	}
	return 0;
}
