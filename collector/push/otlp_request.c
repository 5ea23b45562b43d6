/*
 * otlp_request.c - a window's OTLP request: its resource kept in a query,
 * and the body made from it (see otlp_request.h).
 *
 * Pure functions; any thread.
 */
#include "push/otlp_request.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push/otlp.h"
#include "push/pyroscope.h"

#define OTLP_MAX_ATTRS PUSH_MAX_LABELS

char *otlp_request_query(const struct push_opts *o,
			 const struct push_window *w)
{
	char svc[256], pair[2200];
	size_t cap = sizeof(OTLP_REQUEST_PATH) + 64 + 3 * sizeof(svc);
	char *q, *p;

	push_service_name(o, w, svc, sizeof(svc));
	for (size_t i = 0; i < o->n_labels; i++)
		cap += 3 * (strlen(o->label_keys[i]) +
			    strlen(o->label_values[i]) + 1) +
		       4;
	q = malloc(cap);
	if (!q)
		return NULL;
	p = q + sprintf(q, "%s?s=", OTLP_REQUEST_PATH);
	push_escape(&p, svc);
	if (w->pid)
		p += sprintf(p, "&p=%" PRIu64, w->pid);
	if (w->kind == PUSH_BLOCK || w->kind == PUSH_MUTEX)
		p += sprintf(p, "&k=%s", w->kind == PUSH_BLOCK ? "block" : "mutex");
	for (size_t i = 0; i < o->n_labels; i++) {
		snprintf(pair, sizeof(pair), "%s=%s", o->label_keys[i],
			 o->label_values[i]);
		p += sprintf(p, "&a=");
		push_escape(&p, pair);
	}
	*p = 0;
	return q;
}

static int hex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* Percent-decodes s in place. 0 or -EINVAL. */
static int unescape(char *s)
{
	char *out = s;
	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		if (hex(s[1]) < 0 || hex(s[2]) < 0)
			return -EINVAL;
		*out++ = (char)(hex(s[1]) << 4 | hex(s[2]));
		s += 2;
	}
	*out = 0;
	return 0;
}

/* Fills res from the query's parameters (which point into q, modified).
 * 0 or -EINVAL. */
static int parse_query(char *q, struct otlp_resource *res,
		       const char **keys, const char **values)
{
	char *save = NULL, *tok;

	q = strchr(q, '?');
	if (!q)
		return -EINVAL;
	for (tok = strtok_r(q + 1, "&", &save); tok;
	     tok = strtok_r(NULL, "&", &save)) {
		char *v = tok + 2, *eq;
		if (strlen(tok) < 2 || tok[1] != '=' || unescape(v) < 0)
			return -EINVAL;
		if (tok[0] == 's') {
			res->service_name = v;
		} else if (tok[0] == 'k') {
			if (strcmp(v, "block") != 0 && strcmp(v, "mutex") != 0)
				return -EINVAL;
			res->profile_kind = v;
		} else if (tok[0] == 'p') {
			res->pid = strtoll(v, NULL, 10);
		} else if (tok[0] == 'a' && (eq = strchr(v, '='))) {
			*eq = 0;
			if (strcmp(v, "host") == 0) {
				res->host_name = eq + 1;
			} else if (res->n_attrs < OTLP_MAX_ATTRS) {
				keys[res->n_attrs] = v;
				values[res->n_attrs++] = eq + 1;
			}
		} else {
			return -EINVAL;
		}
	}
	return res->service_name ? 0 : -EINVAL;
}

int otlp_request_body(const char *query, const void *pprof_gz, size_t len,
		      void **out, size_t *out_len, char *err, size_t err_len)
{
	const char *keys[OTLP_MAX_ATTRS], *values[OTLP_MAX_ATTRS];
	struct otlp_resource res = { .keys = keys, .values = values };
	char *q = strdup(query);
	int rc;

	if (!q)
		return -ENOMEM;
	rc = parse_query(q, &res, keys, values);
	if (rc < 0)
		snprintf(err, err_len, "unreadable resource '%s'", query);
	else
		rc = otlp_from_pprof(pprof_gz, len, &res, out, out_len, err,
				     err_len);
	free(q);
	return rc;
}
