/*
 * x86jump.h - where a rel32 jump in x86-64 code goes. The library
 * (preload/native/native.c, in the running interpreter) and pyprof
 * (collector/cli/dump_eval.c, in the interpreter's file) both find the
 * eval loop's out-of-line parts by the jumps that leave it.
 */
#ifndef PYPROF_X86JUMP_H
#define PYPROF_X86JUMP_H

#include <stdint.h>
#include <string.h>

/* 1 and *target if a jcc rel32 (0f 8x) or a jmp rel32 (e9) starts at
 * code[i], code being len bytes at address base; else 0. */
static inline int x86_rel32_jump(const uint8_t *code, uint64_t i,
				 uint64_t len, uint64_t base,
				 uint64_t *target)
{
	int32_t rel;
	uint64_t next;

	if (i + 6 <= len && code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80) {
		memcpy(&rel, code + i + 2, 4);
		next = base + i + 6;
	} else if (i + 5 <= len && code[i] == 0xe9) {
		memcpy(&rel, code + i + 1, 4);
		next = base + i + 5;
	} else {
		return 0;
	}
	*target = next + (uint64_t)(int64_t)rel;
	return 1;
}

#endif
