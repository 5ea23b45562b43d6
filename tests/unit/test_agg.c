/*
 * test_agg.c - the aggregator (collector/daemon/agg.h) against a model.
 *
 * Model test (docs/conventions.md, "Tests"): random (node, thread, flags,
 * label set, count, value) records go both into the real agg and into a plain array; the
 * array is then sorted and equal keys summed. Both must give the same set
 * of keys with the same sums. Key ranges vary by round so that the table
 * both sees many repeats (the hot path and its last-hit cache) and grows
 * through several doublings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/agg.h"
#include "check.h"

struct rec {
	uint32_t node, thread, flags, labels;
	uint64_t count, value;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->flags != y->flags)
		return x->flags < y->flags ? -1 : 1;
	if (x->labels != y->labels)
		return x->labels < y->labels ? -1 : 1;
	return 0;
}

/* Sorts recs and sums equal keys in place; returns the number of keys. */
static size_t sort_and_count(struct rec *recs, size_t n)
{
	size_t out = 0;
	qsort(recs, n, sizeof(*recs), rec_cmp);
	for (size_t i = 0; i < n; i++) {
		if (out > 0 && rec_cmp(&recs[out - 1], &recs[i]) == 0) {
			recs[out - 1].count += recs[i].count;
			recs[out - 1].value += recs[i].value;
		} else {
			recs[out++] = recs[i];
		}
	}
	return out;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* One round: n records with keys drawn from the given ranges. */
static void model_round(const char *name, size_t n, uint32_t nodes,
			uint32_t threads, uint32_t flags, uint32_t sets,
			int runs)
{
	struct agg *a = agg_new();
	struct rec *model = calloc(n, sizeof(*model));
	struct rec *got = NULL;
	uint64_t total_count = 0, total_value = 0;
	size_t n_keys, pos = 0, n_got = 0;
	const struct agg_entry *e;
	int ok = 1;

	CHECK(a && model, name);
	if (!a || !model)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct rec r;
		/* With runs, repeat the previous key half of the time, as
		 * a sampled program does. */
		if (runs && i > 0 && (rnd() & 1)) {
			r = model[i - 1];
		} else {
			r.node = 1 + (uint32_t)(rnd() % nodes);
			r.thread = (uint32_t)(rnd() % threads);
			r.flags = (uint32_t)(rnd() % flags);
			r.labels = (uint32_t)(rnd() % sets); /* 0: none */
		}
		r.count = 1 + rnd() % 4;
		r.value = rnd() % 100000000;
		model[i] = r;
		total_count += r.count;
		total_value += r.value;
		if (agg_add(a, r.node, r.thread, r.flags, r.labels, r.count,
			    r.value))
			ok = 0;
	}
	CHECK(ok, "agg_add returned 0 for every record");
	n_keys = sort_and_count(model, n);
	CHECK(agg_len(a) == n_keys, name);
	CHECK(agg_total_count(a) == total_count, "total count matches");
	CHECK(agg_total_value(a) == total_value, "total value matches");

	got = calloc(agg_len(a) + 1, sizeof(*got));
	while (got && (e = agg_next(a, &pos))) {
		if (n_got <= agg_len(a))
			got[n_got++] = (struct rec){ e->node, e->thread,
						     e->flags, e->labels,
						     e->count, e->value };
	}
	CHECK(n_got == n_keys, "iteration visits every key once");
	if (got && n_got == n_keys) {
		qsort(got, n_got, sizeof(*got), rec_cmp);
		ok = 1;
		for (size_t i = 0; i < n_keys; i++)
			if (rec_cmp(&got[i], &model[i]) ||
			    got[i].count != model[i].count ||
			    got[i].value != model[i].value)
				ok = 0;
		CHECK(ok, "every key's count and value match the model");
	}
out:
	free(got);
	free(model);
	agg_free(a);
}

static void test_saturation(void)
{
	struct agg *a = agg_new();
	const struct agg_entry *e;
	size_t pos = 0;

	CHECK(a != NULL, "3.0 agg_new");
	if (!a)
		return;
	agg_add(a, 7, 1, 0, 0, UINT64_MAX - 1, UINT64_MAX - 5);
	agg_add(a, 7, 1, 0, 0, 10, 10);
	e = agg_next(a, &pos);
	CHECK(e && e->count == UINT64_MAX, "3.1 count saturates");
	CHECK(e && e->value == UINT64_MAX, "3.2 value saturates");
	CHECK(agg_total_count(a) == UINT64_MAX, "3.3 total saturates");
	agg_free(a);
}

static void test_clear(void)
{
	struct agg *a = agg_new();
	size_t pos = 0;
	CHECK(a != NULL, "4.0 agg_new");
	if (!a)
		return;
	for (uint32_t i = 1; i <= 5000; i++)
		agg_add(a, i, 0, 0, 0, 1, 1);
	CHECK(agg_len(a) == 5000, "4.1 5000 keys before clear");
	agg_clear(a);
	CHECK(agg_len(a) == 0 && agg_total_count(a) == 0,
	      "4.2 empty after clear");
	CHECK(agg_next(a, &pos) == NULL, "4.3 nothing to iterate");
	agg_add(a, 3, 2, 1, 0, 4, 5);
	pos = 0;
	const struct agg_entry *e = agg_next(a, &pos);
	CHECK(e && e->node == 3 && e->thread == 2 && e->flags == 1 &&
		      e->count == 4 && e->value == 5,
	      "4.4 usable after clear");
	agg_free(a);
}

int main(void)
{
	model_round("1.1 few keys, many repeats", 200000, 20, 3, 4, 3, 1);
	model_round("1.2 many keys, growth", 300000, 100000, 2, 2, 1, 0);
	model_round("1.3 keys differing only by thread", 50000, 1, 5000, 1,
		    1, 0);
	model_round("1.4 keys differing only by flags", 50000, 1, 1, 64, 1, 1);
	model_round("1.5 a single record", 1, 1, 1, 1, 1, 0);
	model_round("1.6 keys differing only by label set", 50000, 1, 1, 1,
		    3000, 1);
	test_saturation();
	test_clear();
	return check_summary();
}
