/*
 * http_index.c - the collector's /debug/pprof/ page: a row per live
 * process its reader may see (command line, Python, sampling, mode,
 * rate, uptime, counts, the links to its views), the links for all, and
 * the HTML escaping every page of http_pprof.c shares (pprof_html).
 *
 * Called by http_pprof.c's routing (see http_pprof_impl.h); runs on the
 * collector's loop thread.
 */
#include "http/http.h"
#include "http/http_pprof_impl.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/clock.h"
#include "common/html.h"
#include "daemon/daemon_api.h"
#include "pyprof/wire.h"

/* What the index page shows of each process's command line, and how many
 * processes it lists: a member's program may say a megabyte of command
 * line, and thousands of them would make a page of gigabytes, built on
 * the loop while every client waits. The whole line is still at
 * cmdline?pid=. */
#define INDEX_CMD_MAX 4096
#define INDEX_MAX_ROWS 1000

/* s as HTML text, at most *left of its bytes (never half a UTF-8
 * character); *left is what remains. When s did not fit, an ellipsis
 * ends it and 1 is returned, else 0. */
static int html_n(FILE *out, const char *s, size_t *left)
{
	size_t n = strlen(s);
	const char *end = s + n;
	if (n > *left) {
		end = s + *left;
		while (end > s && ((unsigned char)*end & 0xc0) == 0x80)
			end--;
	}
	*left -= (size_t)(end - s);
	for (; s < end; s++) {
		if (html_entity(out, *s))
			continue;
		fputc((unsigned char)*s < 0x20 ? ' ' : *s, out);
	}
	if (!*end)
		return 0;
	*left = 0;
	fputs("&hellip;", out);
	return 1;
}

void pprof_html(FILE *out, const char *s)
{
	size_t left = SIZE_MAX;
	html_n(out, s, &left);
}

static void fmt_uptime(char *buf, size_t cap, uint64_t ns)
{
	uint64_t s = ns / 1000000000u;
	if (s < 60)
		snprintf(buf, cap, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, cap, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, cap, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
}

static void index_row(struct pprof_server *ps, FILE *out,
		      const struct proc *p, unsigned secs, uint64_t now)
{
	const struct proc_info *in = proc_info(p);
	const char *mode = in->mode == WIRE_MODE_WALL ? "wall" : "cpu";
	char up[32];
	uint64_t hz = hz_of(in->achieved_ns ? in->achieved_ns : in->period_ns);

	fmt_uptime(up, sizeof(up),
		   now > in->start_unix_ns ? now - in->start_unix_ns : 0);
	/* As the process last said: sampling by itself or for a profile
	 * being taken, or dormant (PYPROF_START=off) until asked. */
	unsigned holds = 0;
	int on = ps->ctl ? control_proc_sampling(ps->ctl, in->pid, &holds) : -1;
	const char *sampling = on < 0 ? "?" : on ? "on"
						 : "dormant";
	/* The top table's link, each share with its 95% interval; in CPU
	 * mode the table has the split. */
	char top[160];
	snprintf(top, sizeof(top),
		 "<a class=\"top\" href=\"top?seconds=%u&amp;pid=%" PRIu64
		 "&amp;confidence=95\">%s</a> ",
		 secs, in->pid,
		 in->mode == WIRE_MODE_WALL ? "top (95%)"
					    : "top (split, 95%)");
	fprintf(out, "<tr class=\"proc\" data-pid=\"%" PRIu64 "\"><td class="
		     "\"pid\">%" PRIu64 "</td><td class=\"command\">",
		in->pid,
		in->pid);
	size_t left = INDEX_CMD_MAX, i;
	for (i = 0; i < in->n_args; i++) {
		if (!left) {
			fputs(" &hellip;", out);
			break;
		}
		if (i)
			fputc(' ', out);
		if (html_n(out, symtab_string(ps->st, in->arg_sids[i]), &left))
			break;
	}
	if (i < in->n_args) { /* cut short: where the rest is */
		fprintf(out, " <a href=\"cmdline?pid=%" PRIu64 "\">", in->pid);
		fprintf(out, "(%zu arguments)</a>", in->n_args);
	}
	if (!in->n_args)
		html_n(out, symtab_string(ps->st, in->comm_sid), &left);
	fprintf(out, "</td><td class=\"python\">");
	pprof_html(out, symtab_string(ps->st, in->pyversion_sid));
	fprintf(out, "</td><td class=\"sampling\">%s</td>", sampling);
	fprintf(out, "<td class=\"mode\">%s</td><td class=\"rate\">%" PRIu64 " Hz</td><td class=\"uptime\">%s</td><td class="
		     "\"samples\">%" PRIu64 "</td><td class=\"dropped\">%" PRIu64 "</td><td>"
		     "<a class=\"profile\" href=\"profile?seconds=%u&amp;pid=%" PRIu64 "\">profile</a> "
		     "<a class=\"flamegraph\" href=\"/flamegraph?seconds=%u&amp;"
		     "pid=%" PRIu64 "\">flame graph</a> %s"
		     "<a class=\"cmdline\" href=\"cmdline?pid=%" PRIu64 "\">cmdline</a></td></tr>\n",
		mode, hz, up, in->n_samples - in->n_waits, in->n_lost, secs,
		in->pid, secs, in->pid, top, in->pid);
}

/* The page's head: its title and style, what it is, the links for all
 * processes, the table's header row. */
static void index_head(FILE *out, const struct who *who, unsigned secs)
{
	fprintf(out,
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
		"<title>/debug/pprof/</title>\n<style>"
		"body{font-family:sans-serif}"
		"table{border-collapse:collapse}"
		"td,th{padding:2px 8px;text-align:left;"
		"border-bottom:1px solid #ddd}"
		"td.command{font-family:monospace;max-width:40em;"
		"overflow-wrap:anywhere}</style></head>\n<body>\n"
		"<h1>/debug/pprof/</h1>\n"
		"<p>pyprof-collector: Python processes streaming samples to "
		"it. Profiles cover the next %u seconds (change with "
		"<a href=\"?seconds=10\">?seconds=</a>).</p>\n",
		secs);
	if (who->own)
		fprintf(out, "<p id=\"own\">The members' view: only the "
			     "processes of your user (uid %u) are listed, "
			     "profiled and named here.</p>\n",
			who->uid);
	fprintf(out,
		"<p>%s: "
		"<a id=\"all-profile\" href=\"profile?seconds=%u\">CPU "
		"profile</a> | "
		"<a id=\"all-wall\" href=\"profile?seconds=%u&amp;mode=wall\">"
		"wall profile</a> | "
		"<a id=\"all-flamegraph\" href=\"/flamegraph?seconds=%u\">"
		"flame graph</a> | "
		"<a id=\"all-top\" href=\"top?seconds=%u&amp;confidence=95\">"
		"top (split, 95%%)</a> | "
		"<a href=\"heap\">heap</a> | <a href=\"allocs\">allocs</a> | "
		"<a id=\"all-block\" href=\"block?seconds=%u\">block</a> | "
		"<a id=\"all-mutex\" href=\"mutex?seconds=%u\">mutex</a> | "
		"%s<a href=\"symbol\">symbol</a></p>\n"
		"<table id=\"processes\">\n<tr><th>pid</th><th>command</th>"
		"<th>Python</th><th>sampling</th><th>mode</th><th>rate</th>"
		"<th>uptime</th>"
		"<th>samples</th><th>dropped</th><th>views</th></tr>\n",
		who->own ? "Your processes" : "All processes", secs, secs,
		secs, secs, secs, secs,
		/* the collector's own command line: not a member's */
		who->own ? "" : "<a href=\"cmdline\">cmdline</a> | ");
}

/* The page's foot: how many processes were listed (n), and how to read
 * a profile from the command line. */
static void index_foot(struct pprof_server *ps, FILE *out,
		       const struct who *who, size_t n)
{
	if (who->own) {
		/* the others' windows are theirs: not even how many */
		fprintf(out, "</table>\n<p id=\"count\">%zu process%s of "
			     "yours connected.</p>\n"
			     "<p id=\"hint\">Read a profile with <code>curl "
			     "--unix-socket SOCKET -o cpu.pb.gz "
			     "\"http://localhost/debug/pprof/profile?seconds="
			     "30\"</code> and <code>go tool pprof -top "
			     "cpu.pb.gz</code>, or <code>pyprof top "
			     "--collector</code>: no token, the kernel names "
			     "you.</p>\n</body></html>\n",
			n, n == 1 ? "" : "es");
		return;
	}
	fprintf(out, "</table>\n<p id=\"count\">%zu process%s connected; "
		     "%zu profile%s being taken; %zu waiting for a scraper's next "
		     "request.</p>\n"
		     "<p id=\"hint\">Read a profile with <code>go tool pprof "
		     "\"http://%sHOST:PORT/debug/pprof/profile?seconds=30\""
		     "</code>%s</p>\n"
		     "</body></html>\n",
		n, n == 1 ? "" : "es", windows_len(ps->ws),
		windows_len(ps->ws) == 1 ? "" : "s", windows_standbys(ps->ws),
		/* the token goes in the URL go tool pprof is given; the page
		 * names where it is kept rather than printing it */
		ps->need_token ? "pyprof:TOKEN@" : "",
		ps->need_token ? ", TOKEN being the access token: the file "
				 "&lt;socket&gt;.http-token beside the "
				 "collector's socket (this page's "
				 "<code>?token=</code>)."
			       : ".");
}

void pprof_index(struct pprof_server *ps, const struct who *who,
		 struct http_conn *c, unsigned secs)
{
	char *buf = NULL;
	size_t len = 0, n = 0;
	uint64_t now = now_unix_ns();
	FILE *out;

	out = open_memstream(&buf, &len);
	if (!out) {
		http_error(c, 500, "out of memory");
		return;
	}
	index_head(out, who, secs);
	for (const struct proc *p = procs_first(ps->reg); p;
	     p = proc_next(p)) {
		if (!proc_is_live(p) || !visible(who, p))
			continue;
		if (n++ < INDEX_MAX_ROWS)
			index_row(ps, out, p, secs, now);
	}
	if (n > INDEX_MAX_ROWS) {
		fputs("<tr id=\"more\"><td colspan=\"10\">", out);
		fprintf(out, "%zu more not listed", n - INDEX_MAX_ROWS);
		fputs("</td></tr>\n", out);
	}
	index_foot(ps, out, who, n);
	if (fclose(out) != 0) {
		free(buf);
		http_error(c, 500, "out of memory");
		return;
	}
	http_respond(c, 200, "text/html; charset=utf-8", NULL, buf, len);
	free(buf);
}