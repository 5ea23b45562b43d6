/*
 * remote_mem.c - the target's memory through a page cache (remote.h),
 * and the loads of the library's walker compiled into pyprof
 * (pyprof/walk.h): a load that cannot be read jumps back to
 * walk_remote_guard, as a fault jumps back to the guard in the library.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "pyprof/walk.h"
#include "remote/remote.h"

#define PAGE 4096u
#define SLOTS 512 /* 2 MiB: a deep stack's frames and code objects */

struct slot {
	uint64_t page; /* address of the page                       */
	unsigned gen;  /* valid when equal to the cache's generation */
	int err;       /* 0: data holds the page; else its errno     */
	uint8_t data[PAGE];
};

static struct slot slots[SLOTS];
static unsigned gen = 1;
static pid_t mem_pid;
static int last_err;
static unsigned long n_pages;
static jmp_buf *jump;

void remote_mem_open(pid_t pid)
{
	mem_pid = pid;
	last_err = 0;
	n_pages = 0;
	walk_remote_afresh();
}

void walk_remote_afresh(void)
{
	if (++gen == 0) {
		memset(slots, 0, sizeof slots);
		gen = 1;
	}
}

int remote_mem_error(void)
{
	return last_err;
}

unsigned long remote_mem_pages(void)
{
	return n_pages;
}

static const struct slot *page_of(uint64_t page)
{
	struct slot *s = &slots[(page / PAGE) % SLOTS];

	if (s->gen != gen || s->page != page) {
		s->page = page;
		s->gen = gen;
		s->err = remote_read(mem_pid, page, s->data, PAGE);
		n_pages++;
	}
	return s;
}

int remote_mem_read(uint64_t addr, void *buf, size_t n)
{
	uint8_t *out = buf;

	if (addr + n < addr) {
		last_err = EFAULT;
		return -EFAULT;
	}
	while (n) {
		uint64_t page = addr & ~(uint64_t)(PAGE - 1);
		size_t at = (size_t)(addr - page);
		size_t take = PAGE - at < n ? PAGE - at : n;
		const struct slot *s = page_of(page);

		if (s->err) {
			last_err = -s->err;
			return s->err;
		}
		memcpy(out, s->data + at, take);
		out += take;
		addr += take;
		n -= take;
	}
	return 0;
}

int remote_mem_copy(void *dst, const void *src, size_t n)
{
	return remote_mem_read((uint64_t)(uintptr_t)src, dst, n) ? -1 : 0;
}

uint64_t walk_remote_load(uint64_t addr, unsigned n)
{
	uint64_t v = 0;

	if (n > sizeof v || remote_mem_read(addr, &v, n) != 0) {
		if (jump)
			longjmp(*jump, 1);
		return 0;
	}
	return v; /* little-endian: the low n bytes */
}

int walk_remote_guard(void (*fn)(void *arg), void *arg)
{
	jmp_buf here;
	jmp_buf *volatile outer = jump;

	if (setjmp(here)) {
		jump = outer;
		return -EFAULT;
	}
	jump = &here;
	fn(arg);
	jump = outer;
	return 0;
}
