/*
 * test_pprof.c - the pprof builder (collector/daemon/pprof.h), checked by
 * decoding its output.
 *
 * Processes are fed through proc.h's session API (no socket), the profile
 * is built, gunzipped with zlib and unpacked with protobuf-c, and then
 * checked field by field against what was fed: pprof's validity rules
 * (string 0 is "", non-zero unique ids, no dangling references, one value
 * per sample type), Go's CPU-profile conventions, stacks leaf first,
 * labels, pseudo-frames for truncation and lost samples, comments, times.
 * The end-to-end test reads the same output with the real go tool pprof.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "profile.pb-c.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;

#define START_NS 1700000000000000000ull

struct world {
	struct symtab *st;
	struct procs *reg;
};

static void world_open(struct world *w)
{
	w->st = symtab_new();
	w->reg = procs_new(w->st);
}

static void world_close(struct world *w)
{
	procs_free(w->reg);
	symtab_free(w->st);
}

static struct proc_bytes bytes(const char *s)
{
	return (struct proc_bytes){ (const uint8_t *)s, strlen(s) };
}

/* A process with stack main > work > leaf (nodes 1, 2, 3) on two threads
 * (ref 1 "MainThread" tid pid, ref 2 unnamed tid pid+1), fed:
 *   7 samples on leaf, thread 1, GIL held;
 *   2 samples on work, thread 2, truncated;
 *   lost: 3 ring full. */
static struct proc *feed(struct world *w, uint64_t pid, unsigned mode,
			 uint64_t achieved_ns)
{
	struct proc_bytes args[2] = { bytes("python3"), bytes("t.py") };
	struct proc_hello h = {
		.version = 1,
		.pid = pid,
		.start_unix_ns = START_NS + pid,
		.has_start_unix = 1,
		.start_mono_ns = 1000,
		.has_start_mono = 1,
		.mode = mode,
		.period_ns = 10000000,
		.achieved_ns = achieved_ns,
		.pyversion = bytes("3.11.7"),
		.exe = bytes("/usr/bin/python3.11"),
		.comm = bytes("python3"),
		.args = args,
		.n_args = 2,
	};
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed, rc = 0;
	static const char *const strs[] = { "t.py", "main", "work", "leaf",
					    "MainThread" };

	if (proc_session_open(w->reg, &h, &s, &resumed, err) < 0)
		return NULL;
	for (int i = 0; i < 5; i++)
		rc |= proc_def_string(s, (uint64_t)i + 1,
				      (const uint8_t *)strs[i],
				      strlen(strs[i]), err);
	for (int i = 1; i <= 3; i++) {
		rc |= proc_def_function(s, (uint64_t)i, (uint64_t)i + 1,
					(uint64_t)i + 1, 1, (uint64_t)i * 10,
					err);
		rc |= proc_def_location(s, (uint64_t)i, (uint64_t)i,
					(uint64_t)i * 10 + 1, err);
		rc |= proc_def_node(s, (uint64_t)i, (uint64_t)i - 1,
				    (uint64_t)i, err);
	}
	rc |= proc_def_thread(s, 1, pid, 5, err);
	rc |= proc_def_thread(s, 2, pid + 1, 0, err);
	struct proc_sample recs[2] = {
		{ 3, 1, 100, 7, 70000000,
		  WIRE_SF_GIL | WIRE_SF_GIL_KNOWN | WIRE_SF_OFF_CPU, 0, 0 },
		{ 2, 2, 200, 2, 20000000, WIRE_SF_TRUNCATED, 0, 0 },
	};
	uint64_t clock = 1000 + 5000000000ull; /* 5 s after start */
	rc |= proc_check_samples(s, recs, 2, 0, err);
	rc |= proc_add_samples(s, &clock, recs, 2, err);
	rc |= proc_add_lost(s, WIRE_LOST_RING_FULL, 3, 30000000, err);
	struct proc *p = proc_session_proc(s);
	proc_session_close(s);
	return rc ? NULL : p;
}

/* Gunzips and unpacks a built profile. */
static Profile *decode(const void *gz, size_t len)
{
	static uint8_t raw[1 << 20];
	z_stream zs = { 0 };
	Profile *prof = NULL;
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return NULL;
	zs.next_in = (Bytef *)(uintptr_t)gz;
	zs.avail_in = (uInt)len;
	zs.next_out = raw;
	zs.avail_out = sizeof(raw);
	if (inflate(&zs, Z_FINISH) == Z_STREAM_END)
		prof = perftools__profiles__profile__unpack(
			NULL, zs.total_out, raw);
	inflateEnd(&zs);
	return prof;
}

static Profile *build(struct world *w, const struct proc *const *procs,
		      size_t n, struct pprof_stats *stats)
{
	void *gz = NULL;
	size_t len = 0;
	Profile *prof = NULL;
	if (pprof_build(w->st, procs, n, NULL, &gz, &len, stats) == 0)
		prof = decode(gz, len);
	free(gz);
	return prof;
}

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i]
						       : "<bad index>";
}

/* pprof's CheckValid rules, and our own invariants. */
static void check_valid(const Profile *p, const char *what)
{
	int ok = p->n_string_table > 0 && p->string_table[0][0] == 0;
	CHECK(ok, what);
	ok = p->n_sample_type == 2;
	for (size_t i = 0; i < p->n_sample && ok; i++)
		ok = p->sample[i]->n_value == 2;
	CHECK(ok, "every sample has one value per sample type");
	ok = 1;
	for (size_t i = 0; i < p->n_function; i++)
		ok &= p->function[i]->id == i + 1;
	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];
		ok &= l->id == i + 1 && l->n_line == 1 &&
		      l->line[0]->function_id >= 1 &&
		      l->line[0]->function_id <= p->n_function &&
		      (l->mapping_id == 0 || l->mapping_id == 1);
	}
	CHECK(ok, "ids dense from 1, lines point at functions");
	ok = 1;
	for (size_t i = 0; i < p->n_sample; i++)
		for (size_t j = 0; j < p->sample[i]->n_location_id; j++)
			ok &= p->sample[i]->location_id[j] >= 1 &&
			      p->sample[i]->location_id[j] <= p->n_location;
	CHECK(ok, "samples point at locations");
}

static const char *loc_func(const Profile *p, uint64_t loc)
{
	uint64_t f = p->location[loc - 1]->line[0]->function_id;
	return str(p, p->function[f - 1]->name);
}

static const Perftools__Profiles__Label *label(const Sample *s,
					       const Profile *p,
					       const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (strcmp(str(p, s->label[i]->key), key) == 0)
			return s->label[i];
	return NULL;
}

static int has_comment(const Profile *p, const char *text)
{
	for (size_t i = 0; i < p->n_comment; i++)
		if (strstr(str(p, p->comment[i]), text))
			return 1;
	return 0;
}

static void test_one_process(void)
{
	struct world w;
	struct pprof_stats stats;
	world_open(&w);
	const struct proc *p = feed(&w, 100, WIRE_MODE_CPU, 40000000);
	CHECK_OR_RETURN(p != NULL, "1.0 fed", );
	Profile *prof = build(&w, &p, 1, &stats);
	CHECK_OR_RETURN(prof != NULL, "1.1 builds, gunzips and unpacks", );
	check_valid(prof, "1.2 string 0 is empty");
	CHECK(strcmp(str(prof, prof->sample_type[0]->type), "samples") == 0 &&
		      strcmp(str(prof, prof->sample_type[0]->unit), "count") ==
			      0 &&
		      strcmp(str(prof, prof->sample_type[1]->type), "cpu") ==
			      0 &&
		      strcmp(str(prof, prof->sample_type[1]->unit),
			     "nanoseconds") == 0,
	      "1.3 sample types samples/count, cpu/nanoseconds");
	CHECK(prof->period_type &&
		      strcmp(str(prof, prof->period_type->type), "cpu") == 0 &&
		      prof->period == 10000000,
	      "1.4 period cpu/nanoseconds 10 ms");
	CHECK(prof->time_nanos == (int64_t)(START_NS + 100),
	      "1.5 time_nanos is the process start");
	CHECK(prof->duration_nanos == 5000000300ll,
	      "1.6 duration runs to the last sample (5 s + 300 ns)");
	CHECK(prof->n_mapping == 1 && prof->mapping[0]->has_functions &&
		      strcmp(str(prof, prof->mapping[0]->filename),
			     "/usr/bin/python3.11") == 0,
	      "1.7 one mapping, the executable, with functions");
	CHECK(prof->n_sample == 3 && stats.samples == 9 && stats.lost == 3,
	      "1.8 two stacks and one lost sample");

	int seen_leaf = 0, seen_trunc = 0, seen_lost = 0;
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Sample *s = prof->sample[i];
		const Perftools__Profiles__Label *pid = label(s, prof, "pid");
		CHECK(pid && pid->num == 100, "1.9 every sample has pid 100");
		if (s->value[0] == 7) {
			seen_leaf = 1;
			CHECK(s->value[1] == 70000000, "1.10 value kept");
			CHECK(s->n_location_id == 3 &&
				      strcmp(loc_func(prof, s->location_id[0]),
					     "leaf") == 0 &&
				      strcmp(loc_func(prof, s->location_id[2]),
					     "main") == 0,
			      "1.11 stack is leaf first");
			CHECK(prof->location[s->location_id[0] - 1]
					      ->line[0]
					      ->line == 31,
			      "1.12 line number kept");
			const Perftools__Profiles__Label *t =
				label(s, prof, "thread_id");
			const Perftools__Profiles__Label *n =
				label(s, prof, "thread_name");
			const Perftools__Profiles__Label *g =
				label(s, prof, "gil");
			CHECK(t && t->num == 100, "1.13 thread_id label");
			CHECK(n && strcmp(str(prof, n->str), "MainThread") ==
					      0,
			      "1.14 thread_name label");
			CHECK(g && strcmp(str(prof, g->str), "held") == 0,
			      "1.15 gil=held label");
			CHECK(!label(s, prof, "cpu_state"),
			      "1.16 no cpu_state label in cpu mode");
		} else if (s->value[0] == 2) {
			seen_trunc = 1;
			CHECK(s->n_location_id == 3 &&
				      strcmp(loc_func(prof, s->location_id[2]),
					     "[truncated]") == 0,
			      "1.17 truncated stack ends in [truncated]");
			CHECK(!label(s, prof, "thread_name") &&
				      !label(s, prof, "gil"),
			      "1.18 no name or gil label when unknown");
		} else if (s->value[0] == 3) {
			seen_lost = 1;
			CHECK(s->n_location_id == 1 &&
				      strcmp(loc_func(prof, s->location_id[0]),
					     "[lost: ring full]") == 0 &&
				      s->value[1] == 30000000,
			      "1.19 lost samples on a pseudo-frame");
		}
	}
	CHECK(seen_leaf && seen_trunc && seen_lost, "1.20 all three samples");
	CHECK(has_comment(prof, "command: python3 t.py"),
	      "1.21 command line comment");
	CHECK(has_comment(prof, "Python 3.11.7"), "1.22 Python version");
	CHECK(has_comment(prof, "sampling rate asked 100 Hz, achieved 25 Hz"),
	      "1.23 achieved rate comment");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	world_close(&w);
}

static void test_wall_and_merge(void)
{
	struct world w;
	world_open(&w);
	const struct proc *ps[2] = { feed(&w, 200, WIRE_MODE_WALL, 0),
				     feed(&w, 300, WIRE_MODE_WALL, 0) };
	CHECK_OR_RETURN(ps[0] && ps[1], "2.0 fed", );
	Profile *prof = build(&w, ps, 2, NULL);
	CHECK_OR_RETURN(prof != NULL, "2.1 merged profile builds", );
	check_valid(prof, "2.2 merged profile valid");
	CHECK(strcmp(str(prof, prof->sample_type[1]->type), "wall") == 0,
	      "2.3 wall/nanoseconds in wall mode");
	int pid200 = 0, pid300 = 0, off = 0, on = 0;
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Sample *s = prof->sample[i];
		const Perftools__Profiles__Label *pid = label(s, prof, "pid");
		const Perftools__Profiles__Label *cs =
			label(s, prof, "cpu_state");
		pid200 += pid && pid->num == 200;
		pid300 += pid && pid->num == 300;
		if (cs && strcmp(str(prof, cs->str), "off") == 0)
			off++;
		if (cs && strcmp(str(prof, cs->str), "on") == 0)
			on++;
	}
	CHECK(pid200 == 3 && pid300 == 3, "2.4 each process keeps its pid");
	CHECK(off == 2 && on == 2, "2.5 cpu_state off/on from the flag");
	CHECK(prof->time_nanos == (int64_t)(START_NS + 200),
	      "2.6 time_nanos is the earliest start");
	/* Both processes share the symtab: the merge lists each function
	 * once. */
	CHECK(prof->n_function == 5,
	      "2.7 three functions, [truncated] and [lost: ring full]");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	world_close(&w);
}

static void test_empty(void)
{
	struct world w;
	world_open(&w);
	Profile *prof = build(&w, NULL, 0, NULL);
	CHECK_OR_RETURN(prof != NULL, "3.1 an empty profile builds", );
	check_valid(prof, "3.2 empty profile valid");
	CHECK(prof->n_sample == 0 && prof->n_sample_type == 2,
	      "3.3 no samples, two sample types");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	world_close(&w);
}

/* pprof_opts.one_thread: only that thread's samples, no lost ones, and a
 * comment saying so (--per-thread). */
static void test_one_thread(void)
{
	struct world w;
	struct pprof_stats stats;
	struct pprof_opts po = { .one_thread = 1, .tid = 101 };
	void *gz = NULL;
	size_t len = 0;
	Profile *prof = NULL;

	world_open(&w);
	const struct proc *p = feed(&w, 100, WIRE_MODE_CPU, 0);
	CHECK_OR_RETURN(p != NULL, "4.1 fed", world_close(&w));
	if (pprof_build(w.st, &p, 1, &po, &gz, &len, &stats) == 0)
		prof = decode(gz, len);
	free(gz);
	CHECK_OR_RETURN(prof != NULL, "4.2 a one-thread profile builds",
			world_close(&w));
	check_valid(prof, "4.3 one-thread profile valid");
	int others = 0;
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Perftools__Profiles__Label *t =
			label(prof->sample[i], prof, "thread_id");
		others += !t || t->num != 101;
	}
	CHECK(prof->n_sample == 1 && others == 0 && stats.samples == 2 &&
		      stats.lost == 0,
	      "4.4 only thread 101's samples (2, truncated), no lost ones");
	CHECK(has_comment(prof, "thread 101 only"), "4.5 comment says so");
	perftools__profiles__profile__free_unpacked(prof, NULL);

	po.tid = 999; /* a thread the process does not have */
	gz = NULL;
	prof = NULL;
	if (pprof_build(w.st, &p, 1, &po, &gz, &len, &stats) == 0)
		prof = decode(gz, len);
	free(gz);
	CHECK(prof && prof->n_sample == 0 && stats.samples == 0,
	      "4.6 an unknown thread: a valid profile without samples");
	if (prof)
		perftools__profiles__profile__free_unpacked(prof, NULL);
	world_close(&w);
}

/* Defence in depth: stacks the decoder should have refused (a location
 * that is neither Python nor native, a node the symtab does not hold)
 * are left out and counted, and the rest of the profile is written. They
 * are put into a copy (proc.h), whose samples name symtab ids directly. */
static void test_refused(void)
{
	struct world w;
	struct pprof_stats stats;
	uint32_t lid, bad_node, leaf;
	world_open(&w);
	const struct proc *p = feed(&w, 300, WIRE_MODE_CPU, 0);
	CHECK_OR_RETURN(p != NULL, "5.0 fed", );
	struct proc *copy = proc_copy_new(p);
	CHECK_OR_RETURN(copy != NULL, "5.0 copy", );
	leaf = symtab_n_nodes(w.st); /* main > work > leaf */
	/* no function, no mapping, no address: names nothing */
	CHECK(symtab_intern_native_location(w.st, 0, 0, 0, 0, &lid) == 0 &&
		      symtab_intern_node(w.st, leaf, lid, &bad_node) == 0,
	      "5.1 a location naming nothing, under leaf");
	CHECK(proc_copy_add(copy, p, leaf, 1, 0, 0, 4, 40, 2000) == 0 &&
		      proc_copy_add(copy, p, bad_node, 1, 0, 0, 5, 50, 2000) ==
			      0 &&
		      proc_copy_add(copy, p, bad_node + 100, 1, 0, 0, 6, 60,
				    2000) == 0,
	      "5.2 one good stack and two bad ones");
	const struct proc *one = copy;
	Profile *prof = build(&w, &one, 1, &stats);
	CHECK_OR_RETURN(prof != NULL, "5.3 the profile is still written", );
	check_valid(prof, "5.4 and valid");
	CHECK(stats.n_refused == 2, "5.5 the two bad stacks are counted");
	CHECK(stats.samples == 4 && prof->n_sample == 1 &&
		      prof->sample[0]->value[0] == 4 &&
		      prof->sample[0]->n_location_id == 3,
	      "5.6 only the good stack is in it");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	proc_copy_free(copy);
	world_close(&w);
}

int main(void)
{
	test_one_process();
	test_wall_and_merge();
	test_empty();
	test_one_thread();
	test_refused();
	return check_summary();
}
