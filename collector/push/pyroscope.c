/*
 * pyroscope.c - the /ingest request a window becomes (see pyroscope.h).
 *
 * Pure string building; any thread.
 */
#include "push/pyroscope.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPY_NAME "pyprof"

static int label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.';
}

static int service_char(char c)
{
	return label_char(c) || c == '-' || c == '/';
}

int pyroscope_valid_service(const char *s)
{
	if (!*s || strlen(s) > 255)
		return 0;
	for (; *s; s++)
		if (!service_char(*s))
			return 0;
	return 1;
}

int pyroscope_valid_label_name(const char *s)
{
	if (!*s || strlen(s) > 128 || strcmp(s, "__name__") == 0)
		return 0;
	for (; *s; s++)
		if (!label_char(*s))
			return 0;
	return 1;
}

/* The server splits pairs at ',' and '}' and trims blanks; control
 * characters have no business in a label either. */
int pyroscope_valid_label_value(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 1024 || s[0] == ' ' || s[n - 1] == ' ')
		return 0;
	for (; *s; s++)
		if (*s == ',' || *s == '}' || *s == '{' ||
		    (unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

void pyroscope_service(const char *comm, char *out, size_t cap)
{
	size_t n = 0, kept = 0;
	for (const char *s = comm; *s && n + 1 < cap; s++) {
		int ok = service_char(*s);
		out[n++] = ok ? *s : '_';
		kept += ok && *s != '_';
	}
	out[n] = 0;
	if (!kept)
		snprintf(out, cap, "python");
}

void push_escape(char **p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			*(*p)++ = (char)c;
		} else {
			*(*p)++ = '%';
			*(*p)++ = hex[c >> 4];
			*(*p)++ = hex[c & 15];
		}
	}
}

void push_service_name(const struct push_opts *o,
		       const struct push_window *w, char *out, size_t cap)
{
	if (o->service_name)
		snprintf(out, cap, "%s", o->service_name);
	else if (w->comm)
		pyroscope_service(w->comm, out, cap);
	else
		snprintf(out, cap, "pyprof");
}

/* SERVICE{k=v,...}: the name parameter before escaping. */
static char *series_name(const struct push_opts *o,
			 const struct push_window *w)
{
	char svc[256];
	size_t cap = sizeof(svc) + 3;
	char *name, *p;

	push_service_name(o, w, svc, sizeof(svc));
	for (size_t i = 0; i < o->n_labels; i++)
		cap += strlen(o->label_keys[i]) + strlen(o->label_values[i]) +
		       2;
	name = malloc(cap);
	if (!name)
		return NULL;
	p = name + sprintf(name, "%s{", svc);
	for (size_t i = 0; i < o->n_labels; i++)
		p += sprintf(p, "%s%s=%s", i ? "," : "", o->label_keys[i],
			     o->label_values[i]);
	strcpy(p, "}");
	return name;
}

char *pyroscope_query(const struct push_opts *o, const struct push_window *w)
{
	char *name = series_name(o, w), *q, *p;
	uint64_t from = w->from_ns / 1000000000u;
	uint64_t until = (w->until_ns + 999999999u) / 1000000000u;

	if (!name)
		return NULL;
	if (until <= from)
		until = from + 1;
	q = malloc(strlen(name) * 3 + 160);
	if (q) {
		p = q + sprintf(q, "/ingest?name=");
		push_escape(&p, name);
		p += sprintf(p, "&from=%" PRIu64 "&until=%" PRIu64
			     "&format=pprof", from, until);
		if (w->rate_hz)
			p += sprintf(p, "&sampleRate=%u", w->rate_hz);
		sprintf(p, "&spyName=%s", SPY_NAME);
	}
	free(name);
	return q;
}
