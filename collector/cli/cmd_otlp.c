/*
 * cmd_otlp.c - `pyprof convert --format otlp`: a pprof profile written as
 * the body of an OTLP profiles export (push/otlp.h), the bytes that
 * `pyprof-collector --otlp URL` POSTs to URL/v1development/profiles, so
 * that a profile on disk can be sent by hand (curl --data-binary) or
 * inspected with protoc --decode.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/readfile.h"
#include "push/otlp.h"

/* The largest profile file read (as the views read). */
#define CMD_OTLP_MAX_FILE (1024u << 20)

/* The file's bytes, malloc'd; logs and returns a negative errno. */
static int read_profile(const char *path, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;
	if (fd < 0) {
		rc = -errno;
		log_error("cannot open %s: %s", path, strerror(errno));
		return rc;
	}
	rc = read_fd_all(fd, CMD_OTLP_MAX_FILE, data, len);
	close(fd);
	if (rc < 0)
		log_error("cannot read %s: %s", path,
			  rc == -E2BIG ? "larger than 1 GiB" : strerror(-rc));
	return rc;
}

static int write_out(const char *output, const void *buf, size_t len)
{
	int rc = 0;
	if (output && strcmp(output, "-")) {
		rc = file_write_atomic(output, buf, len, FILEIO_REPLACE);
		if (rc < 0)
			log_error("cannot write %s: %s", output, strerror(-rc));
		return rc;
	}
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
		log_error("writing standard output: %s", strerror(errno));
		rc = -EIO;
	}
	return rc;
}

int cmd_convert_otlp(const char *profile, const char *service_name,
		     const char *output)
{
	struct otlp_resource res = {
		.service_name = service_name ? service_name : "unknown_service",
	};
	uint8_t *data = NULL;
	void *out = NULL;
	size_t len = 0, out_len = 0;
	char err[256];
	int rc;

	if ((rc = read_profile(profile, &data, &len)) < 0)
		goto out;
	rc = otlp_from_pprof(data, len, &res, &out, &out_len, err, sizeof(err));
	if (rc < 0) {
		log_error("%s: %s", profile, err);
		goto out;
	}
	rc = write_out(output, out, out_len);
out:
	free(data);
	free(out);
	return rc;
}
