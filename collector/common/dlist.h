/*
 * dlist.h - intrusive doubly-linked lists: an element struct with prev
 * and next pointers, a head pointer in its owner (and a tail pointer
 * where the list keeps an order to append to). One implementation of
 * linking and unlinking for the collector's lists (processes, sessions,
 * copies, windows, HTTP connections).
 *
 * Macros, because the element types differ; each argument must be an
 * lvalue without side effects (it is evaluated more than once).
 * Header only; the list's owner decides the thread (all of the
 * collector's run on its loop thread).
 */
#ifndef PYPROF_DLIST_H
#define PYPROF_DLIST_H

#include <stddef.h>

/* Puts e first in the list at head. */
#define DLIST_PUSH(head, e)                 \
	do {                                \
		(e)->prev = NULL;           \
		(e)->next = (head);         \
		if (head)                   \
			(head)->prev = (e); \
		(head) = (e);               \
	} while (0)

/* Takes e out of the list at head (its own prev and next are left). */
#define DLIST_UNLINK(head, e)                        \
	do {                                         \
		if ((e)->prev)                       \
			(e)->prev->next = (e)->next; \
		else                                 \
			(head) = (e)->next;          \
		if ((e)->next)                       \
			(e)->next->prev = (e)->prev; \
	} while (0)

/* Puts e last in the list at head and tail. */
#define DLIST_APPEND_T(head, tail, e)       \
	do {                                \
		(e)->next = NULL;           \
		(e)->prev = (tail);         \
		if (tail)                   \
			(tail)->next = (e); \
		else                        \
			(head) = (e);       \
		(tail) = (e);               \
	} while (0)

/* Takes e out of the list at head and tail. */
#define DLIST_UNLINK_T(head, tail, e)       \
	do {                                \
		if (!(e)->next)             \
			(tail) = (e)->prev; \
		DLIST_UNLINK(head, e);      \
	} while (0)

#endif /* PYPROF_DLIST_H */
