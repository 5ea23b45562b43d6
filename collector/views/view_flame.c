/*
 * view_flame.c - the SVG flame graph (see view_flame.h for the layout and
 * the merging of narrow frames), and `pyprof flamegraph`'s entry point.
 *
 * Conventions, as in the flame graphs people know: width is proportional
 * to the value, siblings are ordered by name (x is not time), frames are
 * 16 px high, Verdana 12 px, 1200 px wide; flame (root at the bottom) or
 * icicle (root at the top). Colours are warm and stable (hashed from the
 * function name), pseudo-frames such as "[lost: ring full]" grey, merged
 * "…" frames light grey.
 *
 * The script (our own, below) is plain ES5 with no dependency: click a
 * frame to zoom into it (its ancestors stay, dimmed, to click back
 * through), "Reset Zoom" or a click on the root to zoom out; "Search" or
 * Ctrl-F asks for a regular expression over function names and files,
 * paints matching frames magenta and prints the share of the total they
 * cover (each sample counted once, nested matches not twice); hovering a
 * frame shows its tooltip text at the bottom. The state is kept in the
 * URL fragment (#z=FRAME&s=REGEX) and read back on load, so a link shows
 * the same view. Merged "…" frames are not searched (their functions are
 * not named one by one).
 *
 * Workload: a profile with 100,000 distinct stacks writes in a fraction
 * of a second; the SVG size is bounded by the merging, not by the stacks.
 */
#include "views/view_flame.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/html.h"
#include "views/renderers.h"
#include "views/view_stats.h"

#define FLAME_FRAME_H 16
#define FLAME_PAD 10
#define FLAME_TOP 60
#define FLAME_BOTTOM 34
#define FLAME_FONT_W 7.0     /* average Verdana 12 px glyph width */
#define FLAME_MERGED_MIN 0.1 /* px: a merged box narrower is left out */
/* The graph is as tall as its frames of at least this share of the width
 * (of the zoomed frame's, once zoomed): deeper ones, a thin tower of a
 * few samples, are hidden, their top frame marked (its tooltip says how
 * many are above), and shown by zooming into it. */
#define FLAME_TALL_SHARE 0.01

/* ---- XML text ----------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, past U+10FFFF, and the two
	 * non-characters XML forbids. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
	    cp == 0xfffe || cp == 0xffff)
		return 0;
	return n;
}

size_t flame_xml(FILE *out, const char *str, size_t max_cp)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n_cp = 0;

	while (*s && n_cp < max_cp) {
		size_t n = utf8_len(s);
		n_cp++;
		if (n == 0) {
			fputs("\xef\xbf\xbd", out); /* U+FFFD */
			s++;
			continue;
		}
		if (n > 1) {
			fwrite(s, 1, n, out);
			s += n;
			continue;
		}
		if (*s == '\n')
			fputs("&#10;", out);
		else if (!html_entity(out, *s))
			putc(*s < 0x20 || *s == 0x7f ? '?' : *s, out);
		s++;
	}
	return n_cp;
}

/* Code points in s, counting an invalid byte as one. */
static size_t utf8_count(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0;
	while (*s) {
		size_t l = utf8_len(s);
		s += l ? l : 1;
		n++;
	}
	return n;
}

/* The label of a frame w px wide: the name, cut with ".." to fit, or
 * nothing under 3 characters. The script applies the same rule. */
static void put_label(FILE *out, const char *name, double w)
{
	double room = floor((w - 6) / FLAME_FONT_W);
	size_t max = room > 0 ? (size_t)room : 0, len;

	if (max < 3)
		return;
	len = utf8_count(name);
	if (len <= max) {
		flame_xml(out, name, SIZE_MAX);
		return;
	}
	flame_xml(out, name, max - 2);
	fputs("..", out);
}

/* ---- layout ---------------------------------------------------------------- */

struct box {
	uint32_t node;	 /* tree node; for a merged box, the parent's */
	uint32_t parent; /* index of the parent box; UINT32_MAX: root */
	uint32_t end;	 /* one past the last box of this subtree */
	uint32_t depth;
	uint32_t n_merged; /* 0: one frame; else how many were merged */
	double x, w;
	int64_t val[2]; /* the slots' values (sums for a merged box) */
};

struct layout {
	const struct flame_spec *s;
	const uint32_t *rank;
	int slot;     /* the slot that gives widths */
	double scale; /* px per unit of value */
	struct box *v;
	size_t n, cap;
	struct view_kids kids; /* children being laid out */
	uint32_t max_depth;
	uint32_t rows_cap; /* deepest row shown unzoomed (FLAME_TALL_SHARE) */
	int oom;
};

static uint32_t push_box(struct layout *L, const struct box *b)
{
	if (grow_array(&L->v, &L->cap, L->n + 1, sizeof(*L->v), 1024) < 0) {
		L->oom = 1;
		return UINT32_MAX;
	}
	L->v[L->n] = *b;
	if (b->depth > L->max_depth)
		L->max_depth = b->depth;
	return (uint32_t)L->n++;
}

static int cmp_child(const void *a, const void *b, void *ctx)
{
	const struct layout *L = ctx;
	const struct view_node *v = L->s->tree->v;
	uint32_t ra = L->rank[v[*(const uint32_t *)a].key];
	uint32_t rb = L->rank[v[*(const uint32_t *)b].key];
	return ra < rb ? -1 : ra > rb;
}

static void lay(struct layout *L, uint32_t node, uint32_t parent, double x)
{
	const struct view_tree *t = L->s->tree;
	const struct view_node *nd = &t->v[node];
	struct box b = { .node = node, .parent = parent, .depth = nd->depth, .x = x, .val = { nd->total[0], nd->total[1] } };
	struct box m = { 0 };
	size_t base = L->kids.n, i;
	double cx = x;
	uint32_t me;

	b.w = (double)nd->total[L->slot] * L->scale;
	me = push_box(L, &b);
	if (me == UINT32_MAX)
		return;
	for (uint32_t c = nd->first_child; c; c = t->v[c].next_sibling) {
		double w = (double)t->v[c].total[L->slot] * L->scale;
		if (w <= 0)
			continue;
		if (w < L->s->min_width) {
			m.n_merged++;
			m.val[0] += t->v[c].total[0];
			m.val[1] += t->v[c].total[1];
			continue;
		}
		if (view_kids_push(&L->kids, c) < 0) {
			L->oom = 1;
			return;
		}
	}
	view_kids_sort(&L->kids, base, cmp_child, L);
	for (i = base; i < L->kids.n && !L->oom; i++) {
		uint32_t c = L->kids.v[i];
		lay(L, c, me, cx);
		cx += (double)t->v[c].total[L->slot] * L->scale;
	}
	L->kids.n = base;
	m.w = (double)m.val[L->slot] * L->scale;
	if (m.n_merged && m.w >= FLAME_MERGED_MIN && !L->oom) {
		m.node = node;
		m.parent = me;
		m.depth = nd->depth + 1;
		m.x = cx;
		m.end = (uint32_t)L->n + 1;
		push_box(L, &m);
	}
	if (!L->oom)
		L->v[me].end = (uint32_t)L->n;
}

/* ---- colours ----------------------------------------------------------------- */

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Warm colours, stable per name: red through orange to yellow. */
static void colour_hot(const char *name, char *buf, size_t n)
{
	uint32_t h = name_hash(name);
	unsigned r = 205 + (h & 0xff) * 50 / 255;
	unsigned g = (h >> 8 & 0xff) * 190 / 255;
	unsigned b = (h >> 16 & 0xff) * 55 / 255;

	if (name[0] == '[') /* pseudo-frames: [lost: ...], [truncated] */
		snprintf(buf, n, "rgb(170,170,170)");
	else
		snprintf(buf, n, "rgb(%u,%u,%u)", r, g, b);
}

/* The split's colours: python, native, system. */
static const unsigned split_rgb[3][3] = {
	{ 90, 140, 225 }, /* python: blue    */
	{ 245, 170, 60 }, /* native: orange  */
	{ 215, 60, 60 },  /* system: red     */
};

/* A frame by its split (flame_spec.split): the three colours mixed in
 * its proportions; grey if none of its samples said. */
static void colour_split(const int64_t v[3], char *buf, size_t n)
{
	double sum = (double)(v[0] + v[1] + v[2]), c[3] = { 0, 0, 0 };

	if (sum <= 0) {
		snprintf(buf, n, "rgb(200,200,200)");
		return;
	}
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < 3; j++)
			c[j] += split_rgb[k][j] * (double)v[k] / sum;
	snprintf(buf, n, "rgb(%ld,%ld,%ld)", lround(c[0]), lround(c[1]),
		 lround(c[2]));
}

/* A diff's fill: red for a frame that grew, blue for one that shrank,
 * deeper as t (its change against the largest, 0..1) grows. The palest
 * tint and the grey of an unchanged frame stay well off the background
 * (#f4f4f4 to #e6e6f0): an unchanged frame is a box like any other, not a
 * hole in the graph. */
static void colour_diff(double delta, double t, char *buf, size_t n)
{
	unsigned hi = 255, lo = (unsigned)lround(215 - 180 * t);
	unsigned mid = (unsigned)lround(215 - 115 * t);

	if (delta > 0)
		snprintf(buf, n, "rgb(%u,%u,%u)", hi, lo, lo);
	else if (delta < 0)
		snprintf(buf, n, "rgb(%u,%u,%u)", lo, mid, hi);
	else
		snprintf(buf, n, "rgb(200,200,200)");
}

static double share(int64_t v, int64_t total)
{
	return total > 0 ? (double)v / (double)total : 0.0;
}

/* ---- writing ----------------------------------------------------------------- */

static const char flame_css[] =
	"text{font-family:Verdana,Arial,sans-serif;font-size:12px;"
	"fill:#000}\n"
	"#title{font-size:17px;text-anchor:middle}\n"
	"#subtitle{fill:#555;text-anchor:middle}\n"
	".btn{cursor:pointer;fill:#1a4f9c}\n"
	".btn:hover{text-decoration:underline}\n"
	".hide{display:none}\n"
	"#frames g{cursor:pointer}\n"
	"#frames g:hover rect{stroke:#000;stroke-width:0.6}\n"
	"#frames text{pointer-events:none}\n"
	"#frames g.anc{opacity:0.55}\n"
	"#matched{text-anchor:end}\n"
	"#frames g.cut rect{stroke:#333;stroke-width:1;"
	"stroke-dasharray:3,2}\n";

/* The script. ES5, no library; see the header comment for what it does. */
static const char flame_js[] =
	"(function () {\n"
	"'use strict';\n"
	"var doc = document, root = doc.documentElement, C = PYPROF_FLAME;\n"
	"var els = doc.getElementById('frames').children, n = els.length;\n"
	"var fx = new Float64Array(n), fw = new Float64Array(n);\n"
	"var par = new Int32Array(n), end = new Int32Array(n);\n"
	"var names = [], files = [], rects = [], texts = [], fills = [];\n"
	"var merged = new Uint8Array(n), dep = new Int32Array(n);\n"
	"var details = doc.getElementById('details');\n"
	"var matched = doc.getElementById('matched');\n"
	"var unzoomBtn = doc.getElementById('unzoom');\n"
	"var searchBtn = doc.getElementById('search');\n"
	"var zoomed = 0, matchRe = null, loading = true, i;\n"
	"for (i = 0; i < n; i++) {\n"
	"  var g = els[i];\n"
	"  g.pfIndex = i;\n"
	"  rects[i] = g.children[1];\n"
	"  texts[i] = g.children[2];\n"
	"  fx[i] = +rects[i].getAttribute('x');\n"
	"  fw[i] = +rects[i].getAttribute('width');\n"
	"  par[i] = +g.getAttribute('data-p');\n"
	"  end[i] = +g.getAttribute('data-e');\n"
	"  names[i] = g.getAttribute('data-n') || '';\n"
	"  files[i] = g.getAttribute('data-f') || '';\n"
	"  merged[i] = g.hasAttribute('data-m') ? 1 : 0;\n"
	"  fills[i] = rects[i].getAttribute('fill');\n"
	"  dep[i] = par[i] >= 0 ? dep[par[i]] + 1 : 0;\n"
	"}\n"
	"var bg = doc.getElementById('bg-rect');\n"
	"/* The rows shown when zoomed into z: as deep as the frames of at\n"
	" * least C.tall of z's width; the graph's height follows. */\n"
	"function rows(z) {\n"
	"  var j, cap = dep[z], min = C.tall * fw[z];\n"
	"  for (j = z; j < end[z]; j++)\n"
	"    if (dep[j] > cap && fw[j] >= min) cap = dep[j];\n"
	"  var h = C.top + (cap + 1) * C.frameH + C.bottom;\n"
	"  root.setAttribute('height', h);\n"
	"  root.setAttribute('viewBox', '0 0 ' + (C.width + 2 * C.pad) + ' ' + h);\n"
	"  bg.setAttribute('height', h);\n"
	"  details.setAttribute('y', h - 12);\n"
	"  matched.setAttribute('y', h - 12);\n"
	"  return cap;\n"
	"}\n"
	"function rowY(j, cap) {\n"
	"  var y = C.top + (C.icicle ? dep[j] : cap - dep[j]) * C.frameH;\n"
	"  rects[j].setAttribute('y', y.toFixed(1));\n"
	"  texts[j].setAttribute('y', (y + 11.5).toFixed(1));\n"
	"}\n"
	"function fit(j, w) {\n"
	"  var name = names[j], max = Math.floor((w - 6) / C.fontW);\n"
	"  if (max < 3) { texts[j].textContent = ''; return; }\n"
	"  texts[j].textContent = name.length <= max ? name :\n"
	"    name.slice(0, max - 2) + '..';\n"
	"}\n"
	"function place(j, x, w) {\n"
	"  rects[j].setAttribute('x', x.toFixed(3));\n"
	"  rects[j].setAttribute('width', w.toFixed(3));\n"
	"  texts[j].setAttribute('x', (x + 3).toFixed(3));\n"
	"  fit(j, w);\n"
	"}\n"
	"function save() {\n"
	"  if (loading) return;\n"
	"  var h = [];\n"
	"  if (zoomed > 0) h.push('z=' + zoomed);\n"
	"  if (matchRe) h.push('s=' + encodeURIComponent(matchRe.source));\n"
	"  try {\n"
	"    history.replaceState(null, '', h.length ? '#' + h.join('&') :\n"
	"      location.pathname + location.search);\n"
	"  } catch (e) { /* file: URLs may refuse; the view still works */ }\n"
	"}\n"
	"function zoom(z) {\n"
	"  if (!(z >= 0 && z < n) || !(fw[z] > 0)) z = 0;\n"
	"  if (!(fw[0] > 0)) return; /* an empty profile */\n"
	"  var anc = new Uint8Array(n), a, j, x0 = fx[z], k = C.width / fw[z];\n"
	"  var cap = rows(z);\n"
	"  for (a = par[z]; a >= 0; a = par[a]) anc[a] = 1;\n"
	"  for (j = 0; j < n; j++) {\n"
	"    var g = els[j];\n"
	"    if (j >= z && j < end[z] && dep[j] <= cap) {\n"
	"      g.style.display = '';\n"
	"      g.classList.remove('anc');\n"
	"      if (dep[j] === cap && end[j] > j + 1) g.classList.add('cut');\n"
	"      else g.classList.remove('cut');\n"
	"      place(j, C.pad + (fx[j] - x0) * k, fw[j] * k);\n"
	"      rowY(j, cap);\n"
	"    } else if (anc[j]) {\n"
	"      g.style.display = '';\n"
	"      g.classList.add('anc');\n"
	"      g.classList.remove('cut');\n"
	"      place(j, C.pad, C.width);\n"
	"      rowY(j, cap);\n"
	"    } else {\n"
	"      g.style.display = 'none';\n"
	"    }\n"
	"  }\n"
	"  zoomed = z;\n"
	"  if (z > 0) unzoomBtn.classList.remove('hide');\n"
	"  else unzoomBtn.classList.add('hide');\n"
	"  save();\n"
	"}\n"
	"function search(re) {\n"
	"  var sum = 0, until = -1, j, hit;\n"
	"  matchRe = re;\n"
	"  for (j = 0; j < n; j++) {\n"
	"    hit = re !== null && j > 0 && !merged[j] &&\n"
	"      (re.test(names[j]) || re.test(files[j]));\n"
	"    rects[j].setAttribute('fill', hit ? C.hit : fills[j]);\n"
	"    if (hit) els[j].classList.add('hit');\n"
	"    else els[j].classList.remove('hit');\n"
	"    /* Pre-order: a match's descendants are (j, end[j]). */\n"
	"    if (hit && j >= until) { sum += fw[j]; until = end[j]; }\n"
	"  }\n"
	"  if (re === null) {\n"
	"    matched.textContent = '';\n"
	"    searchBtn.textContent = 'Search';\n"
	"  } else {\n"
	"    matched.textContent = 'Matched: ' +\n"
	"      (100 * sum / C.width).toFixed(2) + '%';\n"
	"    searchBtn.textContent = 'Reset Search';\n"
	"  }\n"
	"  save();\n"
	"}\n"
	"function askSearch() {\n"
	"  var s = prompt('Search: a regular expression over function names'\n"
	"    + ' and files', matchRe ? matchRe.source : '');\n"
	"  if (s === null) return;\n"
	"  if (s === '') { search(null); return; }\n"
	"  try { search(new RegExp(s)); }\n"
	"  catch (e) { matched.textContent = 'Bad expression: ' + s; }\n"
	"}\n"
	"function frameOf(t) {\n"
	"  while (t && t !== root) {\n"
	"    if (t.pfIndex !== undefined) return t.pfIndex;\n"
	"    t = t.parentNode;\n"
	"  }\n"
	"  return -1;\n"
	"}\n"
	"root.addEventListener('click', function (e) {\n"
	"  if (e.target === unzoomBtn) { zoom(0); return; }\n"
	"  if (e.target === searchBtn) {\n"
	"    if (matchRe) search(null); else askSearch();\n"
	"    return;\n"
	"  }\n"
	"  var j = frameOf(e.target);\n"
	"  if (j >= 0) zoom(j);\n"
	"});\n"
	"root.addEventListener('mouseover', function (e) {\n"
	"  var j = frameOf(e.target);\n"
	"  if (j >= 0)\n"
	"    details.textContent = els[j].children[0].textContent\n"
	"      .replace(/\\n/g, ' | ');\n"
	"});\n"
	"root.addEventListener('mouseout', function () {\n"
	"  details.textContent = ' ';\n"
	"});\n"
	"doc.addEventListener('keydown', function (e) {\n"
	"  if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {\n"
	"    e.preventDefault();\n"
	"    askSearch();\n"
	"  } else if (e.key === 'Escape') {\n"
	"    search(null);\n"
	"    zoom(0);\n"
	"  }\n"
	"});\n"
	"(function () {\n"
	"  var parts = location.hash.replace(/^#/, '').split('&'), p, z = 0;\n"
	"  for (p = 0; p < parts.length; p++) {\n"
	"    var kv = parts[p].split('=');\n"
	"    if (kv[0] === 'z') z = parseInt(kv[1], 10) || 0;\n"
	"    if (kv[0] === 's' && kv[1]) {\n"
	"      try { search(new RegExp(decodeURIComponent(kv[1]))); }\n"
	"      catch (e) { /* ignore a bad link */ }\n"
	"    }\n"
	"  }\n"
	"  if (z > 0) zoom(z);\n"
	"  loading = false;\n"
	"  /* a flame graph's widest frames are at the bottom: open there\n"
	"   * (with the details line), not on the empty top of a tall one */\n"
	"  if (!C.icicle && root.getBoundingClientRect().height >\n"
	"      window.innerHeight)\n"
	"    window.scrollTo(0, root.getBoundingClientRect().height);\n"
	"})();\n"
	"root.setAttribute('data-ready', '1');\n"
	"})();\n";

struct writer {
	FILE *out;
	const struct flame_spec *s;
	const struct layout *L;
	int64_t total[2];
	double max_delta;
	double height;
	double z; /* > 0: the tooltips give each share's interval */
};

/* A diff's change for b: of share (a fraction), or of value. */
static double change(const struct flame_spec *s, const int64_t total[2],
		     const struct box *b)
{
	if (s->diff_values)
		return (double)b->val[1] - (double)b->val[0];
	return share(b->val[1], total[1]) - share(b->val[0], total[0]);
}

static void write_tooltip(struct writer *w, const struct box *b,
			  const struct view_key *k)
{
	const struct flame_spec *s = w->s;
	char v0[32], v1[32];
	int slot = s->diff ? 1 : 0;

	if (b->n_merged)
		fprintf(w->out, "%" PRIu32 " frames narrower than %.2g px, "
				"merged",
			b->n_merged, s->min_width);
	else if (!k)
		fputs("all", w->out);
	else {
		flame_xml(w->out, k->name, SIZE_MAX);
		if (k->file[0]) {
			fputs(" (", w->out);
			flame_xml(w->out, k->file, SIZE_MAX);
			if (k->line > 0)
				fprintf(w->out, ":%" PRId64, k->line);
			fputs(")", w->out);
		}
	}
	fputs("&#10;", w->out);
	if (s->diff && s->diff_values) {
		char d[32];
		int64_t dv = b->val[1] - b->val[0];
		view_fmt_value(d, sizeof(d), dv, s->unit);
		fprintf(w->out, "new %s, base %s, change %s%s",
			view_fmt_value(v1, sizeof(v1), b->val[1], s->unit),
			view_fmt_value(v0, sizeof(v0), b->val[0], s->unit),
			dv > 0 ? "+" : "", d);
		return;
	}
	if (s->diff) {
		double d = change(s, w->total, b);
		fprintf(w->out, "new %s (%.2f%%), base %s (%.2f%%), change "
				"%+.2f points",
			view_fmt_value(v1, sizeof(v1), b->val[1], s->unit),
			100 * share(b->val[1], w->total[1]),
			view_fmt_value(v0, sizeof(v0), b->val[0], s->unit),
			100 * share(b->val[0], w->total[0]), 100 * d);
		return;
	}
	if (strcmp(s->unit, "count"))
		fprintf(w->out, "%s, ", view_fmt_value(v0, sizeof(v0), b->val[slot], s->unit));
	if (s->count_slot >= 0 || !strcmp(s->unit, "count"))
		fprintf(w->out, "%" PRId64 " sample%s, ",
			b->val[s->count_slot >= 0 ? s->count_slot : slot],
			b->val[s->count_slot >= 0 ? s->count_slot : slot] == 1
				? ""
				: "s");
	fprintf(w->out, "%.2f%% of the total",
		100 * share(b->val[slot], w->total[slot]));
	if (w->z > 0 && (b->node || b->n_merged)) {
		/* the estimator of pyprof top --intervals: the share of the
		 * value, n the samples counted */
		double lo, hi;
		stats_wilson(share(b->val[slot], w->total[slot]),
			     (double)w->total[s->count_slot], w->z, &lo, &hi);
		fprintf(w->out, ", %g%% interval [%.2f, %.2f]%%",
			100 * s->level, 100 * lo, 100 * hi);
	}
	if (s->split && !b->n_merged) {
		const int64_t *v = s->split[b->node];
		double sum = (double)(v[0] + v[1] + v[2]);
		if (sum > 0)
			fprintf(w->out, "&#10;python %.1f%%, native %.1f%%, "
					"system %.1f%%",
				100 * (double)v[0] / sum,
				100 * (double)v[1] / sum, 100 * (double)v[2] / sum);
	}
}

static void write_box(struct writer *w, size_t i)
{
	const struct layout *L = w->L;
	const struct box *b = &L->v[i];
	const struct flame_spec *s = w->s;
	const struct view_node *nd = &s->tree->v[b->node];
	const struct view_key *k = NULL;
	const char *name = "all", *file = "";
	double y;
	char fill[40];

	if (b->n_merged)
		name = "\xe2\x80\xa6"; /* U+2026 HORIZONTAL ELLIPSIS */
	else if (b->node) {
		k = &s->keys->v[nd->key];
		name = k->name;
		file = k->file;
	}
	/* deeper than the cap: hidden, placed where zooming would put it
	 * first (the script places every frame again at each zoom) */
	int deep = b->depth > L->rows_cap;
	int cut = !deep && b->depth == L->rows_cap && b->end > i + 1;
	if (s->icicle)
		y = FLAME_TOP + (double)b->depth * FLAME_FRAME_H;
	else
		y = FLAME_TOP + ((double)L->rows_cap - (double)b->depth) *
					FLAME_FRAME_H;
	if (b->n_merged)
		snprintf(fill, sizeof(fill), "rgb(221,221,221)");
	else if (s->diff) {
		double d = change(s, w->total, b);
		colour_diff(d, w->max_delta > 0 ? fabs(d) / w->max_delta : 0,
			    fill, sizeof(fill));
	} else if (s->split && !b->n_merged)
		colour_split(s->split[b->node], fill, sizeof(fill));
	else if (!b->node)
		snprintf(fill, sizeof(fill), "rgb(230,160,90)");
	else
		colour_hot(name, fill, sizeof(fill));

	fprintf(w->out, "<g data-p=\"%ld\" data-e=\"%" PRIu32 "\" data-n=\"",
		b->parent == UINT32_MAX ? -1L : (long)b->parent, b->end);
	flame_xml(w->out, name, SIZE_MAX);
	fputs("\"", w->out);
	if (file[0]) {
		fputs(" data-f=\"", w->out);
		flame_xml(w->out, file, SIZE_MAX);
		fputs("\"", w->out);
	}
	if (b->n_merged)
		fputs(" data-m=\"1\"", w->out);
	if (s->split && !b->n_merged)
		fprintf(w->out, " data-t=\"%" PRId64 ",%" PRId64 ",%" PRId64 "\"",
			s->split[b->node][0], s->split[b->node][1],
			s->split[b->node][2]);
	if (deep)
		fputs(" style=\"display:none\"", w->out);
	if (cut)
		fputs(" class=\"cut\"", w->out);
	fputs("><title>", w->out);
	write_tooltip(w, b, k);
	if (cut)
		fprintf(w->out, "&#10;%" PRIu32 " frames above, too narrow to "
				"show: click to zoom",
			b->end - (uint32_t)i - 1);
	fprintf(w->out, "</title><rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" "
			"height=\"%d\" fill=\"%s\" rx=\"2\"/><text x=\"%.3f\" "
			"y=\"%.1f\">",
		FLAME_PAD + b->x, y, b->w, FLAME_FRAME_H - 1,
		fill, FLAME_PAD + b->x + 3, y + 11.5);
	put_label(w->out, name, b->w);
	fputs("</text></g>\n", w->out);
}

static void write_svg(struct writer *w)
{
	const struct flame_spec *s = w->s;
	const struct layout *L = w->L;
	FILE *out = w->out;
	double width = VIEW_FLAME_WIDTH;
	char v[32], sub[512];

	if (s->subtitle) {
		snprintf(sub, sizeof(sub), "%s", s->subtitle);
	} else {
		int slot = s->diff ? 1 : 0;
		int len = snprintf(sub, sizeof(sub), "%s: total %s", s->type,
				   view_fmt_value(v, sizeof(v), w->total[slot],
						  s->unit));
		if (s->count_slot >= 0 && len > 0 && (size_t)len < sizeof(sub))
			snprintf(sub + len, sizeof(sub) - (size_t)len,
				 ", %" PRId64 " samples",
				 w->total[s->count_slot]);
	}
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
		"<!-- written by pyprof; frames narrower than %.2g px are "
		"merged into one \"...\" frame per parent -->\n"
		"<style type=\"text/css\">\n%s</style>\n"
		"<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" "
		"y2=\"1\"><stop offset=\"5%%\" stop-color=\"#f4f4f4\"/>"
		"<stop offset=\"95%%\" stop-color=\"#e6e6f0\"/>"
		"</linearGradient></defs>\n"
		"<rect id=\"bg-rect\" x=\"0\" y=\"0\" width=\"%.0f\" "
		"height=\"%.0f\" fill=\"url(#bg)\"/>\n",
		width, w->height, width, w->height,
		s->min_width, flame_css, width, w->height);
	fprintf(out, "<text id=\"title\" x=\"%.0f\" y=\"24\">", width / 2);
	flame_xml(out, s->title, SIZE_MAX);
	fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%.0f\" y=\"44\">",
		width / 2);
	flame_xml(out, sub, SIZE_MAX);
	fputs("</text>\n", out);
	if (s->split) {
		/* the legend, top left */
		static const char *const names[3] = { "python", "native",
						      "system" };
		fputs("<g id=\"legend\">", out);
		for (int k = 0; k < 3; k++)
			fprintf(out, "<rect x=\"%d\" y=\"36\" width=\"10\" "
				     "height=\"10\" fill=\"rgb(%u,%u,%u)\"/><text "
				     "x=\"%d\" y=\"45\">%s</text>",
				FLAME_PAD + 70 * k, split_rgb[k][0],
				split_rgb[k][1], split_rgb[k][2],
				FLAME_PAD + 70 * k + 14, names[k]);
		fputs("</g>\n", out);
	}
	fprintf(out,
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">"
		"Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%.0f\" y=\"24\">Search"
		"</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n"
		"<text id=\"matched\" x=\"%.0f\" y=\"%.0f\"></text>\n"
		"<g id=\"frames\">\n",
		FLAME_PAD, width - FLAME_PAD - 100, FLAME_PAD,
		w->height - 12, width - FLAME_PAD, w->height - 12);
	for (size_t i = 0; i < L->n; i++)
		write_box(w, i);
	fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n"
		     "var PYPROF_FLAME = { pad: %d, width: %d, fontW: %.2f, "
		     "hit: 'rgb(230,0,230)', icicle: %d, top: %d, frameH: %d, "
		     "bottom: %d, tall: %g };\n%s]]></script>\n"
		     "</svg>\n",
		FLAME_PAD, VIEW_FLAME_WIDTH - 2 * FLAME_PAD, FLAME_FONT_W,
		s->icicle ? 1 : 0, FLAME_TOP, FLAME_FRAME_H, FLAME_BOTTOM,
		FLAME_TALL_SHARE, flame_js);
}

int flame_write(FILE *out, const struct flame_spec *s)
{
	const struct view_tree *t = s->tree;
	struct layout L = { 0 };
	struct writer w = { 0 };
	int rc = -ENOMEM;

	L.s = s;
	L.slot = s->diff ? 1 : 0;
	L.rank = view_keys_rank(s->keys);
	if (!L.rank)
		goto out;
	w.total[0] = t->v[0].total[0];
	w.total[1] = t->v[0].total[1];
	L.scale = w.total[L.slot] > 0 ? (VIEW_FLAME_WIDTH - 2.0 * FLAME_PAD) /
						(double)w.total[L.slot]
				      : 0;
	lay(&L, 0, UINT32_MAX, 0);
	if (L.oom)
		goto out;
	if (s->diff) {
		for (size_t i = 0; i < L.n; i++) {
			double d = fabs(change(s, w.total, &L.v[i]));
			if (!L.v[i].n_merged && d > w.max_delta)
				w.max_delta = d;
		}
	}
	w.out = out;
	w.s = s;
	w.L = &L;
	/* the rows of the frames at least FLAME_TALL_SHARE wide */
	for (size_t i = 0; i < L.n; i++)
		if (L.v[i].depth > L.rows_cap &&
		    L.v[i].w >= FLAME_TALL_SHARE * (VIEW_FLAME_WIDTH -
						    2.0 * FLAME_PAD))
			L.rows_cap = L.v[i].depth;
	w.height = FLAME_TOP + (L.rows_cap + 1.0) * FLAME_FRAME_H + FLAME_BOTTOM;
	if (s->level > 0 && s->count_slot >= 0 && !s->diff)
		w.z = stats_z(s->level);
	write_svg(&w);
	rc = ferror(out) ? -EIO : 0;
out:
	free(L.v);
	view_kids_fini(&L.kids);
	free((void *)L.rank);
	return rc;
}

/* ---- pyprof flamegraph ---------------------------------------------------------- */

/* Per node of tree, the value of type under each time label (python,
 * native, system) of the samples that built it: NULL when no sample of p
 * has the label (not a CPU profile of ours) or memory ran out. */
static int64_t (*split_of(const struct view_profile *p,
			  const struct view_tree *tree, const uint32_t *kmap,
			  const struct view_filter *f, size_t type))[3]
{
	static const char *const kinds[3] = { "python", "native", "system" };
	int64_t(*v)[3] = calloc(tree->n ? tree->n : 1, sizeof(*v));
	int any = 0;
	char buf[16];

	if (!v)
		return NULL;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *sm = &p->samples[i];
		const char *t = view_sample_label(sm, "time", buf, sizeof(buf));
		int64_t val = sm->values[type];
		int k;
		uint32_t node = 0;

		if (!t || val < 0 || (f && !view_sample_matches(sm, f)))
			continue;
		for (k = 0; k < 3 && strcmp(t, kinds[k]); k++)
			;
		if (k == 3)
			continue;
		any = 1;
		v[0][k] += val;
		for (uint32_t j = sm->n_frames; j-- > 0;) {
			node = view_tree_find(tree, node, kmap[sm->frames[j]]);
			if (!node)
				break;
			v[node][k] += val;
		}
	}
	if (!any) {
		free(v);
		return NULL;
	}
	return v;
}

int view_flame(FILE *out, const struct view_profile *p,
	       const struct view_flame_opts *o, char *err)
{
	struct view_keys keys;
	struct view_tree tree;
	struct flame_spec s = { 0 };
	uint32_t *kmap = NULL;
	int64_t(*split)[3] = NULL;
	size_t type;
	int slots[2], rc;

	err[0] = 0;
	if (view_need_type(p, o->sample_type, &type, err) < 0)
		return -ENOENT;
	view_keys_init(&keys, o->by);
	rc = view_tree_init(&tree);
	if (rc < 0)
		goto out;
	rc = view_keys_map(&keys, p, &kmap);
	if (rc < 0)
		goto out;
	slots[0] = (int)type;
	slots[1] = view_count_type(p);
	rc = view_tree_add_profile(&tree, p, kmap, o->filter, slots);
	if (rc < 0)
		goto out;
	s.tree = &tree;
	s.keys = &keys;
	s.unit = p->types[type].unit;
	s.type = p->types[type].type;
	s.count_slot = slots[1] >= 0 ? 1 : -1;
	s.icicle = o->icicle;
	s.min_width = o->min_width > 0 ? o->min_width : VIEW_FLAME_MIN_WIDTH;
	s.title = o->title    ? o->title
		  : o->icicle ? "Icicle graph"
			      : "Flame graph";
	split = split_of(p, &tree, kmap, o->filter, type);
	s.split = (const int64_t(*)[3])split;
	s.level = o->level > 0 ? o->level : STATS_DEFAULT_LEVEL;
	rc = flame_write(out, &s);
out:
	view_errno_text(rc, err);
	free(split);
	free(kmap);
	view_tree_fini(&tree);
	view_keys_fini(&keys);
	return rc;
}
