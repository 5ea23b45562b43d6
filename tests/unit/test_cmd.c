/*
 * test_cmd.c - unit tests for the pyprof command's shared helpers
 * (collector/cli/cmd_util.c, through cmd.h): option values, the collector's
 * summary line, command lookup as execvp does it, finding our own files,
 * and the private temporary directory.
 *
 * The subcommands themselves (record) are tested end to end in
 * tests/e2e/record.bats. Single-threaded; makes files under /tmp only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli/cmd.h"

static void test_parse_uint(void)
{
	unsigned long v = 7;

	CHECK(cmd_parse_uint("100", 1, 10000, &v) == 0 && v == 100,
	      "1.1 a plain number parses");
	CHECK(cmd_parse_uint("0100", 1, 10000, &v) == 0 && v == 100,
	      "1.2 leading zeros are fine");
	CHECK(cmd_parse_uint("1", 1, 1, &v) == 0 && v == 1,
	      "1.3 both bounds are inclusive");
	v = 7;
	CHECK(cmd_parse_uint("0", 1, 10000, &v) == -ERANGE && v == 7,
	      "1.4 below the range: -ERANGE, *out untouched");
	CHECK(cmd_parse_uint("10001", 1, 10000, &v) == -ERANGE,
	      "1.5 above the range: -ERANGE");
	CHECK(cmd_parse_uint("abc", 1, 10000, &v) == -EINVAL,
	      "1.6 letters: -EINVAL");
	CHECK(cmd_parse_uint("-1", 1, 10000, &v) == -EINVAL,
	      "1.7 a sign: -EINVAL");
	CHECK(cmd_parse_uint("+5", 1, 10000, &v) == -EINVAL,
	      "1.8 a plus sign: -EINVAL");
	CHECK(cmd_parse_uint(" 5", 1, 10000, &v) == -EINVAL,
	      "1.9 leading space: -EINVAL");
	CHECK(cmd_parse_uint("5 ", 1, 10000, &v) == -EINVAL,
	      "1.10 trailing space: -EINVAL");
	CHECK(cmd_parse_uint("", 1, 10000, &v) == -EINVAL,
	      "1.11 empty: -EINVAL");
	CHECK(cmd_parse_uint("99999999999999999999999", 1, ULONG_MAX, &v) ==
		      -ERANGE,
	      "1.12 overflow: -ERANGE, not a wrapped value");
	CHECK(cmd_parse_uint("1e3", 1, 10000, &v) == -EINVAL,
	      "1.13 exponent: -EINVAL");
}

static void test_summary(void)
{
	struct cmd_summary s;

	CHECK(cmd_summary_parse("processes=1 samples=1234 lost=0\n", &s) ==
			      0 &&
		      s.n_processes == 1 && s.n_samples == 1234 && s.n_lost == 0,
	      "2.1 the collector's line parses");
	CHECK(cmd_summary_parse("lost=3 samples=9 processes=2", &s) == 0 &&
		      s.n_processes == 2 && s.n_samples == 9 && s.n_lost == 3,
	      "2.2 any order, no newline");
	CHECK(cmd_summary_parse("processes=1 threads=4 samples=5 lost=0", &s) ==
			      0 &&
		      s.n_samples == 5,
	      "2.3 unknown keys are skipped");
	CHECK(cmd_summary_parse("processes=1 samples=5", &s) == -EINVAL,
	      "2.4 a missing key: -EINVAL");
	CHECK(cmd_summary_parse("", &s) == -EINVAL, "2.5 empty: -EINVAL");
	CHECK(cmd_summary_parse("processes=3 samples=5 lost=0 running=2\n",
				&s) == 0 &&
		      s.n_processes == 3 &&
		      s.n_running == 2,
	      "2.6 running=N: processes still connected at the end");
	CHECK(cmd_summary_parse("processes=3 samples=5 lost=0", &s) == 0 &&
		      s.n_running == 0,
	      "2.7 no running=: none");
	CHECK(cmd_summary_parse("processes=x samples=1 lost=0", &s) == -EINVAL,
	      "2.6 a non-number value does not count");
	CHECK(cmd_summary_parse("processes=1x samples=1 lost=0", &s) ==
		      -EINVAL,
	      "2.7 trailing junk after a number does not count");
	CHECK(cmd_summary_parse("processes=18446744073709551615 samples=0 "
				"lost=0",
				&s) == 0 &&
		      s.n_processes == 18446744073709551615ull,
	      "2.8 64-bit values");
	CHECK(cmd_summary_parse("processes=1 samples=5 lost=0\n", &s) == 0 &&
		      s.n_refused == 0 && s.n_reasons == 0,
	      "2.9 no refused= key: none refused");
	CHECK(cmd_summary_parse("processes=0 samples=0 lost=0 refused=3\n"
				"refused 2 Python 3.16 is not supported\n"
				"refused 1 PyPy is not supported (it lost=9)\n",
				&s) == 0 &&
		      s.n_refused == 3 && s.n_reasons == 2 && s.n_lost == 0 &&
		      s.reasons[0].n == 2 &&
		      strcmp(s.reasons[0].why, "Python 3.16 is not supported") == 0 &&
		      s.reasons[1].n == 1 &&
		      strcmp(s.reasons[1].why, "PyPy is not supported (it lost=9)") == 0,
	      "2.10 reason lines, whose text is not parsed as keys");
	CHECK(cmd_summary_parse("processes=0 samples=0 lost=0 refused=1\n"
				"refused x why\nrefused 1\nother 1 z\n",
				&s) == 0 &&
		      s.n_refused == 1 && s.n_reasons == 0,
	      "2.11 malformed reason lines are skipped");
	CHECK(cmd_summary_parse("processes=2 samples=5 lost=0 heap_procs=2 "
				"heap_peak=209715200 heap_peak_unix_ns="
				"1796521274529000000 heap_peak_pid=4242\n",
				&s) == 0 &&
		      s.heap_procs == 2 && s.heap_peak == 209715200 &&
		      s.heap_peak_unix_ns == 1796521274529000000ull &&
		      s.heap_peak_pid == 4242,
	      "2.12 the heap's peak: how many processes, bytes, when, whose");
	CHECK(cmd_summary_parse("processes=1 samples=5 lost=0\n", &s) == 0 &&
		      s.heap_procs == 0 && s.heap_peak == 0,
	      "2.13 no heap_* keys: no heap data");
}

static int test_find_command(void)
{
	char dir[] = "/tmp/pyprof-test-cmd.XXXXXX";
	char path[256], saved_path[4096] = "";
	const char *old = getenv("PATH");
	int fd, have_old = old != NULL;

	if (old)
		snprintf(saved_path, sizeof(saved_path), "%s", old);
	CHECK(cmd_find_command("sh") == 0, "3.1 sh is found on PATH");
	CHECK(cmd_find_command("/bin/sh") == 0, "3.2 an absolute path");
	CHECK(cmd_find_command("no-such-command-pyprof") == -ENOENT,
	      "3.3 a missing command: -ENOENT");
	CHECK(cmd_find_command("/no/such/file") == -ENOENT,
	      "3.4 a missing path: -ENOENT");
	CHECK(cmd_find_command("/tmp") == -EACCES,
	      "3.5 a directory: -EACCES (execvp says EACCES too)");
	CHECK(cmd_find_command("") == -ENOENT, "3.6 empty: -ENOENT");

	CHECK_OR_RETURN(mkdtemp(dir) != NULL, "3.7 mkdtemp", -1);
	snprintf(path, sizeof(path), "%s/plain", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	CHECK(cmd_find_command(path) == -EACCES,
	      "3.8 a file without x bits: -EACCES");
	setenv("PATH", dir, 1);
	CHECK(cmd_find_command("plain") == -EACCES,
	      "3.9 found on PATH but not executable: -EACCES");
	snprintf(path, sizeof(path), "%s:/bin:/usr/bin", dir);
	setenv("PATH", path, 1);
	CHECK(cmd_find_command("sh") == 0,
	      "3.10 a later PATH entry that works wins");
	unsetenv("PATH");
	CHECK(cmd_find_command("sh") == 0,
	      "3.11 without PATH, /bin:/usr/bin as execvp does");
	if (have_old)
		setenv("PATH", saved_path, 1);
	snprintf(path, sizeof(path), "%s/plain", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

static int test_find_beside(void)
{
	char dir[] = "/tmp/pyprof-test-beside.XXXXXX";
	char sub[256], lib[256], out[CMD_PATH_MAX], self[CMD_PATH_MAX];
	static const char *const rel[] = { "libx.so", "../lib/libx.so", NULL };
	int fd;

	CHECK(cmd_self_dir(self, sizeof(self)) == 0 && self[0] == '/',
	      "4.1 our own directory is an absolute path");
	CHECK(cmd_self_dir(self, 4) == -ENAMETOOLONG,
	      "4.2 a short buffer: -ENAMETOOLONG");

	CHECK_OR_RETURN(mkdtemp(dir) != NULL, "4.3 mkdtemp", -1);
	snprintf(sub, sizeof(sub), "%s/bin", dir);
	mkdir(sub, 0700);
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	mkdir(lib, 0700);
	CHECK(cmd_find_beside(sub, rel, out, sizeof(out)) == -ENOENT,
	      "4.4 nothing there: -ENOENT");
	snprintf(lib, sizeof(lib), "%s/lib/libx.so", dir);
	fd = open(lib, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	CHECK(cmd_find_beside(sub, rel, out, sizeof(out)) == 0 &&
		      !strcmp(out, lib),
	      "4.5 PREFIX/bin/../lib found, and the path is canonical");
	snprintf(out, sizeof(out), "%s/bin/libx.so", dir);
	mkdir(out, 0700);
	CHECK(cmd_find_beside(sub, rel, out, sizeof(out)) == 0 &&
		      !strcmp(out, lib),
	      "4.6 a directory of that name is skipped");
	snprintf(out, sizeof(out), "%s/bin/libx.so", dir);
	rmdir(out);
	unlink(lib);
	snprintf(lib, sizeof(lib), "%s/lib", dir);
	rmdir(lib);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

static int test_tmpdir(void)
{
	char dir[CMD_PATH_MAX], file[CMD_PATH_MAX + 16];
	const char *old = getenv("TMPDIR");
	char saved[4096] = "";
	struct stat st;
	int fd;

	if (old)
		snprintf(saved, sizeof(saved), "%s", old);
	setenv("TMPDIR", "/tmp", 1);
	CHECK_OR_RETURN(cmd_make_tmpdir(dir, sizeof(dir)) == 0,
			"5.1 a temporary directory is made", -1);
	CHECK(!strncmp(dir, "/tmp/pyprof.", 12), "5.2 under $TMPDIR");
	CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
		      (st.st_mode & 0777) == 0700,
	      "5.3 mode 0700");
	snprintf(file, sizeof(file), "%s/a", dir);
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0)
		close(fd);
	CHECK(cmd_remove_tmpdir(dir) == 0 && stat(dir, &st) != 0,
	      "5.4 removed with the files in it");
	CHECK(cmd_remove_tmpdir(dir) == -ENOENT, "5.5 gone: -ENOENT");

	setenv("TMPDIR", "relative/dir", 1);
	CHECK(cmd_make_tmpdir(dir, sizeof(dir)) == 0 &&
		      !strncmp(dir, "/tmp/pyprof.", 12),
	      "5.6 a relative $TMPDIR falls back to /tmp");
	cmd_remove_tmpdir(dir);
	setenv("TMPDIR",
	       "/tmp/a-directory-name-so-long-that-a-socket-inside-it-would-"
	       "not-fit-in-sun-path-which-holds-only-108-bytes",
	       1);
	CHECK(cmd_make_tmpdir(dir, sizeof(dir)) == 0 &&
		      !strncmp(dir, "/tmp/pyprof.", 12),
	      "5.7 a $TMPDIR too long for a socket path falls back to /tmp");
	cmd_remove_tmpdir(dir);
	setenv("TMPDIR", "/no/such/dir", 1);
	CHECK(cmd_make_tmpdir(dir, sizeof(dir)) == -ENOENT,
	      "5.8 a missing $TMPDIR: -ENOENT");
	if (old)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	return 0;
}

int main(void)
{
	test_parse_uint();
	test_summary();
	test_find_command();
	test_find_beside();
	test_tmpdir();
	return check_summary();
}
