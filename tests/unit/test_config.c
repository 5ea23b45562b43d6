/*
 * test_config.c - PYPROF_START, PYPROF_TOGGLE_SIGNAL and
 * PYPROF_COLLECTOR_USER as the library's
 * constructor reads them (preload/base/config.h): accepted forms, defaults,
 * and the values refused, with the one line that names them (the library
 * prints it on stderr, `pyprof record` refuses to start with it; the
 * end-to-end tests ctl.bats 4.1 and record.bats check both).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/config.h"

/* one variable set (var NULL: none), read through config_check */
struct one {
	const char *var, *val;
};

static const char *get_one(const char *name, void *arg)
{
	const struct one *o = arg;
	return o->var && !strcmp(name, o->var) ? o->val : NULL;
}

static char err[256];

static int load(const char *var, const char *val, struct config *c)
{
	struct one o = { var, val };
	return config_check(c, get_one, &o, err, sizeof err);
}

int main(void)
{
	struct config c;
	static const struct {
		const char *val;
		int sig; /* 0: refused */
	} sigs[] = {
		{ "SIGUSR2", SIGUSR2 },
		{ "USR2", SIGUSR2 },
		{ "usr1", SIGUSR1 },
		{ "SigHup", SIGHUP },
		{ "12", SIGUSR2 },
		{ "SIGWINCH", SIGWINCH },
		{ "34", 34 },
		{ "64", 64 },
		{ "SIGKILL", 0 },
		{ "9", 0 },
		{ "STOP", 0 },
		{ "SIGPROF", 0 },
		{ "SIGSEGV", 0 },
		{ "7", 0 },
		{ "SIGABRT", 0 },
		{ "0", 0 },
		{ "65", 0 },
		{ "32", 0 },
		{ "33", 0 },
		{ "SIGFOO", 0 },
		{ "12x", 0 },
		{ "-12", 0 },
	};

	CHECK(load(NULL, NULL, &c) == 0 && c.start == 1 && c.toggle_sig == 0,
	      "1.1 defaults: sampling from the start, no toggle signal");
	CHECK(load("PYPROF_START", "off", &c) == 0 && c.start == 0,
	      "1.2 PYPROF_START=off");
	CHECK(load("PYPROF_START", "on", &c) == 0 && c.start == 1,
	      "1.3 PYPROF_START=on");
	CHECK(load("PYPROF_START", "OFF", &c) == 0 && c.start == 0,
	      "1.4 any case");
	CHECK(load("PYPROF_START", "maybe", &c) == -EINVAL,
	      "1.5 PYPROF_START=maybe refused");
	CHECK(load("PYPROF_START", "1", &c) == -EINVAL,
	      "1.6 PYPROF_START takes on and off only");
	CHECK(load("PYPROF_TOGGLE_SIGNAL", "", &c) == 0 && c.toggle_sig == 0,
	      "2.0 empty: no toggle signal");
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int rc = load("PYPROF_TOGGLE_SIGNAL", sigs[i].val, &c);
		if (sigs[i].sig)
			CHECK(rc == 0 && c.toggle_sig == sigs[i].sig,
			      "2.1 accepted as that signal");
		else
			CHECK(rc == -EINVAL, "2.2 refused");
		if (sigs[i].sig ? rc != 0 || c.toggle_sig != sigs[i].sig
				: rc != -EINVAL)
			fprintf(stderr, "  (value \"%s\")\n", sigs[i].val);
	}
	CHECK(load(NULL, NULL, &c) == 0 && c.collector_uid == -1,
	      "4.1 default: no collector user trusted besides us and root");
	CHECK(load("PYPROF_COLLECTOR_USER", "1234", &c) == 0 &&
		      c.collector_uid == 1234,
	      "4.2 a numeric uid");
	CHECK(load("PYPROF_COLLECTOR_USER", "root", &c) == 0 &&
		      c.collector_uid == 0,
	      "4.3 a name from /etc/passwd");
	CHECK(load("PYPROF_COLLECTOR_USER", "no-such-user-here", &c) ==
		      -EINVAL,
	      "4.4 an unknown name refused");
	CHECK(load("PYPROF_COLLECTOR_USER", "-1", &c) == -EINVAL,
	      "4.5 a negative uid refused");
	CHECK(load("PYPROF_COLLECTOR_USER", "", &c) == 0 &&
		      c.collector_uid == -1,
	      "4.6 empty: none");
	CHECK(load("PYPROF_HZ", "abc", &c) == -EINVAL &&
		      !strcmp(err, "PYPROF_HZ=\"abc\" is not valid: expected a "
				   "whole number of samples per second from 1 "
				   "to 10000"),
	      "3.1 the line names the variable, its value, what it accepts");
	CHECK(load("PYPROF_HZ", "250", &c) == 0 && c.hz == 250 && !err[0],
	      "3.2 a good value: no line");
	return check_summary();
}
