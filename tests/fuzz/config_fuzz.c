/*
 * config_fuzz.c - libFuzzer harness for the two configuration readers:
 *
 *   'C' pyprof-collector's --config FILE (collector/collector_cmdline.c:
 *       read_config, each line through the same option code as the
 *       command line); the rest of the input is the file's bytes;
 *   'E' the library's PYPROF_* variables (preload/base/config.c:
 *       config_check, shared by libpyprof.so's constructor and `pyprof
 *       record`); the rest is "NAME=value" entries, one a line (a value
 *       cannot hold a newline here: the environment's can, but no
 *       parser looks for one).
 *
 * The first byte chooses (any other byte: its value's parity). Reported
 * as broken:
 *   --config: a result other than "go on" or the usage error's status;
 *     a file with a line longer than the reader takes (4094 bytes) that
 *     is accepted (its tail would be read as a line of its own), or with
 *     a NUL byte (the rest of its line would go unseen); a file that is
 *     read differently once its comment lines are dropped;
 *   PYPROF_*: a result other than 0 or -EINVAL; a refusal whose line is
 *     empty, holds a newline or names no variable that was set; settings
 *     accepted outside their documented ranges; the same variables read
 *     twice into different settings.
 *
 * Nothing outside the process is written: the config file is a memfd
 * (mode 0600, read as /proc/self/fd/N); the variables come through
 * config_check's get function, not the environment. Names of users and
 * groups are looked up as the real readers do (getpwnam, /etc/passwd).
 *
 * collector_cmdline.c is included whole; its strdup
 * (a value of the file outlives the parse in the real program) is
 * redirected so that the harness frees those values after each input.
 * tests/unit/test_config_fuzz.c includes this file (FUZZ_REPLAY defined)
 * to replay the kept corpus and the findings through config_fuzz_one.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_FUZZ_KEPT 512
static char *config_fuzz_kept[CONFIG_FUZZ_KEPT];
static size_t config_fuzz_n_kept;

/* collector_cmdline.c's strdup: the copy is remembered, freed after the
 * input. Past CONFIG_FUZZ_KEPT lines of values, NULL: the reader says
 * "out of memory", as it would. */
static char *config_fuzz_strdup(const char *s)
{
	char *p;
	if (config_fuzz_n_kept == CONFIG_FUZZ_KEPT || !(p = strdup(s)))
		return NULL;
	return config_fuzz_kept[config_fuzz_n_kept++] = p;
}

#define strdup config_fuzz_strdup
#include "../../collector/collector_cmdline.c"
#undef strdup

#include "../../preload/base/config.h"

#define CONFIG_FUZZ_MAX_LINE 4094 /* read_config's buf, less '\n' and NUL */

static int config_fuzz_fd = -1;

/* A summary of what a parse set, to compare two parses. */
static void fingerprint(const struct cmdline *c, int rc, char *out,
			size_t cap)
{
	const struct collector_opts *o = &c->opts;
	const struct push_opts *p = &c->push;
#define S(x) ((x) ? (x) : "-")
	snprintf(out, cap,
		 "rc=%d %s %s %s %s %s %s %s fd=%d period=%llu merge=%d "
		 "pt=%d users=%zu groups=%zu noauth=%d hold=%llu shared=%d "
		 "gid=%u clients=%zu grace=%llu level=%d/%d %s %s labels=%zu "
		 "headers=%zu spool=%llu/%d",
		 rc, S(o->socket_path), S(o->output_dir), S(o->output_file),
		 S(o->summary_file), S(o->timeline_file), S(o->http_spec),
		 S(o->http_token), o->ready_fd,
		 (unsigned long long)o->period_ns, o->merge, o->per_thread,
		 o->n_allow_uids, o->n_allow_gids, o->http_no_auth,
		 (unsigned long long)o->hold_max, o->output_shared,
		 (unsigned)o->output_gid, o->max_clients,
		 (unsigned long long)o->exit_grace_ns, (int)c->level,
		 c->level_set, S(p->pyroscope_url), S(p->otlp_url),
		 p->n_labels, p->n_headers, (unsigned long long)p->spool_max,
		 c->spool_max_given);
#undef S
}

/* Parses file[0..len) as `pyprof-collector --config FILE` would; its
 * fingerprint in out. -1 if the harness could not run it. */
static int parse_file(const uint8_t *file, size_t len, char *out, size_t cap)
{
	struct cmdline c = { .opts = { .ready_fd = -1,
				       .hold_max = DEFAULT_HOLD_MAX },
			     .push = { .spool_max = PUSH_SPOOL_MAX_DEFAULT },
			     .level = LOG_INFO };
	char path[64], prog[] = "pyprof-collector", opt[] = "--config";
	char *argv[] = { prog, opt, path, NULL };
	int rc;

	if (config_fuzz_fd < 0) {
		config_fuzz_fd = memfd_create("config-fuzz", MFD_CLOEXEC);
		if (config_fuzz_fd < 0 || fchmod(config_fuzz_fd, 0600) < 0)
			return -1;
	}
	if (ftruncate(config_fuzz_fd, 0) < 0 ||
	    pwrite(config_fuzz_fd, file, len, 0) != (ssize_t)len)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", config_fuzz_fd);
	optind = 0; /* getopt_long starts afresh */
	rc = cmdline_parse(&c, 3, argv);
	fingerprint(&c, rc, out, cap);
	push_opts_free(&c.push);
	while (config_fuzz_n_kept)
		free(config_fuzz_kept[--config_fuzz_n_kept]);
	log_set_prefix(PROG);
	return 0;
}

/* The longest line of d[0..len), '\n' not counted. */
static size_t longest_line(const uint8_t *d, size_t len)
{
	size_t best = 0, start = 0;
	for (size_t i = 0; i <= len; i++)
		if (i == len || d[i] == '\n') {
			if (i - start > best)
				best = i - start;
			start = i + 1;
		}
	return best;
}

/* d[0..len) without its comment lines (first non-blank '#'), into out. */
static size_t drop_comments(const uint8_t *d, size_t len, uint8_t *out)
{
	size_t n = 0, start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && d[i] != '\n')
			continue;
		size_t j = start;
		while (j < i && (d[j] == ' ' || d[j] == '\t'))
			j++;
		if (j == i || d[j] != '#') {
			size_t end = i < len ? i + 1 : i;
			memcpy(out + n, d + start, end - start);
			n += end - start;
		}
		start = i + 1;
	}
	return n;
}

static const char *collector_config(const uint8_t *d, size_t len)
{
	char a[2048], b[2048];
	uint8_t *plain;
	size_t n;
	int rc;

	if (parse_file(d, len, a, sizeof(a)) < 0)
		return NULL; /* the harness's memfd, not the reader */
	rc = atoi(a + 3);
	if (rc != -1 && rc != USAGE_EXIT)
		return "a result that is neither 'go on' nor a usage error";
	if (longest_line(d, len) > CONFIG_FUZZ_MAX_LINE) {
		if (rc != USAGE_EXIT)
			return "a line longer than the reader takes was accepted";
		return NULL;
	}
	/* A NUL byte would end the line early for the string functions:
	 * not a text file */
	if (memchr(d, 0, len)) {
		if (rc != USAGE_EXIT)
			return "a file with a NUL byte was accepted";
		return NULL;
	}
	/* Comments change nothing. */
	if (!(plain = malloc(len + 1)))
		return NULL;
	n = drop_comments(d, len, plain);
	if (n == len || parse_file(plain, n, b, sizeof(b)) < 0) {
		free(plain);
		return NULL;
	}
	free(plain);
	if (strcmp(a, b) != 0)
		return "the file is read differently without its comments";
	return NULL;
}

/* ---- PYPROF_* --------------------------------------------------------- */

struct env {
	const char *d;
	size_t len;
	char value[4096];
	char asked[32][40]; /* the names looked up and set */
	size_t n_asked;
};

/* config_check's get: the first "NAME=value" line of the input. */
static const char *env_get(const char *name, void *arg)
{
	struct env *e = arg;
	size_t nl = strlen(name), start = 0;

	for (size_t i = 0; i <= e->len; i++) {
		if (i < e->len && e->d[i] != '\n')
			continue;
		const char *line = e->d + start;
		size_t ll = i - start;
		start = i + 1;
		if (ll <= nl || memcmp(line, name, nl) || line[nl] != '=')
			continue;
		ll -= nl + 1;
		if (memchr(line + nl + 1, 0, ll))
			ll = strlen(line + nl + 1); /* as a C string would */
		if (ll >= sizeof(e->value))
			ll = sizeof(e->value) - 1;
		memcpy(e->value, line + nl + 1, ll);
		e->value[ll] = 0;
		if (e->n_asked < 32)
			snprintf(e->asked[e->n_asked++], 40, "%s", name);
		return e->value;
	}
	return NULL;
}

static int forbidden_signal(int s)
{
	return s == SIGKILL || s == SIGSTOP || s == SIGSEGV || s == SIGBUS ||
	       s == SIGPROF || s == SIGILL || s == SIGFPE || s == SIGTRAP ||
	       s == SIGABRT;
}

static const char *settings_ok(const struct config *c)
{
	if (c->hz < 1 || c->hz > PYPROF_MAX_HZ)
		return "PYPROF_HZ out of range";
	if (c->max_depth < 1 || c->max_depth > PYPROF_MAX_MAX_DEPTH)
		return "PYPROF_MAX_DEPTH out of range";
	if (c->mode != CONFIG_MODE_CPU && c->mode != CONFIG_MODE_WALL)
		return "PYPROF_MODE out of range";
	if (c->cpu_source < CONFIG_SOURCE_AUTO ||
	    c->cpu_source > CONFIG_SOURCE_CLOCK)
		return "PYPROF_CPU_SOURCE out of range";
	if (c->native < CONFIG_NATIVE_OFF || c->native > CONFIG_NATIVE_ALL)
		return "PYPROF_NATIVE out of range";
	if ((c->disabled | c->children | c->asyncio | c->opcodes | c->start) &
	    ~1)
		return "a flag that is not 0 or 1";
	if (c->heap_rate > (1ull << 30))
		return "PYPROF_HEAP_RATE past 1 GiB";
	if (c->heap_snapshot_s < 0 || c->heap_snapshot_s > 86400)
		return "PYPROF_HEAP_SNAPSHOT_SECONDS out of range";
	if (c->waits_ns > 1000000000ull)
		return "PYPROF_WAITS past 1 s";
	if (c->toggle_sig && (c->toggle_sig < 1 || c->toggle_sig > SIGRTMAX ||
			      forbidden_signal(c->toggle_sig) ||
			      (c->toggle_sig > 31 && c->toggle_sig < SIGRTMIN)))
		return "PYPROF_TOGGLE_SIGNAL a signal it refuses";
	if (c->collector_uid < -1 || c->collector_uid > 4294967294L)
		return "PYPROF_COLLECTOR_USER out of range";
	if (!memchr(c->socket, 0, sizeof(c->socket)) || c->socket[0] != '/')
		return "a socket path that is not absolute or not terminated";
	return NULL;
}

static const char *environment(const uint8_t *d, size_t len)
{
	struct env e = { .d = (const char *)d, .len = len };
	struct config c[2];
	char err[2][256];
	int rc[2];

	for (int i = 0; i < 2; i++) {
		memset(&c[i], 0xa5, sizeof(c[i])); /* padding too: compared */
		e.n_asked = 0;
		rc[i] = config_check(&c[i], env_get, &e, err[i], sizeof(err[i]));
	}
	if (rc[0] != rc[1] || strcmp(err[0], err[1]) ||
	    (rc[0] == 0 && memcmp(&c[0], &c[1], sizeof(c[0]))))
		return "the same variables read twice into different settings";
	if (rc[0] == 0)
		return settings_ok(&c[0]);
	if (rc[0] != -EINVAL)
		return "a result that is neither 0 nor -EINVAL";
	if (!err[0][0] || strchr(err[0], '\n'))
		return "a refusal whose line is empty or holds a newline";
	if (!strncmp(err[0], "XDG_RUNTIME_DIR=", 16))
		return NULL; /* the default socket path, from the environment */
	for (size_t i = 0; i < e.n_asked; i++) {
		size_t n = strlen(e.asked[i]);
		if (!strncmp(err[0], e.asked[i], n) && err[0][n] == '=')
			return NULL;
	}
	return "a refusal that names no variable that was set";
}

/* Runs one input; NULL, or the invariant it broke. */
static const char *config_fuzz_one(const uint8_t *data, size_t size)
{
	char mode;

	if (size == 0)
		return NULL;
	mode = data[0] == 'C' || data[0] == 'E' ? (char)data[0]
						 : (data[0] & 1 ? 'E' : 'C');
	if (mode == 'C')
		return collector_config(data + 1, size - 1);
	return environment(data + 1, size - 1);
}

#ifndef FUZZ_REPLAY
#include <sanitizer/common_interface_defs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = config_fuzz_one(data, size);
	if (why) {
		/* stderr is /dev/null under -close_fd_mask=2: the sanitizer's
		 * report goes where libFuzzer's does */
		__sanitizer_report_error_summary(why);
		abort();
	}
	return 0;
}
#endif
