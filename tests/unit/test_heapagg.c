/*
 * test_heapagg.c - one process's heap profile (collector/daemon/heapagg.h)
 * against a model.
 *
 *   1.x the unbiasing factor: 1/(1 - e^(-S/R)), exactly 1 at rate 1, and
 *       the estimator it gives is unbiased: sampling a known stream of
 *       allocations the way the library does (exponential gaps) and
 *       scaling back gives the true bytes within a few percent;
 *   2.x model test (docs/conventions.md, "Tests"): random allocs, frees (of live,
 *       unknown and already freed addresses), re-allocations of a live
 *       address (a lost FREE) and window resets go into the real table
 *       and into a plain array; per node, alloc and in-use sums and the
 *       live count must agree, through several growths and many backward-
 *       shift deletions;
 *   3.x renumbering (a symtab compaction) moves every node, rows follow;
 *   4.x lost allocations land on the lost row only;
 *   5.x the peak: the in-use estimate kept as records come equals the
 *       rows' in-use sum (also in the model test, 2.3); the peak table
 *       is what was in use at the high, copied again only past the slack
 *       (1/64), within it of the exact high; what comes after the high
 *       is absent; windows start from what is in use; a new rate, a
 *       renumbering and the time of the high.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "daemon/heapagg.h"

#define NODES 50
#define ADDRS 3000

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int close_to(double a, double b, double rel)
{
	double d = fabs(a - b), m = fabs(b) > 1 ? fabs(b) : 1;
	return d <= rel * m;
}

static void test_scale(void)
{
	CHECK(heapagg_scale(100, 1) == 1.0, "1.1 rate 1: every allocation");
	CHECK(heapagg_scale(0, 524288) == 1.0, "1.2 size 0: scale 1");
	CHECK(close_to(heapagg_scale(524288, 524288), 1 / (1 - exp(-1.0)),
		       1e-12),
	      "1.3 S = R: 1/(1 - 1/e)");
	CHECK(close_to(heapagg_scale(16, 524288), 524288.0 / 16, 1e-3),
	      "1.4 small S: about R/S");
	CHECK(close_to(heapagg_scale(100 << 20, 524288), 1.0, 1e-12),
	      "1.5 S >> R: 1");

	/* 1.6: a stream of 200,000 allocations of 64 bytes and 2,000 of
	 * 100 KiB, sampled by exponential gaps of mean 64 KiB, scaled back */
	const double rate = 65536;
	double left = -log(((double)(next() >> 11) + 1) / 9007199254740992.0) *
		      rate;
	double est = 0, truth = 0;
	for (int i = 0; i < 202000; i++) {
		uint64_t size = i % 101 == 0 ? 100 << 10 : 64;
		truth += (double)size;
		left -= (double)size;
		if (left <= 0) {
			est += heapagg_scale(size, (uint64_t)rate) * (double)size;
			left = -log(((double)(next() >> 11) + 1) /
				    9007199254740992.0) *
			       rate;
		}
	}
	CHECK(close_to(est, truth, 0.05), "1.6 unbiased within 5%");
}

struct model_node {
	double ao, ab, io, ib;
};

struct model_live {
	uint64_t addr, size;
	uint32_t node;
	int live;
};

static void model_free(struct model_live *ml, uint64_t addr)
{
	for (int i = 0; i < ADDRS; i++)
		if (ml[i].live && ml[i].addr == addr)
			ml[i].live = 0;
}

static int compare(struct heapagg *h, const struct model_node *mn_alloc,
		   const struct model_live *ml, uint64_t rate)
{
	struct model_node want[NODES + 1];
	struct heapagg_row *rows, lost;
	size_t n, n_live = 0;
	int ok = 1;

	memcpy(want, mn_alloc, sizeof(want));
	for (int i = 0; i < ADDRS; i++) {
		if (!ml[i].live)
			continue;
		double w = heapagg_scale(ml[i].size, rate);
		want[ml[i].node].io += w;
		want[ml[i].node].ib += w * (double)ml[i].size;
		n_live++;
	}
	if (heapagg_rows(h, &rows, &n, &lost) < 0)
		return 0;
	struct model_node got[NODES + 1];
	memset(got, 0, sizeof(got));
	for (size_t i = 0; i < n; i++) {
		if (rows[i].node == 0 || rows[i].node > NODES ||
		    (i && rows[i].node <= rows[i - 1].node))
			ok = 0; /* sorted, unique, known nodes */
		else
			got[rows[i].node] = (struct model_node){
				rows[i].alloc_objects, rows[i].alloc_bytes,
				rows[i].inuse_objects, rows[i].inuse_bytes
			};
	}
	for (int k = 1; k <= NODES; k++)
		if (!close_to(got[k].ao, want[k].ao, 1e-9) ||
		    !close_to(got[k].ab, want[k].ab, 1e-9) ||
		    !close_to(got[k].io, want[k].io, 1e-9) ||
		    !close_to(got[k].ib, want[k].ib, 1e-9))
			ok = 0;
	if (heapagg_n_live(h) != n_live)
		ok = 0;
	/* the running estimate: each block's bytes rounded once */
	double ib = 0;
	for (int k = 1; k <= NODES; k++)
		ib += want[k].ib;
	if (fabs((double)heapagg_inuse_est(h) - ib) > 0.5 * n_live + 1)
		ok = 0;
	free(rows);
	return ok;
}

static void test_model(void)
{
	struct heapagg *h = heapagg_new();
	static struct model_live ml[ADDRS];
	struct model_node mn[NODES + 1];
	const uint64_t rate = 4096;
	int bad = 0, rounds = 0;

	CHECK_OR_RETURN(h != NULL, "2.0 heapagg_new", );
	memset(mn, 0, sizeof(mn));
	for (int step = 0; step < 200000; step++) {
		uint64_t r = next();
		int slot = (int)(r % ADDRS);
		/* addresses: slot-based, 16-aligned, clustered so that
		 * probe runs are long and deletions shift */
		uint64_t addr = 0x7f0000000000ull + (uint64_t)slot * 16;
		switch ((r >> 20) % 8) {
		case 0:
		case 1:
		case 2:
		case 3: { /* alloc (maybe re-alloc) */
			uint32_t node = 1 + (uint32_t)((r >> 32) % NODES);
			uint64_t size = 1 + (r >> 40) % 20000;
			if (heapagg_alloc(h, rate, node, 0, size, addr) < 0) {
				bad = 1;
				break;
			}
			model_free(ml, addr); /* a lost FREE */
			ml[slot] = (struct model_live){ addr, size, node, 1 };
			double w = heapagg_scale(size, rate);
			mn[node].ao += w;
			mn[node].ab += w * (double)size;
			break;
		}
		case 4:
		case 5:
		case 6: /* free: live, or not */
			heapagg_release(h, addr);
			model_free(ml, addr);
			break;
		default:
			if ((r >> 50) % 512 == 0) { /* a window ends */
				heapagg_window_reset(h);
				memset(mn, 0, sizeof(mn));
			} else { /* a free of an address never seen */
				heapagg_release(h, 0x100000000ull + r % 4096);
			}
		}
		if (step % 20000 == 0) {
			rounds++;
			if (!compare(h, mn, ml, rate))
				bad = 1;
		}
	}
	CHECK(!bad && compare(h, mn, ml, rate),
	      "2.1 sums, live blocks and the in-use estimate equal the "
	      "model's");
	CHECK(rounds == 10, "2.2 compared along the way");
	heapagg_free(h);
}

static uint32_t plus_1000(const void *arg, uint32_t node)
{
	(void)arg;
	return node + 1000;
}

static void test_renumber(void)
{
	struct heapagg *h = heapagg_new();
	struct heapagg_row *a, *b, lost;
	size_t na, nb;

	CHECK_OR_RETURN(h != NULL, "3.0 heapagg_new", );
	for (uint32_t i = 1; i <= 300; i++)
		heapagg_alloc(h, 1, i % 40 + 1, i % 3, i, 0x1000 + i * 16);
	for (uint32_t i = 1; i <= 300; i += 3)
		heapagg_release(h, 0x1000 + i * 16);
	heapagg_rows(h, &a, &na, &lost);
	heapagg_renumber(h, plus_1000, plus_1000, NULL);
	heapagg_rows(h, &b, &nb, &lost);
	int same = na == nb;
	for (size_t i = 0; same && i < na; i++)
		same = b[i].node == a[i].node + 1000 &&
		       b[i].labels == (a[i].labels ? a[i].labels + 1000 : 0) &&
		       b[i].alloc_bytes == a[i].alloc_bytes &&
		       b[i].inuse_bytes == a[i].inuse_bytes;
	CHECK(same, "3.1 every row moved to its new node and label set, "
		    "values kept");
	/* allocations after the renumbering land on the new ids */
	heapagg_alloc(h, 1, 1001, 0, 5, 0x900000);
	free(b);
	heapagg_rows(h, &b, &nb, &lost);
	CHECK(nb == na && b[0].node == 1001 &&
		      b[0].alloc_bytes == a[0].alloc_bytes + 5,
	      "3.2 the renumbered table keeps aggregating");
	free(a);
	free(b);
	heapagg_free(h);
}

static void test_lost(void)
{
	struct heapagg *h = heapagg_new();
	struct heapagg_row *rows, lost;
	size_t n;

	CHECK_OR_RETURN(h != NULL, "4.0 heapagg_new", );
	CHECK(!heapagg_has_data(h), "4.1 empty: nothing to write");
	heapagg_lost(h, 1024, 10, 10240);
	CHECK(heapagg_has_data(h), "4.2 lost allocations are data");
	heapagg_rows(h, &rows, &n, &lost);
	CHECK(n == 0 && lost.node == 0 &&
		      close_to(lost.alloc_objects,
			       10 * heapagg_scale(1024, 1024), 1e-12) &&
		      lost.inuse_bytes == 0,
	      "4.3 on the lost row, scaled by their mean size");
	free(rows);
	heapagg_window_reset(h);
	CHECK(!heapagg_has_data(h), "4.4 a new window forgets them");
	heapagg_free(h);
}

/* node's row (labels 0), zeros if none. */
static struct heapagg_row row_of(const struct heapagg *h, uint32_t node)
{
	struct heapagg_row *rows, lost, r = { 0 };
	size_t n;

	if (heapagg_rows(h, &rows, &n, &lost) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (rows[i].node == node && rows[i].labels == 0)
			r = rows[i];
	free(rows);
	return r;
}

static double peak_total(const struct heapagg *h)
{
	struct heapagg_row *rows, lost;
	size_t n;
	double t = 0;

	if (heapagg_rows(h, &rows, &n, &lost) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		t += rows[i].peak_bytes;
	free(rows);
	return t;
}

#define MIB (1ull << 20)

/* n blocks of size bytes by node from address base on, at rate 1 (every
 * allocation recorded: values exact). */
static void put(struct heapagg *h, uint32_t node, uint64_t base, int n,
		uint64_t size)
{
	for (int i = 0; i < n; i++)
		heapagg_alloc(h, 1, node, 0, size, base + (uint64_t)i * 16);
}

static void drop(struct heapagg *h, uint64_t base, int n)
{
	for (int i = 0; i < n; i++)
		heapagg_release(h, base + (uint64_t)i * 16);
}

static void test_peak(void)
{
	struct heapagg *h = heapagg_new();

	CHECK_OR_RETURN(h != NULL, "5.0 heapagg_new", );
	/* the program: 150 MiB by node 1 and 50 by node 2 at the
	 * same moment, both dropped, then 100 by node 3 */
	heapagg_set_now(h, 1000);
	put(h, 1, 0x10000, 150, MIB);
	heapagg_set_now(h, 2000);
	put(h, 2, 0x20000, 50, MIB);
	CHECK(heapagg_inuse_est(h) == 200 * MIB, "5.1 the estimate: 200 MiB");
	heapagg_set_now(h, 3000);
	drop(h, 0x10000, 150);
	drop(h, 0x20000, 50);
	CHECK(heapagg_inuse_est(h) == 0, "5.2 all freed: estimate 0");
	put(h, 3, 0x30000, 100, MIB);
	struct heapagg_row a = row_of(h, 1), b = row_of(h, 2),
			   c = row_of(h, 3);
	double slack = 1.0 / (1 << HEAPAGG_PEAK_SLACK_SHIFT);
	CHECK(a.peak_bytes == 150.0 * MIB && a.peak_objects == 150,
	      "5.3 node 1: its 150 MiB at the peak (the last MiB was the "
	      "copy's)");
	CHECK(b.peak_bytes <= 50.0 * MIB &&
		      b.peak_bytes >= 50.0 * MIB - 200.0 * MIB * slack,
	      "5.4 node 2: 50 MiB at the peak, within the slack");
	CHECK(c.peak_bytes == 0 && c.inuse_bytes == 100.0 * MIB,
	      "5.5 node 3, after the peak: absent from it, in use now");
	struct heapagg_peak wp = heapagg_window_peak(h);
	CHECK(wp.bytes == 200 * MIB && wp.unix_ns == 2000,
	      "5.6 the exact high and the time of its frame");
	CHECK(a.inuse_bytes == 0 && b.inuse_bytes == 0,
	      "5.7 nodes 1 and 2: nothing in use now");

	/* the slack: a rise of less than 1/64 over the last copy makes no
	 * new copy (the table stays), the high moves; more than that
	 * copies */
	struct heapagg *g = heapagg_new();
	CHECK_OR_RETURN(g != NULL, "5.8 heapagg_new", );
	put(g, 1, 0x10000, 64, MIB); /* the copy at 64 MiB: 63 or 64 */
	double t0 = peak_total(g);
	put(g, 2, 0x40000, 1, MIB / 2); /* +0.5 MiB: under 1/64 of 64 */
	CHECK(peak_total(g) == t0 && row_of(g, 2).peak_bytes == 0 &&
		      heapagg_window_peak(g).bytes == 64 * MIB + MIB / 2,
	      "5.8 a rise within the slack: no copy, the high follows");
	put(g, 3, 0x50000, 1, 2 * MIB); /* now 66.5 MiB: past 1/64 */
	CHECK(peak_total(g) == 66.0 * MIB + MIB / 2 &&
		      row_of(g, 2).peak_bytes == MIB / 2 &&
		      row_of(g, 3).peak_bytes == 2.0 * MIB,
	      "5.9 past the slack: copied, every stack in use then");
	CHECK(peak_total(g) >= (double)heapagg_window_peak(g).bytes *
				       (1 - slack),
	      "5.10 the table's total within the slack of the high");

	/* windows: the next starts from what is in use, whatever the last
	 * one's high */
	drop(g, 0x10000, 64);
	heapagg_set_now(g, 5000);
	heapagg_window_reset(g);
	CHECK(peak_total(g) == 2.5 * MIB && row_of(g, 1).peak_bytes == 0 &&
		      heapagg_window_peak(g).bytes == 2 * MIB + MIB / 2 &&
		      heapagg_window_peak(g).unix_ns == 5000 &&
		      heapagg_life_peak(g).bytes == 66 * MIB + MIB / 2,
	      "5.11 a new window's peak: what is in use at its start; the "
	      "life's high kept");
	drop(g, 0x50000, 1);
	drop(g, 0x40000, 1);
	CHECK(heapagg_has_data(g) && row_of(g, 3).peak_bytes == 2.0 * MIB,
	      "5.12 a window of frees: its peak is its start, and that is "
	      "data to write");
	heapagg_window_reset(g);
	CHECK(!heapagg_has_data(g), "5.13 nothing in use at a window's "
				    "start, nothing since: nothing to write");
	put(g, 4, 0x60000, 3, MIB);
	CHECK(peak_total(g) == 3.0 * MIB, "5.14 the window's own peak");

	/* a new rate recomputes the estimate */
	heapagg_alloc(g, 4 * MIB, 5, 0, MIB, 0x70000);
	double w = heapagg_scale(MIB, 4 * MIB);
	CHECK(fabs((double)heapagg_inuse_est(g) - 4 * w * MIB) <= 4,
	      "5.15 a new rate: every block's estimate at it");

	/* renumbering reaches the peak table */
	heapagg_renumber(h, plus_1000, plus_1000, NULL);
	CHECK(row_of(h, 1001).peak_bytes == 150.0 * MIB &&
		      row_of(h, 1).peak_bytes == 0,
	      "5.16 renumbered: the peak's rows follow");
	heapagg_free(g);
	heapagg_free(h);
}

int main(void)
{
	test_scale();
	test_model();
	test_renumber();
	test_lost();
	test_peak();
	return check_summary();
}
