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
#include "pyprof/envcheck.h"

#include <errno.h>
#include <pwd.h>
#include <stddef.h>
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

/*
 * The table: one row per variable, in the order they are checked (the
 * first bad one is the one reported). A row's set function parses the
 * value into *c, or returns -EINVAL; refuse() then says what the row
 * accepts. Word and range rows set the int at `field`; the others know
 * their own field.
 */
struct var;
typedef int set_fn(const struct var *r, const char *v, struct config *c);

struct word {
	const char *word;
	int value;
};

struct var {
	const char *name;
	set_fn *set;
	size_t field;		  /* offsetof(struct config, the int it sets) */
	const struct word *words; /* set_word: the accepted words           */
	int nocase;		  /* set_word: any case                     */
	long lo, hi;		  /* set_range: the bounds                  */
	const char *lo_means;	  /* set_range: what lo stands for, if any  */
	const char *accepts;	  /* set_range: what the number counts;
				     others: the whole "expected ..." tail */
	int empty_unset;	  /* "" reads as not set                    */
};

static int *field_of(const struct var *r, struct config *c)
{
	return (int *)((char *)c + r->field);
}

static int set_word(const struct var *r, const char *v, struct config *c)
{
	for (const struct word *w = r->words; w->word; w++) {
		if (r->nocase ? strcasecmp(v, w->word) : strcmp(v, w->word))
			continue;
		*field_of(r, c) = w->value;
		return 0;
	}
	return -EINVAL;
}

static int set_range(const struct var *r, const char *v, struct config *c)
{
	long n;
	if (config_parse_int(v, r->lo, r->hi, &n) < 0)
		return -EINVAL;
	*field_of(r, c) = (int)n;
	return 0;
}

/* PYPROF_COLLECTOR_USER: a uid, or a name looked up in /etc/passwd
 * itself: fgetpwent parses the file without NSS, whose modules (LDAP,
 * systemd's userdb) have no place in the constructor of someone else's
 * program. */
static int set_user(const struct var *r, const char *s, struct config *c)
{
	struct passwd *pw;
	FILE *f;
	long n;

	(void)r;
	if (config_parse_int(s, 0, 4294967294L, &n) == 0) {
		c->collector_uid = n;
		return 0;
	}
	if (!(f = fopen("/etc/passwd", "re")))
		return -EINVAL;
	while ((pw = fgetpwent(f)) && strcmp(pw->pw_name, s) != 0)
		;
	if (pw)
		c->collector_uid = (long)pw->pw_uid;
	fclose(f);
	return pw ? 0 : -EINVAL;
}

/* PYPROF_TOGGLE_SIGNAL: a name (SIGUSR2, USR2, any case) or a number.
 * Refused: what cannot be caught or is taken (KILL, STOP, pyprof's own
 * SEGV, BUS, PROF), the synchronous faults, and glibc's internal
 * real-time signals below SIGRTMIN. */
static int set_signal(const struct var *r, const char *s, struct config *c)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "HUP", SIGHUP },
		{ "INT", SIGINT },
		{ "QUIT", SIGQUIT },
		{ "USR1", SIGUSR1 },
		{ "USR2", SIGUSR2 },
		{ "ALRM", SIGALRM },
		{ "TERM", SIGTERM },
		{ "CHLD", SIGCHLD },
		{ "CONT", SIGCONT },
		{ "TSTP", SIGTSTP },
		{ "TTIN", SIGTTIN },
		{ "TTOU", SIGTTOU },
		{ "URG", SIGURG },
		{ "WINCH", SIGWINCH },
		{ "IO", SIGIO },
		{ "PWR", SIGPWR },
		{ "XCPU", SIGXCPU },
		{ "XFSZ", SIGXFSZ },
		{ "VTALRM", SIGVTALRM },
		{ "PIPE", SIGPIPE },
	};
	long n;
	int sig = 0;
	(void)r;
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
	c->toggle_sig = sig;
	return 0;
}

/* PYPROF_HEAP_RATE: bytes, with an optional binary suffix (k, KiB, M,
 * MiB; case-insensitive): 0 (off) to 1 GiB. */
static int set_bytes(const struct var *r, const char *s, struct config *c)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = { { "", 1 }, { "k", 1024 }, { "kib", 1024 }, { "kb", 1024 }, { "m", 1u << 20 }, { "mib", 1u << 20 }, { "mb", 1u << 20 } };
	char *end;
	(void)r;
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
		c->heap_rate = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

/* PYPROF_WAITS: on (1, true, yes, on: the default rate), off (0,
 * false, no, off, empty), or the rate itself: a duration with its unit
 * (ns, us, ms) from 1 ns to 1 s, such as 100us. Also `pyprof ctl
 * --waits=RATE` and the collector's rate= (envcheck.h). */
int config_waits_rate(const char *s, unsigned long long *ns)
{
	static const struct {
		const char *suffix;
		unsigned long long mult;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 } };
	static const char *const on[] = { "1", "true", "yes", "on" };
	static const char *const off[] = { "", "0", "false", "no", "off" };
	char *end;
	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
		if (!strcasecmp(s, on[i])) {
			*ns = PYPROF_DEFAULT_WAITS_NS;
			return 0;
		}
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
		if (!strcasecmp(s, off[i])) {
			*ns = 0;
			return 0;
		}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !v)
		return -EINVAL;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		if (v > 1000000000ull / units[i].mult)
			return -EINVAL;
		*ns = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

static int set_waits(const struct var *r, const char *s, struct config *c)
{
	(void)r;
	return config_waits_rate(s, &c->waits_ns);
}

/* PYPROF_SOCKET: an absolute path that fits a sockaddr_un. */
static int set_socket(const struct var *r, const char *s, struct config *c)
{
	(void)r;
	if (s[0] != '/' || strlen(s) >= sizeof c->socket)
		return -EINVAL;
	strcpy(c->socket, s);
	return 0;
}

/* The socket messages below say 108 bytes. */
_Static_assert(sizeof(((struct config *)0)->socket) == 108,
	       "sun_path is not 108 bytes: fix the PYPROF_SOCKET messages");

#define BOOL_WORDS                                                       \
	{ "1", 1 }, { "true", 1 }, { "yes", 1 }, { "on", 1 }, { "", 0 }, \
		{ "0", 0 }, { "false", 0 }, { "no", 0 },                 \
	{                                                                \
		"off", 0                                                 \
	}
#define BOOL_ACCEPTS "expected 1/true/yes/on or 0/false/no/off"

static const struct word bool_words[] = { BOOL_WORDS, { NULL, 0 } };
static const struct word native_words[] = {
	{ "all", CONFIG_NATIVE_ALL }, BOOL_WORDS, { NULL, 0 }
};
static const struct word log_words[] = {
	{ "off", PLOG_OFF }, { "error", PLOG_ERROR }, { "warn", PLOG_WARN }, { "info", PLOG_INFO }, { "debug", PLOG_DEBUG }, { "0", PLOG_OFF }, { "1", PLOG_INFO }, { NULL, 0 }
};
static const struct word start_words[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
static const struct word mode_words[] = { { "cpu", CONFIG_MODE_CPU },
					  { "wall", CONFIG_MODE_WALL },
					  { NULL, 0 } };
static const struct word source_words[] = {
	{ "auto", CONFIG_SOURCE_AUTO },
	{ "timer", CONFIG_SOURCE_TIMER },
	{ "perf", CONFIG_SOURCE_PERF },
	{ "clock", CONFIG_SOURCE_CLOCK },
	{ NULL, 0 }
};

#define FIELD(f) .field = offsetof(struct config, f)

static const struct var vars[] = {
	{ "PYPROF_LOG", set_word, FIELD(log_level), .words = log_words,
	  .nocase = 1,
	  .accepts = "expected off, error, warn, info, debug, 0 or 1" },
	{ "PYPROF_DISABLE", set_word, FIELD(disabled), .words = bool_words,
	  .nocase = 1, .accepts = BOOL_ACCEPTS },
	{ "PYPROF_OPCODES", set_word, FIELD(opcodes), .words = bool_words,
	  .nocase = 1, .accepts = BOOL_ACCEPTS },
	{ "PYPROF_NATIVE", set_word, FIELD(native), .words = native_words,
	  .nocase = 1,
	  .accepts = "expected 1/true/yes/on, all, or 0/false/no/off" },
	{ "PYPROF_START", set_word, FIELD(start), .words = start_words,
	  .nocase = 1,
	  .accepts = "expected on (sample from the start) or off (dormant "
		     "until asked)" },
	{ "PYPROF_TOGGLE_SIGNAL", set_signal, .empty_unset = 1,
	  .accepts = "expected a signal name or number that can be caught, "
		     "such as SIGUSR2 or 12 (not KILL, STOP, SEGV, BUS, PROF, "
		     "ILL, FPE, TRAP, ABRT)" },
	{ "PYPROF_CHILDREN", set_word, FIELD(children), .words = bool_words,
	  .nocase = 1, .accepts = BOOL_ACCEPTS },
	{ "PYPROF_ASYNCIO", set_word, FIELD(asyncio), .words = bool_words,
	  .nocase = 1, .accepts = BOOL_ACCEPTS },
	{ "PYPROF_HZ", set_range, FIELD(hz), .lo = 1, .hi = PYPROF_MAX_HZ,
	  .accepts = "samples per second" },
	{ "PYPROF_MODE", set_word, FIELD(mode), .words = mode_words,
	  .accepts = "expected cpu or wall" },
	{ "PYPROF_CPU_SOURCE", set_word, FIELD(cpu_source),
	  .words = source_words, .accepts = "expected auto, timer, perf or clock" },
	{ "PYPROF_MAX_DEPTH", set_range, FIELD(max_depth), .lo = 1,
	  .hi = PYPROF_MAX_MAX_DEPTH, .accepts = "frames" },
	{ "PYPROF_HEAP_RATE", set_bytes,
	  .accepts = "expected bytes between samples from 0 (off) to 1 GiB, "
		     "such as 524288 or 512k" },
	{ "PYPROF_HEAP_SNAPSHOT_SECONDS", set_range, FIELD(heap_snapshot_s),
	  .lo = 0, .hi = 86400, .lo_means = " (none)", .accepts = "seconds" },
	{ "PYPROF_WAITS", set_waits,
	  .accepts = "expected 1/true/yes/on, 0/false/no/off, or a rate from "
		     "1ns to 1s with its unit, such as 10us" },
	{ "PYPROF_COLLECTOR_USER", set_user, .empty_unset = 1,
	  .accepts = "expected a numeric uid or a user name in /etc/passwd" },
	{ "PYPROF_SOCKET", set_socket, .empty_unset = 1,
	  .accepts = "expected an absolute path shorter than 108 bytes" },
};

/* The line for a row's bad value: range rows say their bounds. */
static int refuse(struct bad_out *o, const struct var *r, const char *v)
{
	char range[128];

	if (r->set != set_range)
		return bad_to(o, r->name, v, r->accepts);
	snprintf(range, sizeof range,
		 "expected a whole number of %s from %ld%s to %ld", r->accepts,
		 r->lo, r->lo_means ? r->lo_means : "", r->hi);
	return bad_to(o, r->name, v, range);
}

static void config_defaults(struct config *c)
{
	memset(c, 0, sizeof *c);
	c->collector_uid = -1;
	c->hz = PYPROF_DEFAULT_HZ;
	c->mode = CONFIG_MODE_CPU;
	c->max_depth = PYPROF_DEFAULT_MAX_DEPTH;
	c->log_level = PLOG_OFF;
	c->start = 1;
	c->children = 1;
	c->asyncio = 1;
}

int config_check(struct config *c,
		 const char *(*get)(const char *name, void *arg), void *arg,
		 char *err, size_t err_len)
{
	struct bad_out out = { err, err_len };

	if (err_len)
		err[0] = 0;
	config_defaults(c);
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const struct var *r = &vars[i];
		const char *v = get(r->name, arg);

		if (!v || (r->empty_unset && !*v))
			continue;
		if (r->set(r, v, c) < 0)
			return refuse(&out, r, v);
	}
	/* PYPROF_SOCKET unset or empty: the default path, which must fit */
	if (!c->socket[0] &&
	    pyprof_default_socket(c->socket, sizeof c->socket) < 0)
		return bad_to(&out, "XDG_RUNTIME_DIR", get("XDG_RUNTIME_DIR", arg),
			      "the default socket path under it is longer than "
			      "108 bytes; set PYPROF_SOCKET");
	return 0;
}

/* envcheck.h: config_check for the programs, which have no struct config
 * of their own. */
int config_validate(const char *(*get)(const char *name, void *arg),
		    void *arg, char *err, size_t err_len)
{
	struct config c;

	return config_check(&c, get, arg, err, err_len);
}

int config_collector_user(const char *(*get)(const char *name, void *arg),
			  void *arg, long *uid, char *err, size_t err_len)
{
	struct config c;
	int rc = config_check(&c, get, arg, err, err_len);

	if (rc == 0)
		*uid = c.collector_uid;
	return rc;
}
