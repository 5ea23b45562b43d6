/*
 * idhash.h - an open-addressed hash set of 32-bit ids, for interning.
 *
 * The owner keeps the records (strings, functions, nodes...) in its own
 * dense array and uses an idhash to find "the id of a record equal to this
 * one". Each slot stores the record's id and 32 bits of its hash, so the
 * table grows without calling back into the owner and most mismatches are
 * rejected without touching the record. Id 0 marks an empty slot, so ids
 * start at 1. Linear probing, load at most 1/2.
 *
 * The struct is embedded by its owner (symtab.c, proc.c) but only this
 * module touches its fields. Single-threaded.
 */
#ifndef PYPROF_IDHASH_H
#define PYPROF_IDHASH_H

#include <stddef.h>
#include <stdint.h>

struct idhash {
	/* private to idhash.c */
	uint64_t *slots; /* hash32 << 32 | id; 0 = empty */
	size_t cap;	 /* power of two, or 0 before the first insert */
	size_t n;
};

/* Returns non-zero if the record with this id equals the one searched for. */
typedef int (*idhash_eq_fn)(const void *ctx, uint32_t id);

/* An empty set; no allocation until the first insert. */
void idhash_init(struct idhash *h);
/* Frees the slots; the set is empty and usable again afterwards. */
void idhash_fini(struct idhash *h);

/* The id of the first stored record with this hash for which
 * eq(ctx, id) holds, or 0. */
uint32_t idhash_find(const struct idhash *h, uint64_t hash, idhash_eq_fn eq,
		     const void *ctx);
/* Stores id (non-zero) under hash. The caller has checked with
 * idhash_find that no equal record is stored. 0 or -ENOMEM. */
int idhash_insert(struct idhash *h, uint64_t hash, uint32_t id);

/* Bytes of memory the set holds. */
size_t idhash_mem(const struct idhash *h);

/* 64-bit hashes for building record hashes. Not cryptographic: a hostile
 * client can make its own lookups slow, bounded by its id limits. */
static inline uint64_t idhash_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t idhash_combine(uint64_t h, uint64_t v)
{
	return idhash_mix(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) +
			       (h >> 2)));
}

uint64_t idhash_bytes(const void *p, size_t len);

#endif /* PYPROF_IDHASH_H */
