/*
 * otlp_fuzz.c - libFuzzer harness for what `pyprof-collector --otlp URL`
 * and `pyprof convert --format otlp` read from outside the process:
 *
 *   'S' a spooled window (collector/push/spool.c): the file a collector
 *       left in its spool directory, read back by the next one and, when
 *       it is an OTLP window, its query and body made into the request
 *       (push.c's order: spool_read, the destination check, then
 *       otlp_request_body);
 *   'P' a profile file (pprof, gzipped or not) converted by
 *       otlp_from_pprof, as `pyprof convert --format otlp` does;
 *   'Q' a spooled query, a NUL, then a profile: otlp_request_body alone;
 *   'A' the OTLP receiver's answer: header lines, then after an empty
 *       line the body, through push_http.c's libcurl callbacks (the
 *       Retry-After reader and the answer kept for the log).
 *
 * The first byte chooses (any other byte: its value modulo 4, so that
 * every input reaches some parser); the rest is the hostile input.
 * Reported as broken:
 *   - a conversion that succeeds but writes bytes that do not unpack as
 *     an ExportProfilesServiceRequest, that holds no profile, or whose
 *     indices (samples, stacks, locations, functions, mappings,
 *     attributes, strings) point past their dictionary's tables;
 *   - the same input converted twice into different bytes (otlp.h
 *     promises the same bytes for a retried window);
 *   - a failure with no reason, or a result outside the documented ones;
 *   - a spooled window read back with a destination, URL or query that
 *     spool.h says it refuses;
 *   - a Retry-After past PUSH_HTTP_RETRY_AFTER_MAX, or taken from no
 *     Retry-After header, and an answer for the log that is longer than
 *     kept or not printable.
 *
 * Spool files are written into a private directory made once under
 * $TMPDIR (or /tmp) and removed at exit; nothing else is touched. This
 * file includes collector/push/push_http.c to reach its static callbacks
 * (the fuzz build links the other objects without push_http.o), and
 * tests/unit/test_otlp_fuzz.c includes this file (FUZZ_REPLAY defined)
 * to replay the kept corpus and the findings through otlp_fuzz_one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../collector/push/push_http.c"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "push/otlp.h"
#include "push/otlp_request.h"
#include "push/spool.h"

#define OTLP_FUZZ_SPOOL_MAX (4u << 20)

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	OtlpFuzzRequest;

static char otlp_fuzz_dir[4096];

/* Empties the spool directory (windows, set-aside files, the lock). */
static void otlp_fuzz_clean(int and_dir)
{
	DIR *d = opendir(otlp_fuzz_dir);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	if (and_dir)
		rmdir(otlp_fuzz_dir);
}

static void otlp_fuzz_at_exit(void)
{
	otlp_fuzz_clean(1);
}

/* The private spool directory, made at the first input. 0 or -1. */
static int otlp_fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	if (otlp_fuzz_dir[0])
		return 0;
	snprintf(otlp_fuzz_dir, sizeof(otlp_fuzz_dir), "%s/otlp-fuzz.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(otlp_fuzz_dir)) {
		fprintf(stderr, "otlp_fuzz: cannot make %s: %s\n",
			otlp_fuzz_dir, strerror(errno));
		otlp_fuzz_dir[0] = 0;
		return -1;
	}
	atexit(otlp_fuzz_at_exit);
	return 0;
}

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary
	OtlpFuzzDict;

/* Whether index i points into a table of n items. */
#define OTLP_IN(i, n) ((i) >= 0 && (size_t)(i) < (n))

static int attrs_in(const OtlpFuzzDict *d, const int32_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!OTLP_IN(a[i], d->n_attribute_table))
			return 0;
	return 1;
}

/* What a receiver resolves: every index the request holds names an item
 * of its dictionary. NULL, or the first that does not. */
static const char *indices_ok(const OtlpFuzzRequest *r)
{
	const OtlpFuzzDict *d = r->dictionary;
	const size_t ns = d ? d->n_string_table : 0;

	if (!d)
		return "a request without a dictionary";
	for (size_t i = 0; i < d->n_mapping_table; i++)
		if (!OTLP_IN(d->mapping_table[i]->filename_strindex, ns) ||
		    !attrs_in(d, d->mapping_table[i]->attribute_indices,
			      d->mapping_table[i]->n_attribute_indices))
			return "a mapping's index out of range";
	for (size_t i = 0; i < d->n_function_table; i++)
		if (!OTLP_IN(d->function_table[i]->name_strindex, ns) ||
		    !OTLP_IN(d->function_table[i]->system_name_strindex, ns) ||
		    !OTLP_IN(d->function_table[i]->filename_strindex, ns))
			return "a function's string out of range";
	for (size_t i = 0; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location
			*l = d->location_table[i];
		if (!OTLP_IN(l->mapping_index, d->n_mapping_table) ||
		    !attrs_in(d, l->attribute_indices, l->n_attribute_indices))
			return "a location's index out of range";
		for (size_t j = 0; j < l->n_lines; j++)
			if (!OTLP_IN(l->lines[j]->function_index,
				     d->n_function_table))
				return "a line's function out of range";
	}
	for (size_t i = 0; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			if (!OTLP_IN(d->stack_table[i]->location_indices[j],
				     d->n_location_table))
				return "a stack's location out of range";
	for (size_t i = 0; i < d->n_attribute_table; i++)
		if (!OTLP_IN(d->attribute_table[i]->key_strindex, ns) ||
		    !OTLP_IN(d->attribute_table[i]->unit_strindex, ns))
			return "an attribute's string out of range";
	for (size_t k = 0; k < r->n_resource_profiles; k++)
		for (size_t m = 0;
		     m < r->resource_profiles[k]->n_scope_profiles; m++) {
			const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles
				*sc = r->resource_profiles[k]->scope_profiles[m];
			for (size_t i = 0; i < sc->n_profiles; i++) {
				const Opentelemetry__Proto__Profiles__V1development__Profile
					*p = sc->profiles[i];
				if (!p->sample_type ||
				    !OTLP_IN(p->sample_type->type_strindex, ns) ||
				    !OTLP_IN(p->sample_type->unit_strindex, ns))
					return "a profile's sample type out of "
					       "range";
				for (size_t j = 0; j < p->n_samples; j++) {
					const Opentelemetry__Proto__Profiles__V1development__Sample *smp =
						p->samples[j];
					if (!OTLP_IN(smp->stack_index,
						     d->n_stack_table) ||
					    !OTLP_IN(smp->link_index,
						     d->n_link_table) ||
					    !attrs_in(d, smp->attribute_indices,
						      smp->n_attribute_indices))
						return "a sample's index out of "
						       "range";
				}
			}
		}
	return NULL;
}

/* A converter's result: 0 with a request, or -EINVAL with a reason, or
 * -ENOMEM. NULL, or what broke. */
static const char *check_request(int rc, const void *out, size_t len,
				 const char *err)
{
	OtlpFuzzRequest *r;
	const char *bad;
	size_t n;

	if (rc == -ENOMEM)
		return NULL;
	if (rc == -EINVAL)
		return err[0] ? NULL : "a refusal without a reason";
	if (rc != 0)
		return "a result that is not 0, -EINVAL or -ENOMEM";
	r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, out);
	if (!r)
		return "the request written does not unpack";
	n = r->n_resource_profiles == 1 &&
			    r->resource_profiles[0]->n_scope_profiles == 1
		    ? r->resource_profiles[0]->scope_profiles[0]->n_profiles
		    : 0;
	bad = n ? indices_ok(r)
		: "a request without one resource, scope and profile";
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		r, NULL);
	return bad;
}

/* Converts twice (query NULL: otlp_from_pprof with a fixed resource);
 * NULL, or what broke. */
static const char *convert(const char *query, const uint8_t *d, size_t len)
{
	static const char *const keys[] = { "env" }, *const values[] = { "x" };
	const struct otlp_resource res = {
		.service_name = "fuzz", .pid = 42, .host_name = "h",
		.keys = keys, .values = values, .n_attrs = 1,
	};
	void *out[2] = { NULL, NULL };
	size_t out_len[2] = { 0, 0 };
	char err[2][256] = { "", "" };
	int rc[2];
	const char *bad;

	for (int i = 0; i < 2; i++)
		rc[i] = query ? otlp_request_body(query, d, len, &out[i],
						  &out_len[i], err[i], 256)
			      : otlp_from_pprof(d, len, &res, &out[i],
						&out_len[i], err[i], 256);
	bad = check_request(rc[0], out[0], out_len[0], err[0]);
	if (!bad && rc[0] == 0 && rc[1] == 0 &&
	    (out_len[0] != out_len[1] ||
	     memcmp(out[0], out[1], out_len[0]) != 0))
		bad = "the same input converted into different bytes";
	if (!bad && rc[0] != rc[1] && rc[0] != -ENOMEM && rc[1] != -ENOMEM)
		bad = "the same input converted and refused";
	free(out[0]);
	free(out[1]);
	return bad;
}

static int printable_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

/* 'S': the bytes as a spooled window of the next collector. */
static const char *spooled(const uint8_t *d, size_t len)
{
	char path[4200], err[512];
	struct spool_item it;
	struct spool *s;
	const char *bad = NULL;
	uint64_t seq;
	int fd, rc;

	if (otlp_fuzz_setup() < 0)
		return NULL;
	otlp_fuzz_clean(0);
	snprintf(path, sizeof(path), "%s/%016x.push", otlp_fuzz_dir, 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, d, len) != (ssize_t)len) {
		if (fd >= 0)
			close(fd);
		return NULL; /* the harness's disk, not the parser */
	}
	close(fd);
	s = spool_open(otlp_fuzz_dir, OTLP_FUZZ_SPOOL_MAX, err, sizeof(err));
	if (!s)
		return "the spool directory did not open";
	seq = spool_oldest(s);
	if (!seq) {
		spool_close(s);
		return len <= OTLP_FUZZ_SPOOL_MAX ? "the window was not listed"
						  : NULL;
	}
	rc = spool_read(s, seq, &it);
	if (rc == 0) {
		if (!it.dest[0] || !printable_line(it.dest))
			bad = "a destination that is not one printable word";
		else if (!printable_line(it.url))
			bad = "a URL that is not printable";
		else if (it.query[0] != '/' || !printable_line(it.query))
			bad = "a query that is not '/' and printable";
		else if (!strcmp(it.dest, "otlp") &&
			 !strncmp(it.query, OTLP_REQUEST_PATH "?",
				  strlen(OTLP_REQUEST_PATH "?")))
			bad = convert(it.query, it.body, it.len);
		spool_item_free(&it);
	} else if (rc != -EINVAL && rc != -ENOMEM) {
		bad = "spool_read failed with neither -EINVAL nor -ENOMEM";
	}
	spool_close(s);
	return bad;
}

/* 'Q': a query, a NUL, a profile. */
static const char *query_and_body(const uint8_t *d, size_t len)
{
	const uint8_t *nul = memchr(d, 0, len);
	char *q;
	const char *bad;

	if (!nul)
		return NULL;
	q = strndup((const char *)d, (size_t)(nul - d));
	if (!q)
		return NULL;
	bad = convert(q, nul + 1, len - (size_t)(nul - d) - 1);
	free(q);
	return bad;
}

/* 'A': an answer's header lines, then its body, as libcurl hands them
 * over (one header line a call, the body in pieces). */
static const char *answer(const uint8_t *d, size_t len)
{
	struct push_http h;
	char text[PUSH_HTTP_ANSWER + 1], *copy = malloc(len + 1);
	size_t off = 0;
	int asked = 0;

	if (!copy)
		return NULL;
	memcpy(copy, d, len);
	copy[len] = 0;
	memset(&h, 0, sizeof(h));
	while (off < len) {
		char *nl = memchr(copy + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - copy - off) + 1 : len - off;
		if (n >= 12 && !strncasecmp(copy + off, "Retry-After:", 12))
			asked = 1;
		on_header(copy + off, 1, n, &h);
		off += n;
		if (n == 1 || (n == 2 && copy[off - 2] == '\r'))
			break; /* the empty line: the body follows */
	}
	while (off < len) {
		size_t n = len - off < 97 ? len - off : 97;
		if (on_answer(copy + off, 1, n, &h) != n) {
			free(copy);
			return "on_answer did not take the whole piece";
		}
		off += n;
	}
	free(copy);
	if (h.retry_after > PUSH_HTTP_RETRY_AFTER_MAX)
		return "a Retry-After past PUSH_HTTP_RETRY_AFTER_MAX";
	if (h.retry_after && !asked)
		return "a Retry-After taken from no Retry-After header";
	if (h.answer_len > PUSH_HTTP_ANSWER || strlen(h.answer) > h.answer_len)
		return "an answer longer than kept";
	answer_text(&h, text, sizeof(text));
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			return "an answer for the log with a control character";
	return NULL;
}

/* Runs one input; NULL, or the invariant it broke. */
static const char *otlp_fuzz_one(const uint8_t *data, size_t size)
{
	static const char modes[] = "SPQA";
	char mode;

	if (size == 0)
		return NULL;
	mode = strchr(modes, data[0]) && data[0] ? (char)data[0]
						  : modes[data[0] % 4];
	data++;
	size--;
	switch (mode) {
	case 'S':
		return spooled(data, size);
	case 'P':
		return convert(NULL, data, size);
	case 'Q':
		return query_and_body(data, size);
	default:
		return answer(data, size);
	}
}

#ifndef FUZZ_REPLAY
#include <sanitizer/common_interface_defs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = otlp_fuzz_one(data, size);
	if (why) {
		/* stderr is /dev/null under -close_fd_mask=2: the sanitizer's
		 * report goes where libFuzzer's does */
		__sanitizer_report_error_summary(why);
		abort();
	}
	return 0;
}
#endif
