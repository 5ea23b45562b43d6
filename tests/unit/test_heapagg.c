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
 *   4.x lost allocations land on the lost row only.
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
				    9007199254740992.0) * rate;
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
		case 0: case 1: case 2: case 3: { /* alloc (maybe re-alloc) */
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
		case 4: case 5: case 6: /* free: live, or not */
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
	      "2.1 sums and live blocks equal the model's");
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

int main(void)
{
	test_scale();
	test_model();
	test_renumber();
	test_lost();
	return check_summary();
}
