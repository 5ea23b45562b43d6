/*
 * test_symtab.c - the shared symbol tables' compaction (collector/daemon/symtab.h)
 * and what proc.h builds on it: renumbering every id a process holds,
 * the automatic trigger, windows, and the "collector away" gap.
 *
 * Model test (docs/conventions.md, "Tests"): each process's stacks are kept as
 * plain strings ("file:func:line;..." from the root) computed from the
 * symtab before compaction, and compared with the same strings computed
 * after it, through every kind of id a process keeps (its aggregate's
 * nodes, its sessions' id maps, its HELLO strings and thread names). The
 * size after compaction is compared with a fresh symtab into which only
 * the live processes' definitions were interned: the trivially right
 * answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/agg.h"
#include "check.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

#define START_NS 1700000000000000000ull
#define N_FUNCS 6

static struct proc_bytes bytes(const char *s)
{
	return (struct proc_bytes){ (const uint8_t *)s, strlen(s) };
}

/* ---- 1. symtab alone --------------------------------------------------------- */

static void test_symtab_rebuild(void)
{
	struct symtab *st = symtab_new();
	uint32_t s[8], f[4], l[4], n[6], x;
	char buf[16];

	for (int i = 0; i < 8; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		symtab_intern_string(st, buf, strlen(buf), &s[i]);
	}
	for (int i = 0; i < 4; i++) {
		symtab_intern_function(st, s[2 * i], s[2 * i], s[2 * i + 1],
				       i, &f[i]);
		symtab_intern_location(st, f[i], 100 + i, &l[i]);
	}
	/* Two branches: n0 > n1 > n2 and n0 > n3 > n4; n5 alone. */
	symtab_intern_node(st, 0, l[0], &n[0]);
	symtab_intern_node(st, n[0], l[1], &n[1]);
	symtab_intern_node(st, n[1], l[2], &n[2]);
	symtab_intern_node(st, n[0], l[3], &n[3]);
	symtab_intern_node(st, n[3], l[1], &n[4]);
	symtab_intern_node(st, 0, l[3], &n[5]);
	CHECK(symtab_n_entries(st) == 8 + 4 + 4 + 6, "1.1 entries counted");

	CHECK(symtab_gc_begin(st) == 0, "1.2 begin");
	symtab_gc_mark_node(st, n[4]); /* n4, n3, n0; l1 l3 l0 */
	symtab_gc_mark_string(st, s[5]);
	CHECK(symtab_gc_rebuild(st) == 0, "1.3 rebuild");
	CHECK(symtab_n_nodes(st) == 3, "1.4 three nodes kept");
	CHECK(symtab_n_locations(st) == 3, "1.5 three locations kept");
	CHECK(symtab_n_functions(st) == 3, "1.6 three functions kept");
	/* f0 (s0, s1), f1 (s2, s3), f3 (s6, s7), and s5. */
	CHECK(symtab_n_strings(st) == 7, "1.7 seven strings kept");

	uint32_t nn4 = symtab_gc_new_node(st, n[4]);
	uint32_t nn3 = symtab_gc_new_node(st, n[3]);
	uint32_t nn0 = symtab_gc_new_node(st, n[0]);
	uint32_t parent, lid, fid, name, sys, file;
	int64_t line, start;
	symtab_node(st, nn4, &parent, &lid);
	CHECK(parent == nn3, "1.8 parent renumbered");
	CHECK(nn0 < nn3 && nn3 < nn4, "1.9 old order kept");
	symtab_location(st, lid, &fid, &line);
	symtab_function(st, fid, &name, &sys, &file, &start);
	CHECK(line == 101 && start == 1, "1.10 location and function kept");
	CHECK(strcmp(symtab_string(st, name), "s2") == 0 &&
		      strcmp(symtab_string(st, file), "s3") == 0,
	      "1.11 strings follow");
	CHECK(strcmp(symtab_string(st, symtab_gc_new_string(st, s[5])),
		     "s5") == 0,
	      "1.12 a string marked alone");
	CHECK(symtab_node_depth(st, nn4) == 3, "1.13 depth kept");
	symtab_gc_end(st);

	/* The hashes were rebuilt: equal content finds the kept id, and
	 * new content gets the next one. */
	symtab_intern_string(st, "s5", 2, &x);
	CHECK(x <= 7 && strcmp(symtab_string(st, x), "s5") == 0,
	      "1.14 s5 found");
	CHECK(symtab_n_strings(st) == 7, "1.15 no duplicate of s5");
	symtab_intern_node(st, nn3, lid, &x);
	CHECK(x == nn4, "1.16 node found by (parent, location)");
	symtab_intern_string(st, "s4", 2, &x);
	CHECK(x == 8, "1.17 a new string takes the next id");
	symtab_free(st);
}

/* ---- 2. agg_renumber ------------------------------------------------------------ */

static uint32_t reverse_map(const void *arg, uint32_t node)
{
	return *(const uint32_t *)arg + 1 - node;
}

static void test_agg_renumber(void)
{
	struct agg *a = agg_new();
	const uint32_t n = 5000;
	const struct agg_entry *e;
	size_t pos = 0, bad = 0;

	/* label sets i % 5 (0: none) are renumbered by the same map */
	for (uint32_t i = 1; i <= n; i++)
		agg_add(a, i, i % 7, i % 3, i % 5, i, 2 * i);
	agg_renumber(a, reverse_map, reverse_map, &n);
	CHECK(agg_len(a) == n, "2.1 same number of keys");
	while ((e = agg_next(a, &pos))) {
		uint32_t i = n + 1 - e->node;
		bad += e->count != i || e->flags != i % 3 ||
		       e->labels != (i % 5 ? n + 1 - i % 5 : 0);
	}
	CHECK(bad == 0, "2.2 every entry carries its new node");
	/* Every key is found where it now lives: adding to it creates no
	 * new key. */
	for (uint32_t i = 1; i <= n; i++)
		agg_add(a, n + 1 - i, i % 7, i % 3,
			i % 5 ? n + 1 - i % 5 : 0, 1, 0);
	CHECK(agg_len(a) == n, "2.3 lookups find every renumbered key");
	CHECK(agg_total_count(a) == (uint64_t)n * (n + 1) / 2 + n,
	      "2.4 totals kept");
	agg_free(a);
}

/* ---- 3. processes ---------------------------------------------------------------- */

/* Opens a session for pid whose functions are named <tag>_f0.. in file
 * <tag>.py (a tag shared by two processes gives them equal symbols). */
static struct proc_session *open_proc(struct procs *reg, uint64_t pid,
				      uint64_t conn_seq)
{
	struct proc_bytes args[2] = { bytes("python3"), bytes("app.py") };
	struct proc_hello h = {
		.version = 1,
		.pid = pid,
		.start_unix_ns = START_NS + pid,
		.has_start_unix = 1,
		.start_mono_ns = 1000,
		.has_start_mono = 1,
		.period_ns = 10000000,
		.pyversion = bytes("3.11.7"),
		.exe = bytes("/usr/bin/python3"),
		.comm = bytes("python3"),
		.args = args,
		.n_args = 2,
		.conn_seq = conn_seq,
	};
	struct proc_session *s = NULL;
	char err[ERR_LEN];
	int resumed;
	proc_session_open(reg, &h, &s, &resumed, err);
	return s;
}

/* Definitions: strings 1 file, 2..N_FUNCS+1 names, N_FUNCS+2 a thread
 * name; functions, locations 1..N_FUNCS; nodes: a chain 1..N_FUNCS. */
static int define(struct proc_session *s, const char *tag, uint64_t tid)
{
	char buf[64], err[ERR_LEN];
	int rc = 0;
	snprintf(buf, sizeof(buf), "%s.py", tag);
	rc |= proc_def_string(s, 1, (const uint8_t *)buf, strlen(buf), err);
	for (int i = 0; i < N_FUNCS; i++) {
		snprintf(buf, sizeof(buf), "%s_f%d", tag, i);
		rc |= proc_def_string(s, (uint64_t)i + 2, (const uint8_t *)buf,
				      strlen(buf), err);
	}
	snprintf(buf, sizeof(buf), "%s-thread", tag);
	rc |= proc_def_string(s, N_FUNCS + 2, (const uint8_t *)buf,
			      strlen(buf), err);
	for (uint64_t i = 1; i <= N_FUNCS; i++) {
		rc |= proc_def_function(s, i, i + 1, i + 1, 1, i * 10, err);
		rc |= proc_def_location(s, i, i, i * 10 + 1, err);
		rc |= proc_def_node(s, i, i - 1, i, err);
	}
	rc |= proc_def_thread(s, 1, tid, N_FUNCS + 2, err);
	return rc;
}

static int add(struct proc_session *s, uint64_t node, uint64_t count)
{
	struct proc_sample r = { node, 1, 0, count, count * 10000000, 0, 0, 0 };
	uint64_t clock = 1000;
	char err[ERR_LEN];
	return proc_check_samples(s, &r, 1, 0, err) |
	       proc_add_samples(s, &clock, &r, 1, err);
}

/* The process's samples as text, one "stack count" per aggregate entry,
 * sorted, plus its HELLO strings and thread names: everything a profile
 * is made of. */
static char *describe(const struct symtab *st, const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	const struct agg_entry *e;
	size_t pos = 0, n = 0, len = 0;
	char **lines = calloc(agg_len(proc_agg(p)) + 1, sizeof(*lines));
	char *out = malloc(1 << 16);

	while ((e = agg_next(proc_agg(p), &pos))) {
		char *line = malloc(4096);
		size_t l = 0;
		for (uint32_t nid = e->node, lid, fid, name, sys, file; nid;) {
			int64_t ln, start;
			symtab_node(st, nid, &nid, &lid);
			symtab_location(st, lid, &fid, &ln);
			symtab_function(st, fid, &name, &sys, &file, &start);
			l += (size_t)snprintf(line + l, 4096 - l, "%s:%s:%lld;",
					      symtab_string(st, file),
					      symtab_string(st, name),
					      (long long)ln);
		}
		snprintf(line + l, 4096 - l, " %llu",
			 (unsigned long long)e->count);
		lines[n++] = line;
	}
	for (size_t i = 0; i < n; i++) /* insertion sort: few entries */
		for (size_t j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0;
		     j--) {
			char *t = lines[j];
			lines[j] = lines[j - 1];
			lines[j - 1] = t;
		}
	len += (size_t)snprintf(out + len, (1 << 16) - len, "%s %s %s",
				symtab_string(st, in->exe_sid),
				symtab_string(st, in->comm_sid),
				symtab_string(st, in->pyversion_sid));
	for (size_t i = 0; i < in->n_args; i++)
		len += (size_t)snprintf(out + len, (1 << 16) - len, " %s",
					symtab_string(st, in->arg_sids[i]));
	for (uint32_t t = 1; t <= proc_n_threads(p); t++) {
		uint64_t tid;
		uint32_t name;
		proc_thread(p, t, &tid, &name);
		len += (size_t)snprintf(out + len, (1 << 16) - len,
					"\nthread %llu %s",
					(unsigned long long)tid,
					symtab_string(st, name));
	}
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(out + len, (1 << 16) - len, "\n%s",
					lines[i]);
		free(lines[i]);
	}
	free(lines);
	return out;
}

static void test_compact_processes(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = procs_new(st);
	struct proc_session *s[4];
	struct proc *p[4];
	char *before[4];
	const char *tags[4] = { "alpha", "beta", "alpha", "gamma" };
	int rc = 0;

	for (int i = 0; i < 4; i++) {
		s[i] = open_proc(reg, 100 + (uint64_t)i, 0);
		CHECK_OR_RETURN(s[i], "3.1 session opened", );
		rc |= define(s[i], tags[i], 100 + (uint64_t)i);
		rc |= add(s[i], N_FUNCS, 5 + (uint64_t)i);
		rc |= add(s[i], 2, 1);
		p[i] = proc_session_proc(s[i]);
	}
	CHECK(rc == 0, "3.2 fed");
	/* beta ends and is forgotten; gamma's connection ends but the
	 * process is kept (as for --merge): its aggregate alone holds its
	 * symbols. */
	proc_session_close(s[1]);
	procs_remove(reg, p[1]);
	proc_session_close(s[3]);
	s[1] = s[3] = NULL;
	for (int i = 0; i < 4; i++)
		before[i] = i == 1 ? NULL : describe(st, p[i]);
	uint64_t n_before = symtab_n_entries(st);

	CHECK(procs_compact(reg) == 0, "3.3 compacted");
	for (int i = 0; i < 4; i++) {
		if (i == 1)
			continue;
		char *after = describe(st, p[i]);
		CHECK(strcmp(before[i], after) == 0,
		      "3.4 a process reads the same after compaction");
		if (strcmp(before[i], after))
			fprintf(stderr, "before:\n%s\nafter:\n%s\n", before[i],
				after);
		free(after);
		free(before[i]);
	}
	/* The model: a fresh symtab with only the live definitions. gamma,
	 * without a session, keeps what its aggregate names (its two stacks
	 * cover the whole chain, so every location, function and name) and
	 * its thread's name: all it defined, as alpha does; HELLO's strings
	 * are shared. */
	struct symtab *model = symtab_new();
	struct procs *mreg = procs_new(model);
	struct proc_session *m1 = open_proc(mreg, 1, 0);
	struct proc_session *m2 = open_proc(mreg, 2, 0);
	define(m1, "alpha", 1);
	define(m2, "gamma", 2);
	CHECK(symtab_n_entries(st) == symtab_n_entries(model),
	      "3.5 compaction keeps exactly what the live processes hold");
	fprintf(stderr, "   entries: %llu before, %llu after, %llu model\n",
		(unsigned long long)n_before,
		(unsigned long long)symtab_n_entries(st),
		(unsigned long long)symtab_n_entries(model));
	proc_session_close(m1);
	proc_session_close(m2);
	procs_free(mreg);
	symtab_free(model);

	/* Live sessions go on with their old connection ids: new samples,
	 * a new node under an old parent, a rename to an old string. */
	char err[ERR_LEN];
	rc = add(s[0], N_FUNCS, 1);
	rc |= proc_def_node(s[0], N_FUNCS + 1, 3, 1, err);
	rc |= add(s[0], N_FUNCS + 1, 2);
	rc |= proc_def_thread(s[0], 1, 100, 2, err);
	CHECK(rc == 0, "3.6 a live session carries on after compaction");
	char *d = describe(st, p[0]);
	CHECK(strstr(d, "alpha.py:alpha_f0:11;alpha.py:alpha_f2:31;"
			"alpha.py:alpha_f1:21;alpha.py:alpha_f0:11; 2") != NULL,
	      "3.7 the new node hangs under the renumbered parent");
	CHECK(strstr(d, "alpha.py:alpha_f5:61;alpha.py:alpha_f4:51;"
			"alpha.py:alpha_f3:41;alpha.py:alpha_f2:31;"
			"alpha.py:alpha_f1:21;alpha.py:alpha_f0:11; 6") != NULL,
	      "3.8 the old stack counts on (5 + 1)");
	free(d);
	proc_session_close(s[0]);
	proc_session_close(s[2]);
	procs_free(reg);
	symtab_free(st);
}

/* ---- 4. the automatic trigger ------------------------------------------------- */

static void test_churn_stays_bounded(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = procs_new(st);
	struct proc_session *keep = open_proc(reg, 1, 0);
	uint64_t peak = 0, n_compactions = 0;
	char tag[32];

	define(keep, "resident", 1);
	add(keep, N_FUNCS, 1);
	for (uint64_t i = 0; i < 20000; i++) {
		struct proc_session *s = open_proc(reg, 1000 + i, 0);
		snprintf(tag, sizeof(tag), "short%llu", (unsigned long long)i);
		define(s, tag, 1000 + i);
		add(s, N_FUNCS, 1);
		struct proc *p = proc_session_close(s);
		procs_remove(reg, p);
		n_compactions += (uint64_t)procs_maybe_compact(reg, 0);
		if (symtab_n_entries(st) > peak)
			peak = symtab_n_entries(st);
	}
	fprintf(stderr, "   20000 processes: peak %llu entries, %llu "
			"compactions, %llu at the end\n",
		(unsigned long long)peak,
		(unsigned long long)n_compactions,
		(unsigned long long)symtab_n_entries(st));
	CHECK(n_compactions > 0, "4.1 compactions happened");
	CHECK(peak < PROCS_GC_MIN_ENTRIES + 100,
	      "4.2 the table never grows past the trigger and one process");
	char *d = describe(st, proc_session_proc(keep));
	CHECK(strstr(d, "resident.py:resident_f5:61;") != NULL &&
		      strstr(d, "thread 1 resident-thread") != NULL,
	      "4.3 the resident process is intact");
	free(d);
	/* Nothing left but the resident one: a compaction now keeps just
	 * its entries. */
	procs_compact(reg);
	/* HELLO: exe, comm (= argv[0]), version, app.py. */
	CHECK(symtab_n_entries(st) == 4 + (N_FUNCS + 2) + 3 * N_FUNCS,
	      "4.4 compaction down to the resident's entries");
	proc_session_close(keep);
	procs_free(reg);
	symtab_free(st);
}

/* ---- 5. windows and the gap ---------------------------------------------------- */

static void test_window_and_gap(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = procs_new(st);
	struct proc_session *s = open_proc(reg, 7, 0);
	struct proc *p = proc_session_proc(s);
	struct proc_bye bye = { 0 };
	char err[ERR_LEN];
	uint64_t n, v;

	define(s, "win", 7);
	add(s, N_FUNCS, 40);
	proc_add_lost(s, WIRE_LOST_BUFFER, 10, 100, err);
	CHECK(proc_info(p)->win_samples == 40 && proc_info(p)->win_lost == 10,
	      "5.1 window counts");
	proc_window_reset(p, START_NS + 5);
	CHECK(agg_len(proc_agg(p)) == 0 && proc_info(p)->win_samples == 0,
	      "5.2 reset empties the window");
	proc_lost(p, WIRE_LOST_BUFFER, &n, &v);
	CHECK(n == 0, "5.3 reset empties the window's lost counts");
	CHECK(proc_info(p)->n_samples == 40 && proc_info(p)->n_lost == 10,
	      "5.4 totals survive the reset");
	CHECK(proc_info(p)->win_start_unix_ns == START_NS + 5,
	      "5.5 next window's start");
	add(s, N_FUNCS, 20);
	/* Queued 90: 40 + 20 received, 30 never seen. (The 10 the library
	 * dropped for want of buffer are reported as lost and are not in
	 * B_SAMPLES: preload/agent/agent.c takes them out.) */
	bye.samples = 90;
	bye.has_samples = 1;
	proc_set_bye(s, &bye);
	proc_lost(p, PROC_LOST_AWAY, &n, &v);
	CHECK(n == 30 && v == 30 * 10000000ull,
	      "5.6 the gap counted as collector away");
	CHECK(procs_total_lost(reg) == 40, "5.7 and in the summary's lost");
	proc_set_bye(s, &bye);
	proc_lost(p, PROC_LOST_AWAY, &n, &v);
	CHECK(n == 30, "5.8 a second BYE adds nothing");
	proc_session_close(s);

	/* A reconnection is the first this collector hears of pid 8. */
	s = open_proc(reg, 8, 3);
	p = proc_session_proc(s);
	CHECK(proc_info(p)->joined_late, "5.9 joined late");
	CHECK(proc_info(p)->win_start_unix_ns > START_NS + 8,
	      "5.10 its window starts when we heard of it");
	proc_session_close(s);
	procs_free(reg);
	symtab_free(st);
}

/* PYPROF_NATIVE: native locations keep their mapping through a
 * compaction, renumbered with it; unreferenced mappings go. */
static void test_native_mappings(void)
{
	struct symtab *st = symtab_new();
	uint32_t file, bid, name, fid, keep_m, drop_m, keep_l, drop_l;
	struct symtab_mapping m = { 0x1000, 0x2000, 0x400, 0, 0,
				    SYMTAB_MAP_FUNCTIONS };
	CHECK_OR_RETURN(st != NULL, "7.0 symtab", );
	symtab_intern_string(st, "/lib/a.so", 9, &file);
	symtab_intern_string(st, "beef", 4, &bid);
	symtab_intern_string(st, "f", 1, &name);
	symtab_intern_function(st, name, name, 0, 0, &fid);
	m.file = file;
	m.build_id = bid;
	symtab_intern_mapping(st, &m, &drop_m);
	m.start = 0x5000;
	m.limit = 0x6000;
	symtab_intern_mapping(st, &m, &keep_m);
	symtab_intern_native_location(st, fid, 3, drop_m, 0x1100, &drop_l);
	symtab_intern_native_location(st, 0, 0, keep_m, 0x5100, &keep_l);
	uint32_t again;
	m.flags = SYMTAB_MAP_LINES;
	symtab_intern_mapping(st, &m, &again);
	CHECK(again == keep_m, "7.1 the same mapping interns to its id");
	CHECK(symtab_gc_begin(st) == 0, "7.2 begin");
	symtab_gc_mark_location(st, keep_l);
	CHECK(symtab_gc_rebuild(st) == 0, "7.3 rebuild");
	uint32_t nl = symtab_gc_new_location(st, keep_l);
	uint32_t nm = symtab_gc_new_mapping(st, keep_m);
	symtab_gc_end(st);
	uint32_t mid, lfid;
	uint64_t addr;
	int64_t line;
	struct symtab_mapping got;
	symtab_location_native(st, nl, &mid, &addr);
	symtab_location(st, nl, &lfid, &line);
	symtab_mapping(st, mid, &got);
	CHECK(symtab_n_mappings(st) == 1 && mid == nm && addr == 0x5100 &&
		      lfid == 0,
	      "7.4 the marked location keeps its (renumbered) mapping");
	CHECK(got.start == 0x5000 && got.limit == 0x6000 &&
		      got.offset == 0x400 &&
		      got.flags == (SYMTAB_MAP_FUNCTIONS | SYMTAB_MAP_LINES) &&
		      !strcmp(symtab_string(st, got.file), "/lib/a.so") &&
		      !strcmp(symtab_string(st, got.build_id), "beef"),
	      "7.5 its fields and strings survive");
	CHECK(symtab_n_functions(st) == 0,
	      "7.6 the unmarked location's function is gone");
	symtab_free(st);
}

/* ---- 6. the reference bound ---------------------------------------------------- */

static void test_refs_bound(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = procs_new(st);
	struct proc_session *s = open_proc(reg, 9, 0);
	uint64_t one, bound;

	define(s, "again", 9);
	one = procs_refs_bound(reg);
	proc_session_close(s);
	/* A process that reconnects a hundred times replays the same
	 * definitions: the bound must not grow a hundredfold. */
	for (int i = 1; i <= 100; i++) {
		s = open_proc(reg, 9, (uint64_t)i);
		define(s, "again", 9);
		proc_session_close(s);
	}
	bound = procs_refs_bound(reg);
	CHECK(bound <= 2 * one, "6.1 replays do not inflate the bound");
	CHECK(bound >= one, "6.2 the closed session still counts");
	procs_remove(reg, procs_first(reg));
	CHECK(procs_refs_bound(reg) == 0, "6.3 nothing once it is gone");
	procs_free(reg);
	symtab_free(st);
}

int main(void)
{
	test_symtab_rebuild();
	test_agg_renumber();
	test_compact_processes();
	test_churn_stays_bounded();
	test_window_and_gap();
	test_native_mappings();
	test_refs_bound();
	return check_summary();
}
