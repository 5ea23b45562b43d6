/*
 * html.h - the one escaper of text in the collector's HTML pages
 * (http/http_index.c) and SVG flame graphs (views/view_flame.c): the five
 * characters markup gives a meaning, as entities that both HTML and XML
 * read. What else a caller does with a byte (control characters, UTF-8
 * checks, a budget) stays the caller's.
 *
 * Header only; any thread.
 */
#ifndef PYPROF_COLLECTOR_HTML_H
#define PYPROF_COLLECTOR_HTML_H

#include <stdio.h>

/* Writes c's entity and returns 1 if c is one of & < > " ', else writes
 * nothing and returns 0. */
static inline int html_entity(FILE *out, int c)
{
	const char *e;
	switch (c) {
	case '&':
		e = "&amp;";
		break;
	case '<':
		e = "&lt;";
		break;
	case '>':
		e = "&gt;";
		break;
	case '"':
		e = "&quot;";
		break;
	case '\'':
		e = "&#39;";
		break;
	default:
		return 0;
	}
	fputs(e, out);
	return 1;
}

#endif /* PYPROF_COLLECTOR_HTML_H */
