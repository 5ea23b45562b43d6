/*
 * test_merge.c - the native/Python stack merge (preload/native/merge.h).
 *
 * Hand-made cases first (one per rule of merge.h), then a model test
 * (docs/conventions.md, "Tests"): random true stacks, root first, interleaving
 * native frames (outside the interpreter, the interpreter's own, pyprof's
 * own) with eval-loop calls that each run a group of Python frames; the
 * two inputs the agent would see are derived from the truth, merged, and
 * compared with what the folding rule makes of the truth. Then the inputs
 * are damaged the ways unwinding goes wrong (an eval-loop frame missing,
 * one too many, an innermost eval loop not yet linked) and the output must
 * be either exact or the marked fallback, never a guessed order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "native/merge.h"

#define MAXF 256

/* A frame of a true stack: Python (id = its index among Python frames,
 * root first) or native (class, id = index among native frames). */
struct tframe {
	int py;
	int cls;
	int entry;
};

struct truth {
	struct tframe f[MAXF];
	int n;
};

/* Inputs derived from the truth (leaf first, as the agent has them). */
struct inputs {
	uint8_t py_entry[MAXF];
	uint8_t nat_class[MAXF];
	int n_py, n_nat;
	int nat_of[MAXF]; /* native root-first index -> truth position */
};

static void derive(const struct truth *t, struct inputs *in)
{
	int py_root[MAXF], nat_root[MAXF], np = 0, nn = 0;
	memset(in, 0, sizeof(*in));
	for (int i = 0; i < t->n; i++) {
		if (t->f[i].py)
			py_root[np++] = t->f[i].entry;
		else
			nat_root[nn++] = t->f[i].cls;
	}
	in->n_py = np;
	in->n_nat = nn;
	for (int r = 0; r < np; r++)
		in->py_entry[np - 1 - r] = (uint8_t)py_root[r];
	for (int r = 0; r < nn; r++)
		in->nat_class[nn - 1 - r] = (uint8_t)nat_root[r];
}

/* Runs the merge; returns its status and writes the output as a string of
 * tokens "P<root index>" / "N<root index>" / "M". */
static int run(const struct inputs *in, int keep_all, int nat_trunc,
	       int nat_failed, int py_complete, char *out, size_t cap)
{
	struct merge_in mi = {
		.py_entry = in->py_entry,
		.n_py = in->n_py,
		.py_complete = py_complete,
		.nat_class = in->nat_class,
		.n_nat = in->n_nat,
		.nat_truncated = nat_trunc,
		.nat_failed = nat_failed,
		.keep_all = keep_all,
	};
	struct merge_item items[2 * MAXF + 1];
	int n, st = merge_stacks(&mi, items, &n);
	size_t o = 0;
	out[0] = 0;
	for (int k = 0; k < n && o + 8 < cap; k++) {
		const struct merge_item *it = &items[k];
		if (it->kind == MERGE_PY)
			o += (size_t)snprintf(out + o, cap - o, "P%d ",
					      in->n_py - 1 - (int)it->index);
		else if (it->kind == MERGE_NATIVE)
			o += (size_t)snprintf(out + o, cap - o, "N%d ",
					      in->n_nat - 1 - (int)it->index);
		else
			o += (size_t)snprintf(out + o, cap - o, "M ");
	}
	return st;
}

/* What the rule makes of the truth (merge.h): root part kept, eval frames
 * replaced, interpreter frames folded between groups unless keep_all,
 * everything kept below the innermost group, pyprof's frames dropped. */
static void expected(const struct truth *t, int keep_all, char *out,
		     size_t cap)
{
	int groups_total = 0, g = 0, np = 0, nn = 0;
	size_t o = 0;
	for (int i = 0; i < t->n; i++)
		groups_total += t->f[i].py && t->f[i].entry;
	out[0] = 0;
	for (int i = 0; i < t->n && o + 8 < cap; i++) {
		const struct tframe *f = &t->f[i];
		if (f->py) {
			o += (size_t)snprintf(out + o, cap - o, "P%d ", np++);
			continue;
		}
		int id = nn++;
		if (f->cls == MERGE_EVAL && g < groups_total) {
			g++; /* replaced by the group that follows */
			continue;
		}
		if (f->cls == MERGE_SELF)
			continue;
		if (g == 0 || g == groups_total || f->cls == MERGE_OTHER ||
		    keep_all)
			o += (size_t)snprintf(out + o, cap - o, "N%d ", id);
	}
}

/* ---- hand-made cases ------------------------------------------------------ */

/* A truth from a spec string, root first: O I E S (native classes) and
 * p / P (Python frame; P starts a group). */
static void from_spec(struct truth *t, const char *spec)
{
	t->n = 0;
	for (const char *c = spec; *c; c++) {
		struct tframe f = { 0, 0, 0 };
		switch (*c) {
		case 'O':
			f.cls = MERGE_OTHER;
			break;
		case 'I':
			f.cls = MERGE_INTERP;
			break;
		case 'E':
			f.cls = MERGE_EVAL;
			break;
		case 'S':
			f.cls = MERGE_SELF;
			break;
		case 'P':
			f.py = 1;
			f.entry = 1;
			break;
		case 'p':
			f.py = 1;
			break;
		default:
			continue;
		}
		t->f[t->n++] = f;
	}
}

static void hand(const char *num, const char *spec, int keep_all,
		 int want_status, const char *want)
{
	struct truth t;
	struct inputs in;
	char got[1024], what[1200];
	from_spec(&t, spec);
	derive(&t, &in);
	int st = run(&in, keep_all, 0, 0, 1, got, sizeof(got));
	snprintf(what, sizeof(what), "%s %s -> want [%s] status %d, got [%s] "
				     "status %d",
		 num, spec, want, want_status, got, st);
	CHECK(st == want_status && !strcmp(got, want), what);
}

static void test_hand(void)
{
	/* <= 3.10: one frame per eval call; interpreter frames between
	 * folded, root part and leaf part kept */
	hand("1.1", "O I E P I E P I E P O", 0, MERGE_EXACT,
	     "N0 N1 P0 P1 P2 N7 ");
	/* 3.11+: groups; an extension between groups is kept */
	hand("1.2", "O E P p I O I E P p I", 0, MERGE_EXACT,
	     "N0 P0 P1 N3 P2 P3 N6 ");
	/* keep_all keeps the interpreter's frames between groups */
	hand("1.3", "O E P p I O I E P p I", 1, MERGE_EXACT,
	     "N0 P0 P1 N2 N3 N4 P2 P3 N6 ");
	/* the innermost eval loop not linked yet: kept as native */
	hand("1.4", "O E P I E", 0, MERGE_EXACT, "N0 P0 N2 N3 ");
	/* pyprof's own frames are dropped, even at the root */
	hand("1.5", "S O E P S O", 0, MERGE_EXACT, "N1 P0 N4 ");
	/* no eval frame at all: marker, Python, nothing native */
	hand("1.6", "O I P O", 0, MERGE_MISMATCH, "M P0 ");
	/* two eval frames too many: marker, Python, natives below the
	 * innermost eval frame */
	hand("1.7", "O E E E P O I", 0, MERGE_MISMATCH, "M P0 N4 N5 ");
	/* a thread without Python frames: its native stack, all of it */
	hand("1.8", "O I S O", 0, MERGE_EXACT, "N0 N1 N3 ");
}

static void test_flags(void)
{
	struct truth t;
	struct inputs in;
	char got[256];
	from_spec(&t, "O E P p O");
	derive(&t, &in);
	int st = run(&in, 0, 0, 1, 1, got, sizeof(got));
	in.n_nat = 0;
	st = run(&in, 0, 0, 1, 1, got, sizeof(got));
	CHECK(st == MERGE_NO_NATIVE && !strcmp(got, "M P0 P1 "),
	      "2.1 no native stack: marker and the Python frames");
	derive(&t, &in);
	st = run(&in, 0, 1, 0, 1, got, sizeof(got));
	CHECK(st == MERGE_TRUNCATED && !strcmp(got, "M P0 P1 N2 "),
	      "2.2 native stack cut: marker, Python, natives below");
	st = run(&in, 0, 0, 0, 0, got, sizeof(got));
	CHECK(st == MERGE_MISMATCH && !strcmp(got, "M P0 P1 N2 "),
	      "2.3 Python stack cut at max depth: marked, not guessed");
	in.n_py = 0;
	in.n_nat = 0;
	st = run(&in, 0, 0, 1, 1, got, sizeof(got));
	CHECK(st == MERGE_EXACT && !strcmp(got, ""),
	      "2.4 nothing at all: nothing (the agent's pseudo-frames)");
}

/* ---- model test ------------------------------------------------------------ */

static int rnd(unsigned *seed, int n)
{
	return (int)(rand_r(seed) % (unsigned)n);
}

static void add_native(struct truth *t, unsigned *seed, int n)
{
	static const int classes[] = { MERGE_OTHER, MERGE_INTERP, MERGE_INTERP,
				       MERGE_SELF };
	for (int i = 0; i < n && t->n < MAXF; i++)
		t->f[t->n++] = (struct tframe){ 0, classes[rnd(seed, 4)], 0 };
}

static void make_truth(struct truth *t, unsigned *seed)
{
	int groups = 1 + rnd(seed, 6);
	t->n = 0;
	add_native(t, seed, 1 + rnd(seed, 5));
	for (int g = 0; g < groups; g++) {
		t->f[t->n++] = (struct tframe){ 0, MERGE_EVAL, 0 };
		int k = 1 + rnd(seed, 3);
		for (int j = 0; j < k; j++)
			t->f[t->n++] = (struct tframe){ 1, 0, j == 0 };
		add_native(t, seed, rnd(seed, 4));
	}
}

static void test_model(void)
{
	unsigned seed = 7;
	int bad_exact = 0, bad_damaged = 0, exact_damaged = 0;
	for (int round = 0; round < 20000; round++) {
		struct truth t;
		struct inputs in;
		char got[2048], want[2048];
		int keep_all = rnd(&seed, 2);
		make_truth(&t, &seed);
		derive(&t, &in);
		int st = run(&in, keep_all, 0, 0, 1, got, sizeof(got));
		expected(&t, keep_all, want, sizeof(want));
		if (st != MERGE_EXACT || strcmp(got, want)) {
			if (bad_exact++ < 3)
				fprintf(stderr, "model: want [%s] got [%s]\n",
					want, got);
		}
		/* Damage: drop one eval frame (an unwinder that skipped
		 * it), or add two: the counts no longer line up, and the
		 * result must be the fallback (marker first, Python frames
		 * in order), whatever the rest. */
		int evals[MAXF], ne = 0;
		for (int i = 0; i < in.n_nat; i++)
			if (in.nat_class[i] == MERGE_EVAL)
				evals[ne++] = i;
		if (rnd(&seed, 2) && ne > 0) {
			int drop = evals[rnd(&seed, ne)];
			in.nat_class[drop] = MERGE_INTERP;
		} else if (in.n_nat + 2 < MAXF) {
			int at = rnd(&seed, in.n_nat);
			memmove(in.nat_class + at + 2, in.nat_class + at,
				(size_t)(in.n_nat - at));
			in.nat_class[at] = in.nat_class[at + 1] = MERGE_EVAL;
			in.n_nat += 2;
		}
		st = run(&in, keep_all, 0, 0, 1, got, sizeof(got));
		char py[1024];
		size_t o = 0;
		for (int r = 0; r < in.n_py; r++)
			o += (size_t)snprintf(py + o, sizeof(py) - o, "P%d ", r);
		if (st == MERGE_EXACT)
			exact_damaged++;
		else if (strncmp(got, "M ", 2) || strncmp(got + 2, py, o))
			bad_damaged++;
	}
	CHECK(bad_exact == 0, "3.1 undamaged stacks merge exactly as the rule says");
	CHECK(exact_damaged == 0,
	      "3.2 a damaged stack is never passed off as an exact merge");
	CHECK(bad_damaged == 0,
	      "3.3 damaged: marker at the root, then every Python frame in order");
}

int main(void)
{
	test_hand();
	test_flags();
	test_model();
	return check_summary();
}
