/*
 * test_elfsym.c - native symbolization (collector/symbols/elfsym.h, dwarfline.h)
 * against what this very process knows about itself.
 *
 * The test binary is built with -g, so its own .symtab and .debug_line
 * must name its own functions and lines; libc and libz (stripped, Debian's)
 * must name their exported functions from .dynsym (or libc's debug file
 * from libc6-dbg, when installed), and libz's static functions by file and
 * FDE start; a file with another build id, a relative
 * path or an address outside the file's segments must give no name. The
 * line-table parser must survive random and truncated input.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "symbols/dwarfline.h"
#include "symbols/elfsym.h"

/* Where an address is mapped, as the library would send it. */
struct where {
	uintptr_t addr;
	uint64_t start, offset;
	char path[4096];
	uint8_t id[64];
	size_t id_len;
	int found;
};

static int find(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct where *w = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || w->addr < lo ||
		    w->addr >= lo + ph->p_memsz)
			continue;
		w->start = lo;
		w->offset = ph->p_offset;
		if (info->dlpi_name && info->dlpi_name[0]) {
			strncpy(w->path, info->dlpi_name, sizeof(w->path) - 1);
		} else {
			ssize_t n = readlink("/proc/self/exe", w->path,
					     sizeof(w->path) - 1);
			w->path[n > 0 ? n : 0] = 0;
		}
		for (int j = 0; j < info->dlpi_phnum; j++) {
			const ElfW(Phdr) *nh = &info->dlpi_phdr[j];
			if (nh->p_type != PT_NOTE)
				continue;
			const uint8_t *p = (const uint8_t *)(info->dlpi_addr +
							     nh->p_vaddr);
			size_t off = 0;
			while (off + sizeof(ElfW(Nhdr)) <= nh->p_memsz) {
				ElfW(Nhdr) h;
				memcpy(&h, p + off, sizeof(h));
				size_t na = off + sizeof(h);
				size_t da = na + ((h.n_namesz + 3) & ~3u);
				if (h.n_type == NT_GNU_BUILD_ID &&
				    h.n_descsz <= 64) {
					memcpy(w->id, p + da, h.n_descsz);
					w->id_len = h.n_descsz;
				}
				off = da + ((h.n_descsz + 3) & ~3u);
			}
		}
		w->found = 1;
		return 1;
	}
	return 0;
}

static int where_is(const void *addr, struct where *w)
{
	memset(w, 0, sizeof(*w));
	w->addr = (uintptr_t)addr;
	dl_iterate_phdr(find, w);
	return w->found;
}

/* The function looked up: its one line of code is probe_line. */
__attribute__((noinline)) int probe_fn(volatile int *x);
__attribute__((noinline)) int probe_fn(volatile int *x)
{
	return *x + 1;
}
static const unsigned probe_line = __LINE__ - 2;

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);
	return a >= b && strcmp(s + a - b, tail) == 0;
}

static void test_self(struct elfsym *es)
{
	struct where w;
	struct elfsym_hit hit;
	const void *fn = (const void *)(uintptr_t)&probe_fn;
	CHECK_OR_RETURN(where_is(fn, &w), "1.0 probe_fn is in a segment", );
	int r = elfsym_lookup(es, w.path, w.id, w.id_len, w.start, w.offset,
			      (uint64_t)(uintptr_t)fn + 1, &hit);
	CHECK(r == 1 && hit.name && !strcmp(hit.name, "probe_fn"),
	      "1.1 our own function is named from .symtab");
	CHECK(hit.file_ok && hit.has_symbols, "1.2 the file was read");
	CHECK(hit.has_lines && hit.src_file &&
		      ends_with(hit.src_file, "tests/unit/test_elfsym.c"),
	      "1.3 .debug_line gives our source file");
	CHECK(hit.src_line + 2 >= probe_line && hit.src_line <= probe_line,
	      "1.4 ... and a line of probe_fn");
	CHECK(hit.func_vaddr <= hit.vaddr && hit.vaddr - hit.func_vaddr == 1,
	      "1.5 function start and file address agree");

	/* the same file under another build id: not used */
	uint8_t other[20];
	memset(other, 0xab, sizeof(other));
	r = elfsym_lookup(es, w.path, other, sizeof(other), w.start,
			  w.offset, (uint64_t)(uintptr_t)fn, &hit);
	CHECK(r == 0 && !hit.name && !hit.file_ok,
	      "1.6 a build id mismatch gives no name");
	/* a relative path is never opened */
	r = elfsym_lookup(es, "test_elfsym", NULL, 0, w.start, w.offset,
			  (uint64_t)(uintptr_t)fn, &hit);
	CHECK(r == 0 && !hit.file_ok, "1.7 relative paths are not opened");
	/* an address the file does not map */
	r = elfsym_lookup(es, w.path, w.id, w.id_len, w.start, w.offset,
			  w.start + (1ull << 40), &hit);
	CHECK(r == 0 && !hit.name, "1.8 past the file's segments: no name");
	r = elfsym_lookup(es, "/nonexistent/lib.so", NULL, 0, 0x1000, 0,
			  0x1234, &hit);
	CHECK(r == 0 && !hit.file_ok, "1.9 a missing file: no name");
	r = elfsym_lookup(es, "/dev/zero", NULL, 0, 0x1000, 0, 0x1234, &hit);
	CHECK(r == 0 && !hit.file_ok, "1.10 not a regular file: not read");
}

static void test_library(struct elfsym *es, const char *lib, const char *sym,
			 const char *num)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	void *fn = h ? dlsym(h, sym) : NULL;
	struct where w;
	struct elfsym_hit hit;
	char what[128];

	snprintf(what, sizeof(what), "%s.0 %s:%s found", num, lib, sym);
	CHECK_OR_RETURN(fn && where_is(fn, &w), what, );
	int r = elfsym_lookup(es, w.path, w.id, w.id_len, w.start, w.offset,
			      (uint64_t)(uintptr_t)fn + 2, &hit);
	snprintf(what, sizeof(what), "%s.1 %s names %s (got %s)", num, lib,
		 sym, hit.name ? hit.name : "nothing");
	CHECK(r == 1 && hit.name && strstr(hit.name, sym), what);
	dlclose(h);
}

/* libz is stripped: its static functions (deflate_slow, longest_match...)
 * have no symbol, but each has an FDE: "libz.so.1...+0xSTART". */
static void test_fde_names(struct elfsym *es)
{
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	void *fn = h ? dlsym(h, "deflate") : NULL;
	struct where w;
	struct elfsym_hit hit;
	int synthetic = 0, real = 0, consistent = 1;
	uint64_t last_start = 0;
	char last_name[256] = "";
	CHECK_OR_RETURN(fn && where_is(fn, &w), "6.0 libz mapped", );
	for (uint64_t a = w.start; a < w.start + (64u << 10); a += 16) {
		if (!elfsym_lookup(es, w.path, w.id, w.id_len, w.start,
				   w.offset, a, &hit))
			continue;
		if (!hit.synthetic) {
			real++;
			continue;
		}
		synthetic++;
		if (!strstr(hit.name, "libz.so") || !strstr(hit.name, "+0x") ||
		    hit.func_vaddr > hit.vaddr)
			consistent = 0;
		/* the same function start, the same name */
		if (hit.func_vaddr == last_start && strcmp(hit.name, last_name))
			consistent = 0;
		last_start = hit.func_vaddr;
		snprintf(last_name, sizeof(last_name), "%s", hit.name);
	}
	CHECK(real > 0, "6.1 exported functions keep their names");
	CHECK(synthetic > 0, "6.2 static functions are named by their FDE");
	CHECK(consistent, "6.3 ... as FILE+0xSTART, one name per function");
	dlclose(h);
}

static void test_dwarf_fuzz(void)
{
	uint8_t buf[4096];
	unsigned seed = 12345;
	int survived = 1;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(rand_r(&seed) % sizeof(buf));
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		/* a plausible header now and then */
		if (n > 16 && round % 2) {
			uint32_t len = (uint32_t)(n - 4);
			memcpy(buf, &len, 4);
			buf[4] = (uint8_t)(2 + round % 4);
			buf[5] = 0;
		}
		struct dwarfline *d = dwarfline_parse(buf, n, buf, n, NULL, 0);
		if (d) {
			const char *f;
			uint32_t l;
			dwarfline_find(d, (uint64_t)rand_r(&seed), &f, &l);
			dwarfline_free(d);
		}
	}
	CHECK(survived, "4.1 random .debug_line images parse without crashing");
}

/* Corrupted copies of this very binary (headers, symbol tables, line
 * tables): every lookup must come back, named or not, without a read out
 * of bounds (the ASan build checks that). */
static void test_corrupt_files(void)
{
	char tmpl[] = "/tmp/pyprof-elfsym-XXXXXX";
	int fd = mkstemp(tmpl);
	FILE *in = fopen("/proc/self/exe", "rb");
	static uint8_t img[64u << 20];
	size_t n = in ? fread(img, 1, sizeof(img), in) : 0;
	unsigned seed = 99;
	int survived = 1;
	struct where w;
	if (in)
		fclose(in);
	CHECK_OR_RETURN(fd >= 0 && n > 4096 &&
				where_is((const void *)(uintptr_t)&probe_fn, &w),
			"7.0 a copy of the test binary", );
	for (int round = 0; round < 60; round++) {
		static uint8_t bad[64u << 20];
		memcpy(bad, img, n);
		int flips = 1 + (int)(rand_r(&seed) % 200);
		for (int k = 0; k < flips; k++) {
			/* a third in the first 4 KiB: headers */
			size_t at = rand_r(&seed) % 3 == 0
					    ? (size_t)rand_r(&seed) % 4096
					    : (size_t)rand_r(&seed) % n;
			bad[at] = (uint8_t)rand_r(&seed);
		}
		size_t len = round % 5 == 0 ? (size_t)rand_r(&seed) % n : n;
		if (ftruncate(fd, 0) < 0 || pwrite(fd, bad, len, 0) < 0) {
			survived = 0;
			break;
		}
		struct elfsym *es = elfsym_new();
		struct elfsym_hit hit;
		for (int k = 0; k < 200 && es; k++)
			elfsym_lookup(es, tmpl, NULL, 0, w.start, w.offset,
				      w.start + rand_r(&seed) % (1u << 20),
				      &hit);
		elfsym_free(es);
	}
	close(fd);
	unlink(tmpl);
	CHECK(survived, "7.1 corrupted files are read without crashing");
}

/* The cache holds at most its bound (a client of the machine-wide
 * collector may name any file): the least recently used files go, and come back when asked for
 * again; a file bigger than the whole bound is not kept at all. */
static void test_bound(void)
{
	struct elfsym *es = elfsym_new();
	struct elfsym_hit hit;
	struct where self, z;
	const void *fn = (const void *)(uintptr_t)&probe_fn;
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	void *deflate_fn = h ? dlsym(h, "deflate") : NULL;
	size_t self_bytes, z_bytes;

	CHECK_OR_RETURN(es && deflate_fn && where_is(fn, &self) &&
				where_is(deflate_fn, &z),
			"6.0 our file and libz found", );
	elfsym_lookup(es, self.path, self.id, self.id_len, self.start,
		      self.offset, (uint64_t)(uintptr_t)fn + 1, &hit);
	self_bytes = elfsym_bytes(es);
	elfsym_lookup(es, z.path, z.id, z.id_len, z.start, z.offset,
		      (uint64_t)(uintptr_t)deflate_fn + 2, &hit);
	z_bytes = elfsym_bytes(es) - self_bytes;
	elfsym_free(es);

	/* room for the larger of the two, not for both */
	es = elfsym_new();
	size_t max = (self_bytes > z_bytes ? self_bytes : z_bytes) + 64;
	elfsym_set_max_bytes(es, max);
	for (int round = 0; round < 3; round++) {
		int r = elfsym_lookup(es, self.path, self.id, self.id_len,
				      self.start, self.offset,
				      (uint64_t)(uintptr_t)fn + 1, &hit);
		CHECK(r == 1 && !strcmp(hit.name, "probe_fn") &&
			      elfsym_bytes(es) <= max,
		      "6.1 our file named, the cache within its bound");
		r = elfsym_lookup(es, z.path, z.id, z.id_len, z.start,
				  z.offset,
				  (uint64_t)(uintptr_t)deflate_fn + 2, &hit);
		CHECK(r == 1 && strstr(hit.name, "deflate") &&
			      elfsym_bytes(es) <= max,
		      "6.2 libz named, the cache within its bound");
	}
	elfsym_free(es);

	/* smaller than either: neither kept, no name, a few bytes held */
	es = elfsym_new();
	elfsym_set_max_bytes(es, 4096);
	int r = elfsym_lookup(es, self.path, self.id, self.id_len, self.start,
			      self.offset, (uint64_t)(uintptr_t)fn + 1, &hit);
	CHECK(r == 0 && !hit.file_ok && elfsym_bytes(es) < 4096,
	      "6.3 a file over the whole bound: not kept, not named");
	elfsym_free(es);
	dlclose(h);
}

int main(void)
{
	struct elfsym *es = elfsym_new();
	CHECK_OR_RETURN(es != NULL, "0.1 elfsym_new", 1);
	test_self(es);
	test_library(es, "libz.so.1", "deflate", "2");
	test_library(es, "libc.so.6", "getpid", "3");
	test_fde_names(es);
	test_dwarf_fuzz();
	test_corrupt_files();
	test_bound();
	CHECK(elfsym_bytes(es) > 0, "5.1 the cache holds what it read");
	elfsym_free(es);
	return check_summary();
}
