/*
 * test_objects.c - the one scan of the loaded objects
 * (preload/native/objects.c) that the unwind tables and the mappings
 * table share: every executable segment once, this program's own code and
 * libc's among them, the stop and skip answers of the callback, and the
 * loader's counters moving with a dlopen and a dlclose.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "check.h"
#include "native/objects.h"

struct seen {
	uintptr_t pc;	/* an address to look for */
	int hits;	/* segments holding pc */
	int segs, objs; /* segments and objects seen */
	int stop_after; /* answer OBJECTS_STOP after this many segments */
	int skip;	/* answer OBJECTS_NEXT_OBJECT to every segment */
	int bad_range;	/* segments with hi <= lo */
};

static int visit(const struct object_seg *s, void *arg)
{
	struct seen *v = arg;
	v->segs++;
	v->objs += s->index == 0;
	v->bad_range += s->hi <= s->lo;
	if (v->pc >= s->lo && v->pc < s->hi)
		v->hits++;
	if (v->stop_after && v->segs == v->stop_after)
		return OBJECTS_STOP;
	return v->skip ? OBJECTS_NEXT_OBJECT : OBJECTS_NEXT_SEG;
}

int main(void)
{
	struct seen all = { (uintptr_t)main, 0, 0, 0, 0, 0, 0 };
	objects_scan(visit, &all);
	CHECK(all.hits == 1, "1.1 this program's code is in one segment");
	CHECK(all.objs >= 2 && all.segs >= all.objs,
	      "1.2 several objects, each with a segment at least");
	CHECK(all.bad_range == 0, "1.3 every segment is a non-empty range");
	struct seen libc = { (uintptr_t)memcpy, 0, 0, 0, 0, 0, 0 };
	objects_scan(visit, &libc);
	CHECK(libc.hits == 1, "1.4 libc's code is in one segment");

	struct seen stop = { 0, 0, 0, 0, 1, 0, 0 };
	objects_scan(visit, &stop);
	CHECK(stop.segs == 1, "2.1 OBJECTS_STOP ends the scan");
	struct seen skip = { 0, 0, 0, 0, 0, 1, 0 };
	objects_scan(visit, &skip);
	CHECK(skip.segs == all.objs && skip.objs == all.objs,
	      "2.2 OBJECTS_NEXT_OBJECT: the first segment of each object");

	struct objects_gen g0, g1, g2;
	int rc0 = objects_gen(&g0);
	CHECK(rc0 == 0, "3.1 glibc keeps the counters");
	CHECK(objects_gen_current(&g0, &g0, rc0), "3.2 unchanged: current");
	/* a library this program has not loaded yet */
	static const char *const libs[] = { "libutil.so.1", "libanl.so.1",
					    "libBrokenLocale.so.1",
					    "libnss_files.so.2", "libz.so.1" };
	void *h = NULL;
	for (size_t i = 0; !h && i < sizeof libs / sizeof libs[0]; i++) {
		void *loaded = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		if (loaded) {
			dlclose(loaded);
			continue;
		}
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	}
	CHECK_OR_RETURN(h != NULL, "3.3 a library to load", 1);
	int rc1 = objects_gen(&g1);
	CHECK(rc1 == 0 && !objects_gen_current(&g0, &g1, rc1),
	      "3.4 after a dlopen the old scan is stale");
	dlclose(h);
	int rc2 = objects_gen(&g2);
	CHECK(rc2 == 0 && !objects_gen_current(&g1, &g2, rc2),
	      "3.5 after a dlclose too");
	CHECK(!objects_gen_current(&g2, &g2, -ENOTSUP),
	      "3.6 without counters nothing is current");
	return check_summary();
}
