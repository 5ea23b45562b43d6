/*
 * push_opts.c - the push options of pyprof-collector's command line
 * (push_opts.h): each value checked as it is read, with a one-line
 * message naming the option and what it accepts.
 *
 * Single-threaded, from main_collector.c's option parsing.
 */
#include "push/push_opts.h"

#include <errno.h>
#include <fcntl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/checked.h"
#include "push/pyroscope.h"

static char host_name[256];

/* http(s)://HOST[:PORT][/PATH]: no query, fragment, blank or control
 * character; a trailing '/' is dropped (the API's paths are appended). */
static int set_url(const char **where, const char *opt, const char *arg,
		   char *err, size_t cap)
{
	const char *rest = strncmp(arg, "http://", 7) == 0    ? arg + 7
			   : strncmp(arg, "https://", 8) == 0 ? arg + 8
							      : NULL;
	char *url;
	size_t n;

	if (!rest || !*rest || *rest == '/' || strpbrk(arg, "?#") ||
	    strlen(arg) > 2000)
		goto bad;
	for (const char *s = arg; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			goto bad;
	url = strdup(arg);
	if (!url)
		goto bad;
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		url[--n] = 0;
	free((char *)*where); /* given twice: the last one */
	*where = url;	      /* freed by push_opts_free */
	return 0;
bad:
	snprintf(err, cap, "--%s wants http://HOST[:PORT][/PATH] or "
			   "https://..., without ?query or #fragment, not '%s'",
		 opt,
		 arg);
	return -1;
}

static int set_label(struct push_opts *o, const char *arg, char *err,
		     size_t cap)
{
	const char *eq = strchr(arg, '=');
	char *key;

	if (!eq || eq == arg)
		goto bad;
	key = strndup(arg, (size_t)(eq - arg));
	if (!key)
		goto bad;
	if (!pyroscope_valid_label_name(key) ||
	    !pyroscope_valid_label_value(eq + 1)) {
		free(key);
		goto bad;
	}
	for (size_t i = 0; i < o->n_labels; i++)
		if (strcmp(o->label_keys[i], key) == 0) {
			snprintf(err, cap, "--push-label %s is given twice",
				 key);
			free(key);
			return -1;
		}
	if (o->n_labels == PUSH_MAX_LABELS - 1) { /* room for host */
		snprintf(err, cap, "--push-label: at most %d labels",
			 PUSH_MAX_LABELS - 1);
		free(key);
		return -1;
	}
	o->label_keys[o->n_labels] = key;
	o->label_values[o->n_labels++] = eq + 1;
	return 0;
bad:
	snprintf(err, cap, "--push-label wants KEY=VALUE, KEY of "
			   "[A-Za-z0-9_.] (not __name__), VALUE without , { } or "
			   "control characters, not '%s'",
		 arg);
	return -1;
}

/* "Name: value", the name an HTTP token, the value printable. */
static int set_header(struct push_opts *o, const char *arg, char *err,
		      size_t cap)
{
	size_t n = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
			       "OPQRSTUVWXYZ0123456789-!#$%&'*+.^_`|~");
	int ok = n > 0 && arg[n] == ':' && strlen(arg) < 4096;

	for (const char *s = arg; ok && *s; s++)
		ok = (unsigned char)*s >= 0x20 && *s != 0x7f;
	if (ok && (strncasecmp(arg, "content-type:", 13) == 0 ||
		   strncasecmp(arg, "content-length:", 15) == 0 ||
		   strncasecmp(arg, "host:", 5) == 0)) {
		snprintf(err, cap, "--push-header %.*s is set by the "
				   "collector itself",
			 (int)n, arg);
		return -1;
	}
	if (!ok) {
		snprintf(err, cap, "--push-header wants 'Name: value' (an "
				   "HTTP header, no control characters), not '%s'",
			 arg);
		return -1;
	}
	if (o->n_headers == PUSH_MAX_HEADERS) {
		snprintf(err, cap, "--push-header: at most %d headers",
			 PUSH_MAX_HEADERS);
		return -1;
	}
	o->headers[o->n_headers++] = arg;
	return 0;
}

/* The CAs HTTPS trusts: a file another user may change would let them
 * add their own (checked.h; libcurl opens it by name later). */
static int check_ca_file(const char *arg, char *err, size_t cap)
{
	static const struct checked_rules rules = {
		.what = "--push-ca-file",
		.harm = "another user could add a CA of theirs",
		.fix = "give a regular file of yours or root's that others "
		       "cannot write",
		.trust_uid = -1,
		.how = CHECKED_FILE,
	};
	int fd = checked_open(arg, O_RDONLY, &rules, err, cap);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd != -EPERM)
		snprintf(err, cap, "--push-ca-file wants a readable file of "
				   "PEM certificates, not '%s': %s",
			 arg, strerror(-fd));
	return -1;
}

int push_opts_set(struct push_opts *o, const char *name, const char *arg,
		  char *err, size_t cap)
{
	if (strcmp(name, "pyroscope") == 0)
		return set_url(&o->pyroscope_url, name, arg, err, cap);
	if (strcmp(name, "otlp") == 0)
		return set_url(&o->otlp_url, name, arg, err, cap);
	if (strcmp(name, "push-label") == 0)
		return set_label(o, arg, err, cap);
	if (strcmp(name, "push-header") == 0)
		return set_header(o, arg, err, cap);
	if (strcmp(name, "service-name") == 0) {
		if (pyroscope_valid_service(arg)) {
			o->service_name = arg;
			return 0;
		}
		snprintf(err, cap, "--service-name wants 1 to 255 characters "
				   "of [A-Za-z0-9_.-/], not '%s'",
			 arg);
		return -1;
	}
	if (strcmp(name, "push-basic-auth") == 0) {
		int ok = *arg && !strchr(arg, ':') && strlen(arg) < 256;
		for (const char *s = arg; ok && *s; s++)
			ok = (unsigned char)*s > 0x20 && *s != 0x7f;
		if (ok) {
			o->basic_user = arg;
			return 0;
		}
		snprintf(err, cap, "--push-basic-auth wants a user name "
				   "(visible characters, no ':'), not '%s'",
			 arg);
		return -1;
	}
	if (!*arg) {
		snprintf(err, cap, "--%s wants a path, not ''", name);
		return -1;
	}
	if (strcmp(name, "push-password-file") == 0)
		o->password_file = arg;
	else if (strcmp(name, "push-bearer-token-file") == 0)
		o->bearer_file = arg;
	else if (strcmp(name, "push-ca-file") == 0) {
		if (check_ca_file(arg, err, cap) < 0)
			return -1;
		o->ca_file = arg;
	} else /* spool-dir */
		o->spool_dir = arg;
	return 0;
}

/* The options that need --pyroscope, or each other. */
int push_opts_check(struct push_opts *o, int spool_max_given, char *err,
		    size_t cap)
{
	const char *env = getenv("PYPROF_PUSH_PASSWORD");
	const char *orphan = o->service_name	? "--service-name"
			     : o->n_labels	? "--push-label"
			     : o->basic_user	? "--push-basic-auth"
			     : o->password_file ? "--push-password-file"
			     : o->bearer_file	? "--push-bearer-token-file"
			     : o->ca_file	? "--push-ca-file"
			     : o->n_headers	? "--push-header"
			     : o->spool_dir	? "--spool-dir"
			     : spool_max_given	? "--spool-max"
						: NULL;

	if (!o->pyroscope_url && !o->otlp_url) {
		if (orphan)
			snprintf(err, cap, "%s goes with --pyroscope or --otlp",
				 orphan);
		return orphan ? -1 : 0;
	}
	if (o->password_file && !o->basic_user) {
		snprintf(err, cap, "--push-password-file goes with "
				   "--push-basic-auth");
		return -1;
	}
	if (o->basic_user && o->bearer_file) {
		snprintf(err, cap, "--push-basic-auth and "
				   "--push-bearer-token-file exclude each other");
		return -1;
	}
	if (o->basic_user && !o->password_file && !(env && *env)) {
		snprintf(err, cap, "--push-basic-auth needs the password in "
				   "$PYPROF_PUSH_PASSWORD or --push-password-file "
				   "(never on the command line)");
		return -1;
	}
	for (size_t i = 0; i < o->n_labels; i++)
		if (strcmp(o->label_keys[i], "host") == 0)
			return 0;
	if (gethostname(host_name, sizeof(host_name) - 1) < 0 ||
	    !pyroscope_valid_label_value(host_name))
		return 0; /* no host label rather than a refused one */
	o->label_keys[o->n_labels] = strdup("host");
	if (!o->label_keys[o->n_labels])
		return 0;
	o->label_values[o->n_labels++] = host_name;
	return 0;
}

void push_opts_free(struct push_opts *o)
{
	free((char *)o->pyroscope_url);
	free((char *)o->otlp_url);
	for (size_t i = 0; i < o->n_labels; i++)
		free((char *)o->label_keys[i]);
	o->pyroscope_url = o->otlp_url = NULL;
	o->n_labels = 0;
}
