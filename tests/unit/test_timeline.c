/*
 * test_timeline.c - the timeline file (collector/daemon/timeline.h): records
 * written from symtab nodes come back with the same pid, tid, time (also
 * going back in time across threads), count, value, flags and the stack
 * as the mapped location ids, leaf first; the documented worked example
 * parses; every truncation and corruption of a file is refused without a
 * crash; the memory cap counts drops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "daemon/symtab.h"
#include "daemon/timeline.h"

static void test_round_trip(void)
{
	struct symtab *st = symtab_new();
	struct timeline *tl = timeline_new(0);
	struct timeline_data *d = NULL;
	uint32_t s, fn, l1, l2, n1, n2, map[16] = { 0 };
	char path[] = "/tmp/test_timeline.XXXXXX", err[ERR_LEN];
	int fd = mkstemp(path);

	close(fd);
	symtab_intern_string(st, "f", 1, &s);
	symtab_intern_function(st, s, s, s, 1, &fn);
	symtab_intern_location(st, fn, 10, &l1);
	symtab_intern_location(st, fn, 20, &l2);
	symtab_intern_node(st, 0, l1, &n1);  /* root: l1 */
	symtab_intern_node(st, n1, l2, &n2); /* l1 > l2 */
	map[l1] = 101;
	map[l2] = 102;
	timeline_add(tl, n2, 7, 70, 5000, 0, 1, 10000000);
	timeline_add(tl, n1, 7, 71, 4000, 1, 2, 20000000); /* earlier */
	timeline_add(tl, n2, 8, 80, 9000, 0, 1, 10000000);
	CHECK(timeline_len(tl) == 3 && timeline_dropped(tl) == 0,
	      "1.1 three records");
	CHECK(timeline_write(tl, st, map, 16, 1234, path) == 0, "1.2 written");
	CHECK_OR_RETURN(timeline_read(path, &d, err) == 0, "1.3 read", );
	CHECK(d->profile_time_nanos == 1234 && d->n_records == 3 &&
		      d->n_stacks == 2,
	      "1.4 header, two stacks");
	const struct timeline_rec *r = d->recs;
	CHECK(r[0].pid == 7 && r[0].tid == 70 && r[0].time_ns == 5000 &&
		      r[0].count == 1 && r[0].value == 10000000 && r[0].flags == 0,
	      "1.5 record 0");
	CHECK(r[1].time_ns == 4000 && r[1].tid == 71 && r[1].flags == 1 &&
		      r[1].count == 2,
	      "1.6 record 1 goes back in time");
	CHECK(r[2].pid == 8 && r[2].time_ns == 9000, "1.7 record 2");
	CHECK(r[0].stack == r[2].stack && r[0].stack != r[1].stack,
	      "1.8 one stack per node");
	const uint64_t *locs = d->locs + d->stack_first[r[0].stack];
	CHECK(d->stack_len[r[0].stack] == 2 && locs[0] == 102 &&
		      locs[1] == 101,
	      "1.9 stack: mapped ids, leaf first");
	timeline_data_free(d);

	/* A stack with a location the profile lacks (a process it left
	 * out): those records are dropped, the others written. */
	map[l2] = 0;
	CHECK(timeline_write(tl, st, map, 16, 1234, path) == 0 &&
		      timeline_read(path, &d, err) == 0,
	      "1.10 written without them");
	CHECK(d && d->n_records == 1 && d->recs[0].tid == 71 &&
		      d->n_dropped == 2 && d->n_stacks == 1,
	      "1.11 records of unmapped stacks dropped and counted");
	timeline_data_free(d);
	unlink(path);
	timeline_free(tl);
	symtab_free(st);
}

static void test_example_and_corruption(void)
{
	/* The worked example of timeline.h. */
	static const unsigned char ex[] = {
		0x50,
		0x59,
		0x50,
		0x52,
		0x4f,
		0x46,
		0x54,
		0x4c,
		0x01,
		0x00,
		0x01,
		0x02,
		0x03,
		0x01,
		0x01,
		0x00,
		0x07,
		0x07,
		0xd0,
		0x0f,
		0x01,
		0x80,
		0xad,
		0xe2,
		0x04,
		0x00,
		0x00,
	};
	struct timeline_data *d = NULL;
	char err[ERR_LEN];
	unsigned char bad[sizeof(ex)];
	int ok = 1;

	CHECK_OR_RETURN(timeline_parse(ex, sizeof(ex), &d, err) == 0,
			"2.1 the header's example parses", );
	CHECK(d->n_records == 1 && d->recs[0].time_ns == 1000 &&
		      d->recs[0].value == 10000000 && d->locs[0] == 3 &&
		      d->locs[1] == 1,
	      "2.2 and says what the header says");
	timeline_data_free(d);
	for (size_t n = 0; n < sizeof(ex); n++) {
		d = NULL;
		if (timeline_parse(ex, n, &d, err) != -EINVAL || d)
			ok = 0;
	}
	CHECK(ok, "2.3 every truncation refused");
	memcpy(bad, ex, sizeof(ex));
	bad[15] = 5; /* stack index out of range */
	CHECK(timeline_parse(bad, sizeof(bad), &d, err) == -EINVAL &&
		      strstr(err, "stack"),
	      "2.4 stack index out of range");
	memcpy(bad, ex, sizeof(ex));
	bad[8] = 2;
	CHECK(timeline_parse(bad, sizeof(bad), &d, err) == -EINVAL &&
		      strstr(err, "version"),
	      "2.5 unknown version");
	ok = 1;
	srand(3);
	for (int i = 0; i < 20000; i++) {
		memcpy(bad, ex, sizeof(ex));
		bad[8 + rand() % (sizeof(ex) - 8)] = (unsigned char)rand();
		d = NULL;
		if (timeline_parse(bad, sizeof(bad), &d, err) == 0) {
			ok &= d->n_records <= 1 && d->n_stacks <= 20;
			timeline_data_free(d);
		}
	}
	CHECK(ok, "2.6 random corruption: refused or small, never a crash");
}

static void test_cap(void)
{
	struct timeline *tl = timeline_new(5);
	for (int i = 0; i < 8; i++)
		timeline_add(tl, 1, 1, 1, (uint64_t)i, 0, 1, 1);
	CHECK(timeline_len(tl) == 5 && timeline_dropped(tl) == 3,
	      "3.1 past the cap, records are counted as dropped");
	timeline_free(tl);
}

int main(void)
{
	test_round_trip();
	test_example_and_corruption();
	test_cap();
	return check_summary();
}
