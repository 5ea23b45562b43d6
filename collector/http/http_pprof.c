/*
 * http_pprof.c - the endpoints of pyprof-collector --http (see
 * http_pprof.h): routing, parameters and their errors, the index page,
 * and the glue from a profile window (window.h) to its answer.
 *
 * A profile request opens a window and leaves the connection waiting
 * (http.h's WAIT state) with a small context that links the two: the
 * window's callback answers through it, the connection's cancel function
 * closes the window if the client goes first. Exactly one of the two
 * happens, and it frees the context.
 *
 * Choices where Go's net/http/pprof has no Python equivalent, or where
 * we offer more than it does:
 * - seconds must be 1..WINDOW_MAX_SECONDS (Go silently takes 30 for 0 or
 *   garbage; an explicit error tells the user their request was not what
 *   they got). Default 30, as Go.
 * - mode: a profile holds one kind of time. Without mode, a pid's own
 *   mode, else cpu; processes in the other mode are left out (the index
 *   page shows each one's mode).
 * - heap/allocs: the processes' heap profiles (heapagg.h) as
 *   they are now, Go's heap profile; allocs with alloc_space first.
 * - service=NAME (the process name, exactly) and command=TEXT (part of
 *   the command line): the complement of pid, so that one collector can
 *   be scraped as several services; not with pid (400).
 * - Scrapes tile (window.h): a profile request's scrape key is the
 *   client's address without its port, its User-Agent and the request
 *   target as sent (path and query), so that two scrapers of the same
 *   URL, or two URLs of one scraper, each keep their own series.
 *   /flamegraph and /debug/pprof/top are not keyed (a browser reloading
 *   them wants the next N seconds).
 * - /debug/pprof/top: pyprof top's table of the window, in CPU mode with
 *   --split's columns (docs/reading.md), so that the split is seen
 *   without a tool; Go has no such page, and its index does not link
 *   one.
 *
 * The index page and the HTML escaping of the pages are http_index.c's;
 * the structs both share are http_pprof_impl.h's.
 *
 * Runs on the collector's loop thread.
 */
#include "http/http_pprof.h"
#include "http/http_pprof_impl.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/clock.h"
#include "daemon/daemon_api.h"
#include "common/log.h"
#include "pyprof/envcheck.h"
#include "pyprof/wire.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "views/view_stats.h"

#define DEFAULT_SECONDS 30
#define PARAM_LEN 64
#define DEFAULT_TOP_ROWS 100
#define MAX_TOP_ROWS 100000

/* What a window's answer is. */
enum pd_view {
	PD_PROFILE, /* the gzipped pprof */
	PD_FLAME,   /* the SVG flame graph */
	PD_TOP	    /* pyprof top's table, as HTML */
};


/* A request waiting for its window. */
struct pending {
	struct pprof_server *ps;
	struct http_conn *conn;
	struct window *w;
	enum pd_view view;
	int waits; /* enum pprof_waits: /block or /mutex */
	unsigned seconds;
	unsigned long n_rows; /* PD_TOP */
	double level;	      /* PD_TOP: ?confidence=, 0 if not asked */
};

/* The live process with this pid that who may see, or NULL. */
static const struct proc *find_pid(const struct pprof_server *ps,
				   const struct who *who, uint64_t pid)
{
	for (const struct proc *p = procs_first(ps->reg); p; p = proc_next(p))
		if (proc_is_live(p) && proc_info(p)->pid == pid)
			return visible(who, p) ? p : NULL;
	return NULL;
}

/* ---- parameters ------------------------------------------------------------------ */

/* A query parameter, or def when absent. 1 found, 0 absent; on a
 * malformed one answers 400 and returns -1. */
static int param(struct http_conn *c, const struct http_req *r,
		 const char *key, char *out, size_t cap)
{
	int rc = http_query_get(r->query, key, out, cap);
	if (rc < 0)
		http_error(c, 400, "malformed query parameter '%s'", key);
	return rc;
}

/* seconds=N: 1..WINDOW_MAX_SECONDS, default DEFAULT_SECONDS. 0 or -1
 * (answered). */
static int param_seconds(struct http_conn *c, const struct http_req *r,
			 unsigned *seconds)
{
	char v[PARAM_LEN];
	uint64_t n;
	int rc = param(c, r, "seconds", v, sizeof(v));
	if (rc < 0)
		return -1;
	if (rc == 0) {
		*seconds = DEFAULT_SECONDS;
		return 0;
	}
	if (http_parse_uint(v, UINT32_MAX, &n) < 0 || n < 1 ||
	    n > WINDOW_MAX_SECONDS) {
		http_error(c, 400, "seconds must be a whole number from 1 to "
				   "%d, not '%s'",
			   WINDOW_MAX_SECONDS, v);
		return -1;
	}
	*seconds = (unsigned)n;
	return 0;
}

/* pid=P (optional; 0 when absent): a live process, else 404. */
static int param_pid(struct pprof_server *ps, const struct who *who,
		     struct http_conn *c, const struct http_req *r,
		     uint64_t *pid, const struct proc **proc)
{
	char v[PARAM_LEN];
	int rc = param(c, r, "pid", v, sizeof(v));
	*pid = 0;
	*proc = NULL;
	if (rc <= 0)
		return rc;
	if (http_parse_uint(v, INT32_MAX, pid) < 0 || *pid == 0) {
		http_error(c, 400, "pid must be a process id, not '%s'", v);
		return -1;
	}
	*proc = find_pid(ps, who, *pid);
	if (!*proc) {
		/* another member's process: the same words as none */
		http_error(c, 404, "no process with pid %" PRIu64 " is "
				   "connected to this collector%s (see /debug/pprof/)",
			   *pid, who->own ? " for your user" : "");
		return -1;
	}
	return 0;
}

/* One name of service= or command= into out (WINDOW_NAME_LEN bytes;
 * "" when absent): 1 to max bytes, no control characters. 0 or -1
 * (answered). */
static int param_name(struct http_conn *c, const struct http_req *r,
		      const char *key, size_t max, const char *what,
		      char *out)
{
	char v[HTTP_MAX_LINE];
	int rc = param(c, r, key, v, sizeof(v));
	size_t n;
	int ctl = 0;

	out[0] = 0;
	if (rc <= 0)
		return rc;
	n = strlen(v);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			ctl = 1;
	if (ctl || n == 0 || n > max) {
		http_error(c, 400, "%s must be %s: 1 to %zu bytes without "
				   "control characters, not '%s'",
			   key, what, max,
			   ctl ? "(control characters)" : v);
		return -1;
	}
	memcpy(out, v, n + 1);
	return 0;
}

/* service=NAME, command=TEXT into f (see window.h), and not with a pid.
 * 0 or -1 (answered). */
static int param_names(struct http_conn *c, const struct http_req *r,
		       uint64_t pid, struct window_filter *f)
{
	/* The name is the kernel's comm: at most 15 bytes. */
	if (param_name(c, r, "service", 15, "a process name (the process "
					    "label)",
		       f->service) < 0 ||
	    param_name(c, r, "command", WINDOW_NAME_LEN - 1, "text in the "
							     "command line",
		       f->command) < 0)
		return -1;
	if (pid && (f->service[0] || f->command[0])) {
		http_error(c, 400, "pid selects one process: service and "
				   "command cannot be combined with it");
		return -1;
	}
	return 0;
}

/* The window's filter from pid, service, command and mode. 0 or -1
 * (answered). */
static int param_filter(struct pprof_server *ps, const struct who *who,
			struct http_conn *c, const struct http_req *r,
			struct window_filter *f)
{
	char v[PARAM_LEN];
	const struct proc *p;
	int rc;

	if (param_pid(ps, who, c, r, &f->pid, &p) < 0 ||
	    param_names(c, r, f->pid, f) < 0)
		return -1;
	rc = param(c, r, "mode", v, sizeof(v));
	if (rc < 0)
		return -1;
	if (rc == 0) {
		f->mode = p ? proc_info(p)->mode : WIRE_MODE_CPU;
		return 0;
	}
	if (strcmp(v, "cpu") == 0)
		f->mode = WIRE_MODE_CPU;
	else if (strcmp(v, "wall") == 0)
		f->mode = WIRE_MODE_WALL;
	else {
		http_error(c, 400, "mode must be cpu or wall, not '%s'", v);
		return -1;
	}
	if (p && proc_info(p)->mode != f->mode) {
		http_error(c, 400, "pid %" PRIu64 " samples in %s mode, not %s",
			   f->pid, proc_info(p)->mode == WIRE_MODE_WALL ? "wall" : "cpu", v);
		return -1;
	}
	return 0;
}

/* ---- profile and flamegraph: windows ----------------------------------------------- */

/* "pid P, N s of CPU time", or "All processes, ...": a page's title. */
static void window_title(char *buf, size_t cap, const struct pending *pd,
			 const struct window_filter *f)
{
	const char *kind = f->mode == WIRE_MODE_WALL ? "wall" : "CPU";

	if (f->pid)
		snprintf(buf, cap, "pid %" PRIu64 ", %u s of %s time", f->pid,
			 pd->seconds, kind);
	else if (f->own)
		snprintf(buf, cap, "Your processes (uid %u), %u s of %s time",
			 f->uid, pd->seconds, kind);
	else
		snprintf(buf, cap, "All processes, %u s of %s time",
			 pd->seconds, kind);
}

static void answer_flame(struct pending *pd, const struct window_filter *f,
			 void *data, size_t len)
{
	struct view_profile *vp = NULL;
	char err[ERR_LEN], title[160];
	char *svg = NULL;
	size_t svg_len = 0;
	FILE *out = NULL;
	int rc;

	rc = view_read_mem(data, len, &vp, err);
	if (rc < 0)
		goto out;
	window_title(title, sizeof(title), pd, f);
	struct view_flame_opts o = { .title = title };
	out = open_memstream(&svg, &svg_len);
	if (!out) {
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	rc = view_flame(out, vp, &o, err);
	if (fclose(out) != 0 && rc == 0) {
		rc = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
	}
out:
	if (rc < 0)
		http_error(pd->conn, 500, "cannot draw the flame graph: %s",
			   err);
	else
		http_respond(pd->conn, 200, "image/svg+xml; charset=utf-8",
			     NULL, svg, svg_len);
	free(svg);
	view_free(vp);
}


/* pyprof top's table of the window (top --split in CPU mode: the window
 * holds one kind of time, and only CPU samples carry the time label),
 * escaped in a <pre id="top">. */
static void answer_top(struct pending *pd, const struct window_filter *f,
		       void *data, size_t len)
{
	struct view_profile *vp = NULL;
	char err[ERR_LEN] = "out of memory", title[160];
	char *table = NULL, *page = NULL;
	size_t table_len = 0, page_len = 0;
	FILE *out = NULL;
	int rc;

	rc = view_read_text_mem(data, len, &vp, err);
	if (rc < 0)
		goto out;
	struct view_top_opts o = { .n_rows = pd->n_rows,
				   .split = f->mode != WIRE_MODE_WALL,
				   .level = pd->level };
	rc = -ENOMEM;
	out = open_memstream(&table, &table_len);
	if (!out)
		goto out;
	rc = view_top(out, vp, &o, err);
	if (fclose(out) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0)
		goto out;
	window_title(title, sizeof(title), pd, f);
	rc = -ENOMEM;
	out = open_memstream(&page, &page_len);
	if (!out)
		goto out;
	fprintf(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		     "<title>top: %s</title></head>\n<body>\n<h1>%s</h1>\n",
		title, title);
	if (o.split)
		fputs("<p>cum is a function's time anywhere on the stack; "
		      "python, native and system split it: the shares of the "
		      "total it spent in the interpreter, in C called from "
		      "Python, and in the kernel (pyprof top --split).</p>\n",
		      out);
	fputs("<pre id=\"top\">", out);
	/* pprof_html() makes line breaks spaces (attributes, cells): keep the
	 * table's own */
	for (char *line = table, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = 0;
		pprof_html(out, line);
		fputc('\n', out);
	}
	fputs("</pre>\n</body></html>\n", out);
	rc = fclose(out) != 0 ? -ENOMEM : 0;
out:
	if (rc < 0)
		http_error(pd->conn, 500, "cannot make the table: %s", err);
	else
		http_respond(pd->conn, 200, "text/html; charset=utf-8", NULL,
			     page, page_len);
	free(table);
	free(page);
	view_free(vp);
}

static void on_window(void *arg, int status, void *data, size_t len,
		      const struct window_filter *f)
{
	struct pending *pd = arg;
	if (status < 0)
		http_error(pd->conn, 500, "could not build the profile: %s",
			   strerror(-status));
	else if (pd->view == PD_FLAME)
		answer_flame(pd, f, data, len);
	else if (pd->view == PD_TOP)
		answer_top(pd, f, data, len);
	else
		http_respond(pd->conn, 200, "application/octet-stream",
			     pd->waits == PPROF_WAITS_BLOCK
				     ? "Content-Disposition: attachment; "
				       "filename=\"block\"\r\n"
			     : pd->waits == PPROF_WAITS_MUTEX
				     ? "Content-Disposition: attachment; "
				       "filename=\"mutex\"\r\n"
				     : "Content-Disposition: attachment; "
				       "filename=\"profile\"\r\n",
			     data, len);
	free(data);
	free(pd);
}

static void on_cancel(void *arg)
{
	struct pending *pd = arg;
	window_cancel(pd->w);
	free(pd);
}

/* The scrape key of request r from c (see the top), malloc'd: the
 * client's address without its port, the User-Agent, the target. NULL
 * when out of memory (the request is then a one-off). */
static char *scrape_key(struct http_conn *c, const struct http_req *r)
{
	const char *peer = http_conn_peer(c);
	const char *colon = strrchr(peer, ':');
	int host_len = colon ? (int)(colon - peer) : (int)strlen(peer);
	char *key = NULL;

	if (asprintf(&key, "%.*s\n%.*s\n%.*s", host_len, peer,
		     (int)r->user_agent.len, r->user_agent.p,
		     (int)r->target.len, r->target.p) < 0)
		return NULL;
	return key;
}

/* rate=: block and mutex profiles' rate, as PYPROF_WAITS takes it but
 * never off (absent: the default). 0 or -1 (answered). */
static int param_rate(struct http_conn *c, const struct http_req *r,
		      uint64_t *rate_ns)
{
	char v[PARAM_LEN];
	unsigned long long ns = 0;
	int rc = param(c, r, "rate", v, sizeof(v));
	*rate_ns = 0;
	if (rc <= 0)
		return rc;
	if (config_waits_rate(v, &ns) < 0 || !ns) {
		http_error(c, 400, "rate must be a duration from 1ns to 1s "
				   "with its unit (ns, us, ms), such as 100us, not "
				   "'%s'",
			   v);
		return -1;
	}
	*rate_ns = ns;
	return 0;
}

/* A window's filter for a block or mutex profile (waits, enum
 * pprof_waits): pid, service, command and rate; mode does not apply
 * (every process's waits, whatever its mode). 0 or -1 (answered). */
static int param_waits(struct pprof_server *ps, const struct who *who,
		       struct http_conn *c, const struct http_req *r,
		       int waits, struct window_filter *f)
{
	const struct proc *p;
	if (param_pid(ps, who, c, r, &f->pid, &p) < 0 ||
	    param_names(c, r, f->pid, f) < 0 ||
	    param_rate(c, r, &f->waits_ns) < 0)
		return -1;
	f->waits = waits;
	return 0;
}

/* n=ROWS for /debug/pprof/top: 1..MAX_TOP_ROWS, default
 * DEFAULT_TOP_ROWS. 0 or -1 (answered). */
static int param_rows(struct http_conn *c, const struct http_req *r,
		      unsigned long *rows)
{
	char v[PARAM_LEN];
	uint64_t n;
	int rc = param(c, r, "n", v, sizeof(v));

	*rows = DEFAULT_TOP_ROWS;
	if (rc <= 0)
		return rc;
	if (http_parse_uint(v, UINT32_MAX, &n) < 0 || n < 1 ||
	    n > MAX_TOP_ROWS) {
		http_error(c, 400, "n must be a number of rows from 1 to %d, "
				   "not '%s'",
			   MAX_TOP_ROWS, v);
		return -1;
	}
	*rows = (unsigned long)n;
	return 0;
}

/* confidence=L for /debug/pprof/top: the intervals' level (pyprof top
 * --confidence), 0 when absent. 0 or -1 (answered). */
static int param_level(struct http_conn *c, const struct http_req *r,
		       double *level)
{
	char v[PARAM_LEN];
	int rc = param(c, r, "confidence", v, sizeof(v));

	*level = 0;
	if (rc <= 0)
		return rc;
	if (stats_parse_level(v, level) < 0) {
		http_error(c, 400, "confidence must be a level from 50 to "
				   "99.99 (percent), not '%s'",
			   v);
		return -1;
	}
	return 0;
}

/* /debug/pprof/profile (PD_PROFILE, waits 0), /flamegraph (PD_FLAME),
 * /debug/pprof/top (PD_TOP) and /debug/pprof/block, /debug/pprof/mutex
 * (waits): a window. */
static void serve_window(struct pprof_server *ps, const struct who *who,
			 struct http_conn *c, const struct http_req *r,
			 enum pd_view view, int waits)
{
	struct window_filter f = { .own = who->own, .uid = who->uid };
	struct pending *pd;
	unsigned seconds;
	unsigned long rows = 0;
	double level = 0;
	char *key = NULL;

	if (param_seconds(c, r, &seconds) < 0)
		return;
	if (view == PD_TOP &&
	    (param_rows(c, r, &rows) < 0 || param_level(c, r, &level) < 0))
		return;
	if (waits ? param_waits(ps, who, c, r, waits, &f) < 0
		  : param_filter(ps, who, c, r, &f) < 0)
		return;
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		http_error(c, 500, "out of memory");
		return;
	}
	pd->ps = ps;
	pd->conn = c;
	pd->view = view;
	pd->waits = waits;
	pd->seconds = seconds;
	pd->n_rows = rows;
	pd->level = level;
	if (view == PD_PROFILE)
		key = scrape_key(c, r);
	pd->w = window_open(ps->ws, &f, seconds, key, on_window, pd);
	free(key);
	if (!pd->w) {
		int e = errno;
		free(pd);
		if (e == EBUSY)
			http_error(c, 503, "%d profiles are being taken "
					   "already; try again later",
				   WINDOW_MAX);
		else
			http_error(c, 500, "out of memory");
		return;
	}
	http_set_cancel(c, on_cancel, pd);
}

/* ---- heap and allocs -------------------------------------------------------- */

/*
 * The in-use (heap) or allocation (allocs) profile of pid (0: every
 * process with heap data) into a malloc'd gzipped pprof in *data: Go's
 * heap profile (pprof.h), allocs with alloc_space as its default sample
 * type, as Go's /debug/pprof/allocs. Allocation values cover each
 * process's current window (its life without --period), in-use is now.
 * Returns 0, or -ENOENT when no process has heap data. Go's ?seconds=N
 * (a delta of two profiles) and ?gc= are not served.
 */
static int heap_profile(struct pprof_server *ps, const char *kind,
			const struct window_filter *f, void **data,
			size_t *len)
{
	struct pprof_opts po = { .heap = 1, .proc_labels = 1, .heap_allocs = strcmp(kind, "allocs") == 0 };
	const struct proc **list;
	size_t n = 0;
	int rc;

	*data = NULL;
	*len = 0;
	list = calloc(procs_len(ps->reg) + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	for (struct proc *p = procs_first(ps->reg); p; p = proc_next(p)) {
		if (f->pid && proc_info(p)->pid != f->pid)
			continue;
		if (!window_names_match(ps->st, f, p))
			continue;
		if (heapagg_has_data(proc_heap(p)))
			list[n++] = p;
	}
	rc = n ? pprof_build(ps->st, list, n, &po, data, len, NULL) : -ENOENT;
	free(list);
	return rc;
}

static void serve_heap(struct pprof_server *ps, const struct who *who,
		       struct http_conn *c, const struct http_req *r,
		       const char *kind)
{
	const struct proc *p;
	struct window_filter f = { .own = who->own, .uid = who->uid };
	uint64_t pid;
	void *data;
	size_t len;
	char disp[96];

	if (param_pid(ps, who, c, r, &pid, &p) < 0 ||
	    param_names(c, r, pid, &f) < 0)
		return;
	f.pid = pid;
	int rc = heap_profile(ps, kind, &f, &data, &len);
	if (rc == -ENOENT) {
		if (pid)
			http_error(c, 404, "pid %" PRIu64 " does not sample "
					   "its heap (start it with PYPROF_HEAP_RATE)",
				   pid);
		else if (f.service[0] || f.command[0])
			http_error(c, 404, "no process of this service "
					   "samples its heap (start them with "
					   "PYPROF_HEAP_RATE)");
		else if (who->own)
			http_error(c, 404,
				   "none of your processes samples its heap "
				   "(start them with PYPROF_HEAP_RATE)");
		else
			http_error(c, 404, "no process with heap sampling on "
					   "(start them with PYPROF_HEAP_RATE)");
		return;
	}
	if (rc < 0) {
		http_error(c, 500, "could not build the %s profile: %s", kind,
			   strerror(-rc));
		return;
	}
	snprintf(disp, sizeof(disp), "Content-Disposition: attachment; "
				     "filename=\"%s\"\r\n",
		 kind);
	http_respond(c, 200, "application/octet-stream", disp, data, len);
	free(data);
}

/* ---- cmdline and symbol -------------------------------------------------------------- */

static void serve_cmdline(struct pprof_server *ps, const struct who *who,
			  struct http_conn *c, const struct http_req *r)
{
	const struct proc *p;
	uint64_t pid;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (param_pid(ps, who, c, r, &pid, &p) < 0)
		return;
	if (!p && who->own) {
		/* Go's answer is the server's own command line, which may
		 * hold --http-token: the token's holders' alone */
		http_error(c, 404, "cmdline without pid= is the collector's "
				   "own: ask for one of your processes' "
				   "(cmdline?pid=PID)");
		return;
	}
	out = open_memstream(&buf, &len);
	if (!out) {
		http_error(c, 500, "out of memory");
		return;
	}
	if (p) {
		const struct proc_info *in = proc_info(p);
		for (size_t i = 0; i < in->n_args; i++) {
			if (i)
				fputc(0, out);
			fputs(symtab_string(ps->st, in->arg_sids[i]), out);
		}
	} else {
		/* Go's: the server's own arguments. */
		char tmp[4096];
		ssize_t n = 0;
		int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			while ((n = read(fd, tmp, sizeof(tmp))) > 0)
				fwrite(tmp, 1, (size_t)n, out);
			close(fd);
		}
	}
	if (fclose(out) != 0) {
		free(buf);
		http_error(c, 500, "out of memory");
		return;
	}
	if (!p && len && buf[len - 1] == 0)
		len--; /* /proc ends every argument with NUL; Go joins */
	http_respond(c, 200, "text/plain; charset=utf-8", NULL, buf, len);
	free(buf);
}

static void serve_symbol(struct http_conn *c)
{
	static const char ans[] = "num_symbols: 1\n";
	http_respond(c, 200, "text/plain; charset=utf-8", NULL, ans,
		     sizeof(ans) - 1);
}

/* ---- the index page: its seconds, then http_index.c's page ---- */

static void serve_index(struct pprof_server *ps, const struct who *who,
			struct http_conn *c, const struct http_req *r)
{
	unsigned secs;

	if (param_seconds(c, r, &secs) < 0)
		return;
	pprof_index(ps, who, c, secs);
}

/* ---- routing ------------------------------------------------------------------------------ */

static void redirect(struct http_conn *c, const char *to)
{
	char hdr[128];
	snprintf(hdr, sizeof(hdr), "Location: %s\r\n", to);
	http_respond(c, 301, "text/html; charset=utf-8", hdr, "", 0);
}

static void handle(void *arg, struct http_conn *c, const struct http_req *r,
		   const char *body, size_t body_len)
{
	struct pprof_server *ps = arg;
	struct who who = { 0 };
	uid_t uid;
	char path[256];
	int get = http_str_eq(r->method, "GET") ||
		  http_str_eq(r->method, "HEAD");
	int post = http_str_eq(r->method, "POST");

	(void)body;
	(void)body_len;
	if (http_conn_peer_uid(c, &uid) == 0) { /* --http-members */
		who.own = 1;
		who.uid = (unsigned)uid;
	}
	if (http_decode(r->path, 0, path, sizeof(path)) < 0) {
		http_error(c, 404, "404 page not found");
		return;
	}
	if (!get && !(post && strcmp(path, "/debug/pprof/symbol") == 0)) {
		http_respond(c, 405, "text/plain; charset=utf-8",
			     strcmp(path, "/debug/pprof/symbol") == 0
				     ? "Allow: GET, HEAD, POST\r\n"
				       "X-Go-Pprof: 1\r\n"
				     : "Allow: GET, HEAD\r\nX-Go-Pprof: 1\r\n",
			     "method not allowed\n", 19);
		return;
	}
	if (strcmp(path, "/") == 0 || strcmp(path, "/debug/pprof") == 0)
		redirect(c, "/debug/pprof/");
	else if (strcmp(path, "/debug/pprof/") == 0)
		serve_index(ps, &who, c, r);
	else if (strcmp(path, "/debug/pprof/profile") == 0)
		serve_window(ps, &who, c, r, PD_PROFILE, 0);
	else if (strcmp(path, "/flamegraph") == 0)
		serve_window(ps, &who, c, r, PD_FLAME, 0);
	else if (strcmp(path, "/debug/pprof/top") == 0)
		serve_window(ps, &who, c, r, PD_TOP, 0);
	else if (strcmp(path, "/debug/pprof/block") == 0)
		serve_window(ps, &who, c, r, PD_PROFILE, PPROF_WAITS_BLOCK);
	else if (strcmp(path, "/debug/pprof/mutex") == 0)
		serve_window(ps, &who, c, r, PD_PROFILE, PPROF_WAITS_MUTEX);
	else if (strcmp(path, "/debug/pprof/heap") == 0)
		serve_heap(ps, &who, c, r, "heap");
	else if (strcmp(path, "/debug/pprof/allocs") == 0)
		serve_heap(ps, &who, c, r, "allocs");
	else if (strcmp(path, "/debug/pprof/cmdline") == 0)
		serve_cmdline(ps, &who, c, r);
	else if (strcmp(path, "/debug/pprof/symbol") == 0)
		serve_symbol(c);
	else if (strncmp(path, "/debug/pprof/", 13) == 0)
		http_error(c, 404, "Unknown profile");
	else
		http_error(c, 404, "404 page not found");
}

/* ---- lifetime -------------------------------------------------------------------------------- */

int pprof_server_start(struct loop *loop, struct symtab *st,
		       struct procs *reg, struct control *ctl,
		       const char *spec, const char *token,
		       struct pprof_server **out, char *err)
{
	struct pprof_server *ps = calloc(1, sizeof(*ps));
	int rc;

	*out = NULL;
	if (!ps || !(ps->ws = windows_new(loop, st, reg, ctl))) {
		free(ps);
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	ps->loop = loop;
	ps->st = st;
	ps->reg = reg;
	ps->ctl = ctl;
	ps->need_token = token != NULL;
	rc = spec ? http_listen(loop, spec, token, handle, ps, &ps->http, err)
		  : 0;
	if (rc < 0) {
		windows_free(ps->ws);
		free(ps);
		return rc;
	}
	*out = ps;
	return 0;
}

int pprof_server_members(struct pprof_server *ps, const char *path,
			 http_peer_fn check, void *check_arg, char *err)
{
	assert(!ps->members);
	return http_listen_peers(ps->loop, path, check, check_arg, handle, ps,
				 &ps->members, err);
}

const char *pprof_server_addr(const struct pprof_server *ps)
{
	return ps->http ? http_server_addr(ps->http) : NULL;
}

const char *pprof_server_members_addr(const struct pprof_server *ps)
{
	return ps->members ? http_server_addr(ps->members) : NULL;
}

void pprof_server_free(struct pprof_server *ps)
{
	if (!ps)
		return;
	http_free(ps->http); /* cancels waiting requests: their windows */
	http_free(ps->members);
	windows_free(ps->ws);
	free(ps);
}
