/*
 * trust.c - whom a client of a collector believes; see trust.h.
 */
#include "client/trust.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyprof/envcheck.h"

/* The environment as config_collector_user reads it: that one variable. */
static const char *collector_user_only(const char *name, void *arg)
{
	(void)arg;
	return strcmp(name, "PYPROF_COLLECTOR_USER") == 0 ? getenv(name)
							  : NULL;
}

long client_trusted_uid(char *err, size_t n)
{
	long uid = -1;

	if (n)
		err[0] = '\0';
	if (config_collector_user(collector_user_only, NULL, &uid, err, n) <
	    0)
		return -1;
	return uid;
}

int client_uid_trusted(uid_t uid, long trust)
{
	return uid == geteuid() || uid == 0 ||
	       (trust >= 0 && uid == (uid_t)trust);
}
