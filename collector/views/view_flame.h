/*
 * view_flame.h - the SVG flame graph writer shared by `pyprof flamegraph`
 * (view_flame.c's view_flame) and `pyprof diff` (view_diff.c).
 *
 * Given a call tree (view_tree.h) and its keys, flame_write lays the tree
 * out and writes one self-contained SVG: frames as <g> elements in
 * pre-order (each with its parent's index and the end of its subtree, so
 * the embedded script finds ancestors and descendants exactly), a native
 * tooltip per frame, and the script for zoom, search and details.
 *
 * Frames narrower than min_width pixels at full width are not drawn one
 * by one: the narrow children of a frame are merged into one "…" frame
 * (tooltip: how many, and their sum) placed after its drawn siblings;
 * what lies below them is not drawn. That bounds the SVG by what can be
 * seen: at most width/min_width frames per level.
 *
 * Height: as many rows as the deepest frame of at least FLAME_TALL_SHARE
 * (1%) of the width; frames above that row are written hidden, the frame
 * at the row under them marked (class "cut", its tooltip counts them),
 * and the script applies the same rule to the zoomed frame's width at
 * each zoom, so a thin tower shows whole once zoomed into.
 */
#ifndef PYPROF_VIEW_FLAME_H
#define PYPROF_VIEW_FLAME_H

#include <stdint.h>
#include <stdio.h>

#include "views/view_read.h"
#include "views/view_tree.h"

struct flame_spec {
	const struct view_tree *tree;
	const struct view_keys *keys;
	const char *unit; /* unit of the width slot's values */
	const char *type; /* sample type name, for the subtitle */
	int count_slot;	  /* slot with sample counts, or -1 */
	int diff;	  /* widths from slot 1; colour by the change
				   of share from slot 0 (base) to slot 1 */
	int diff_values;  /* with diff: by the change of value, in
				   the unit, instead of share */
	int icicle;
	double min_width; /* px */
	const char *title;
	const char *subtitle; /* NULL: made from type and totals */
	/* NULL, or per tree node the part of its total (slot 0) whose
	 * samples said time=python, native and system: the frames are then
	 * coloured by that split, with a legend (docs/reading.md) */
	const int64_t (*split)[3];
	/* > 0, with a count slot and no diff: each frame's tooltip gives
	 * its share's interval at this confidence level, from the count
	 * slot's total taken as independent samples (view_stats.h's
	 * stats_wilson, as `pyprof top --intervals`) */
	double level;
};

/* Writes the SVG. 0, -ENOMEM or -EIO (stream error). */
int flame_write(FILE *out, const struct flame_spec *s);

/* Writes s as XML character data or attribute text: &<>"' escaped,
 * invalid UTF-8 bytes and control characters replaced. At most max_cp
 * code points are written (SIZE_MAX: all); returns how many were. */
size_t flame_xml(FILE *out, const char *s, size_t max_cp);

#endif /* PYPROF_VIEW_FLAME_H */
