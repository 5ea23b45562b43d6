/*
 * pyroscope.c - the /ingest request a window becomes (see pyroscope.h).
 *
 * Pure string building; any thread.
 */
#include "push/pyroscope.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPY_NAME "pyprof"

/* The multipart boundary: a body that contains it gets a digit more
 * until it does not (RFC 2046: at most 70 characters). */
#define FORM_BOUNDARY "pyprof-waits-6c1f0b9e4d2a"
#define FORM_BOUNDARY_MAX 70

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
		p += sprintf(p, "&from=%" PRIu64 "&until=%" PRIu64 "&format=pprof", from, until);
		if (w->rate_hz)
			p += sprintf(p, "&sampleRate=%u", w->rate_hz);
		sprintf(p, "&spyName=%s", SPY_NAME);
	}
	free(name);
	return q;
}

/* The sample types' display names and units, as the Go SDK sends them
 * for runtime/pprof's block and mutex profiles. */
static const char *form_config(enum push_kind kind)
{
	if (kind == PUSH_BLOCK)
		return "{\"contentions\":{\"units\":\"lock_samples\","
		       "\"display-name\":\"block_count\"},"
		       "\"delay\":{\"units\":\"lock_nanoseconds\","
		       "\"display-name\":\"block_duration\"}}";
	if (kind == PUSH_MUTEX)
		return "{\"contentions\":{\"units\":\"lock_samples\","
		       "\"display-name\":\"mutex_count\"},"
		       "\"delay\":{\"units\":\"lock_nanoseconds\","
		       "\"display-name\":\"mutex_duration\"}}";
	return NULL;
}

/* Whether boundary b (with its leading "--") occurs in data[0..len). */
static int occurs(const void *data, size_t len, const char *b)
{
	size_t n = strlen(b);
	const char *d = data;
	for (size_t i = 0; n <= len && i <= len - n; i++)
		if (d[i] == b[0] && memcmp(d + i, b, n) == 0)
			return 1;
	return 0;
}

int pyroscope_form(enum push_kind kind, const void *data, size_t len,
		   void **out, size_t *out_len)
{
	static const char part[] =
		"--%s\r\nContent-Disposition: form-data; name=\"%s\"; "
		"filename=\"%s\"\r\nContent-Type: "
		"application/octet-stream\r\n\r\n";
	const char *config = form_config(kind);
	char dash[FORM_BOUNDARY_MAX + 3], *body, *p;
	size_t cap;

	if (!config)
		return -EINVAL;
	snprintf(dash, sizeof(dash), "--%s", FORM_BOUNDARY);
	while (occurs(data, len, dash) && strlen(dash) < sizeof(dash) - 1)
		strcat(dash, "0");
	cap = len + strlen(config) + 3 * strlen(dash) + 2 * sizeof(part) +
	      128;
	body = malloc(cap);
	if (!body)
		return -ENOMEM;
	p = body + sprintf(body, part, dash + 2, "profile", "profile.pprof");
	memcpy(p, data, len);
	p += len;
	p += sprintf(p, "\r\n");
	p += sprintf(p, part, dash + 2, "sample_type_config",
		     "sample_type_config.json");
	p += sprintf(p, "%s\r\n%s--\r\n", config, dash);
	*out = body;
	*out_len = (size_t)(p - body);
	return 0;
}

const char *pyroscope_content_type(const void *body, size_t len, char *buf,
				   size_t cap)
{
	const char *b = body, *end;
	size_t n;

	snprintf(buf, cap, "application/octet-stream");
	if (len < 4 || b[0] != '-' || b[1] != '-')
		return buf;
	n = len < FORM_BOUNDARY_MAX + 3 ? len : FORM_BOUNDARY_MAX + 3;
	end = memchr(b, '\r', n);
	if (!end)
		return buf;
	n = (size_t)(end - b) - 2;
	for (size_t i = 0; i < n; i++) /* ours only: no header injected */
		if (!label_char(b[2 + i]) && b[2 + i] != '-')
			return buf;
	snprintf(buf, cap, "multipart/form-data; boundary=%.*s", (int)n, b + 2);
	return buf;
}
