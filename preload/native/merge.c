/*
 * merge.c - see merge.h. Pure; indices in and out are leaf first in the
 * inputs, the output is root first.
 */
#include "merge.h"

static void put(struct merge_item *out, int *n, int kind, uint32_t index)
{
	out[*n].kind = (uint8_t)kind;
	out[*n].pad[0] = out[*n].pad[1] = out[*n].pad[2] = 0;
	out[*n].index = index;
	(*n)++;
}

/* Python frames [from, to) counted from the root, as leaf-first indices. */
static void put_py(const struct merge_in *in, struct merge_item *out, int *n,
		   int from, int to)
{
	for (int r = from; r < to; r++)
		put(out, n, MERGE_PY, (uint32_t)(in->n_py - 1 - r));
}

/* The shape of every stack that is not an exact merge: the marker, all
 * Python frames, then the native frames below the innermost eval-loop
 * frame (none if there is no such frame). */
static int fallback(const struct merge_in *in, struct merge_item *out,
		    int *n, int status)
{
	int innermost = -1; /* leaf-first index of the innermost eval frame */
	for (int i = 0; i < in->n_nat; i++)
		if (in->nat_class[i] == MERGE_EVAL) {
			innermost = i;
			break;
		}
	put(out, n, MERGE_MARK, 0);
	put_py(in, out, n, 0, in->n_py);
	for (int i = innermost - 1; i >= 0; i--)
		if (in->nat_class[i] != MERGE_SELF)
			put(out, n, MERGE_NATIVE, (uint32_t)i);
	return status;
}

int merge_stacks(const struct merge_in *in, struct merge_item *out,
		 int *n_out)
{
	int n = 0, n_groups = 0, n_eval = 0, status = MERGE_EXACT;

	*n_out = 0;
	if (in->nat_failed || in->n_nat == 0) {
		if (in->n_py == 0)
			return MERGE_EXACT; /* nothing at all: caller's case */
		status = fallback(in, out, &n, MERGE_NO_NATIVE);
		goto out;
	}
	if (in->n_py == 0) {
		/* a thread without Python frames: its native stack */
		if (in->nat_truncated) {
			put(out, &n, MERGE_MARK, 0);
			status = MERGE_TRUNCATED;
		}
		for (int i = in->n_nat - 1; i >= 0; i--)
			if (in->nat_class[i] != MERGE_SELF)
				put(out, &n, MERGE_NATIVE, (uint32_t)i);
		goto out;
	}
	for (int i = 0; i < in->n_py; i++)
		n_groups += in->py_entry[i] != 0;
	for (int i = 0; i < in->n_nat; i++)
		n_eval += in->nat_class[i] == MERGE_EVAL;
	if (in->nat_truncated) {
		status = fallback(in, out, &n, MERGE_TRUNCATED);
		goto out;
	}
	/* The outermost Python frame must start a group (the walker marks
	 * it when it reached the end), and the counts must line up. */
	if (!in->py_complete || !in->py_entry[in->n_py - 1] ||
	    (n_eval != n_groups && n_eval != n_groups + 1)) {
		status = fallback(in, out, &n, MERGE_MISMATCH);
		goto out;
	}

	/* Exact: walk the native stack from the root; g counts the groups
	 * placed so far, r the Python frames (root first) placed so far. */
	int g = 0, r = 0;
	for (int i = in->n_nat - 1; i >= 0; i--) {
		int c = in->nat_class[i];
		if (c == MERGE_SELF)
			continue;
		if (c == MERGE_EVAL && g < n_groups) {
			/* the group: its entry frame, then up to the next */
			int end = r + 1;
			while (end < in->n_py && !in->py_entry[in->n_py - 1 - end])
				end++;
			put_py(in, out, &n, r, end);
			r = end;
			g++;
			continue;
		}
		if (g == 0 || g == n_groups || c == MERGE_OTHER || in->keep_all)
			put(out, &n, MERGE_NATIVE, (uint32_t)i);
		/* else: the interpreter's own, between two groups: folded */
	}
out:
	*n_out = n;
	return status;
}
