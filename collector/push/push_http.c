/*
 * push_http.c - POSTs with libcurl for the push thread (see push_http.h).
 *
 * Redirects are not followed (a POST body would not be re-sent the same
 * way everywhere, and a spooled window goes only where it was made for);
 * a 3xx is a configuration mistake, reported as such, and the window is
 * kept for when the server or URL is fixed, as in an outage.
 * "Expect: 100-continue" is turned off: the body is small and the wait
 * for a 100 costs a round trip. The server's answer is kept up to
 * PUSH_HTTP_ANSWER bytes, for the log.
 */
#include "push/push_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

#define PUSH_HTTP_ANSWER 300

struct push_http {
	CURL *curl;
	struct curl_slist *headers;
	char *base;
	int (*abort)(void *);
	void *arg;
	unsigned retry_after; /* the last answer's Retry-After, seconds */
	char answer[PUSH_HTTP_ANSWER + 1];
	size_t answer_len;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t on_answer(char *data, size_t size, size_t n, void *arg)
{
	struct push_http *h = arg;
	size_t len = size * n, room = PUSH_HTTP_ANSWER - h->answer_len;
	size_t take = len < room ? len : room;

	memcpy(h->answer + h->answer_len, data, take);
	h->answer_len += take;
	h->answer[h->answer_len] = 0;
	return len;
}

/* Retry-After: N (seconds, digits only as RFC 9110's delay-seconds:
 * "-5" or "+5" is ignored, not read as a huge number; the HTTP-date form
 * is ignored too). */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct push_http *h = arg;
	size_t len = size * n;
	char line[128];
	unsigned long v;
	char *end;

	if (len >= sizeof(line) || len < 12 ||
	    strncasecmp(data, "Retry-After:", 12) != 0)
		return len;
	memcpy(line, data + 12, len - 12);
	line[len - 12] = 0;
	end = line + strspn(line, " \t");
	if (*end < '0' || *end > '9')
		return len;
	v = strtoul(end, &end, 10);
	end += strspn(end, " \t");
	if (*end == '\r' || *end == '\n' || !*end)
		h->retry_after = v > PUSH_HTTP_RETRY_AFTER_MAX
					 ? PUSH_HTTP_RETRY_AFTER_MAX
					 : (unsigned)v;
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct push_http *h = arg;
	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return h->abort && h->abort(h->arg) ? 1 : 0;
}

/* The fixed headers, then opts', then Authorization: Bearer. */
static int make_headers(struct push_http *h, const struct push_opts *o,
			const char *token)
{
	char line[8192];

	h->headers = curl_slist_append(NULL, "Expect:");
	for (size_t i = 0; h->headers && i < o->n_headers; i++)
		h->headers = curl_slist_append(h->headers, o->headers[i]);
	if (h->headers && token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s",
			 token);
		h->headers = curl_slist_append(h->headers, line);
	}
	return h->headers ? 0 : -1;
}

struct push_http *push_http_new(const struct push_opts *o,
				const char *url, const char *password,
				const char *token,
				int (*abort)(void *), void *arg)
{
	static int initialised;
	struct push_http *h;

	if (!initialised) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_error("push: libcurl cannot start");
			return NULL;
		}
		initialised = 1;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		goto fail;
	h->abort = abort;
	h->arg = arg;
	h->base = strdup(url);
	h->curl = curl_easy_init();
	if (!h->base || !h->curl || make_headers(h, o, token) < 0)
		goto fail;
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT,
			 (long)PUSH_HTTP_CONNECT_S);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, (long)PUSH_HTTP_TIMEOUT_S);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "pyprof-collector");
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->ca_file)
		curl_easy_setopt(h->curl, CURLOPT_CAINFO, o->ca_file);
	if (o->basic_user) {
		curl_easy_setopt(h->curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(h->curl, CURLOPT_USERNAME, o->basic_user);
		curl_easy_setopt(h->curl, CURLOPT_PASSWORD,
				 password ? password : "");
	}
	return h;
fail:
	log_error("push: out of memory");
	push_http_free(h);
	return NULL;
}

void push_http_free(struct push_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->headers);
	free(h->base);
	free(h);
}

unsigned push_http_retry_after(const struct push_http *h)
{
	return h->retry_after;
}

/* The answer's first line, printable, for the log. */
static void answer_text(struct push_http *h, char *out, size_t cap)
{
	size_t n = strcspn(h->answer, "\r\n");
	log_printable(out, cap, h->answer, n);
}

enum push_result push_http_post(struct push_http *h, const char *path_query,
				const char *ctype, const void *body,
				size_t len, int *status, char *why,
				size_t why_len)
{
	char url[8192], text[PUSH_HTTP_ANSWER + 1], ct[128];
	struct curl_slist *extra = NULL;
	long code = 0;
	CURLcode rc;

	*status = 0;
	snprintf(url, sizeof(url), "%s%s", h->base, path_query);
	snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
	h->answer_len = 0;
	h->answer[0] = 0;
	h->retry_after = 0;
	h->errbuf[0] = 0;
	/* Content-Type goes first; curl keeps the first of equal names. */
	extra = curl_slist_append(NULL, ct);
	for (struct curl_slist *l = h->headers; extra && l; l = l->next)
		extra = curl_slist_append(extra, l->data);
	if (!extra) {
		snprintf(why, why_len, "out of memory");
		return PUSH_RETRY;
	}
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, extra);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)len);
	rc = curl_easy_perform(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers);
	curl_slist_free_all(extra);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		return rc == CURLE_URL_MALFORMAT ? PUSH_INVALID : PUSH_RETRY;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
	*status = (int)code;
	if (code >= 200 && code < 300)
		return PUSH_SENT;
	answer_text(h, text, sizeof(text));
	if (code >= 300 && code < 400) {
		char *to = NULL, where[256] = "";
		curl_easy_getinfo(h->curl, CURLINFO_REDIRECT_URL, &to);
		if (to)
			log_printable(where, sizeof(where), to, strlen(to));
		snprintf(why, why_len, "HTTP %ld, a redirect%s%s: redirects "
				       "are not followed; give the final URL",
			 code,
			 where[0] ? " to " : "", where);
		return PUSH_RETRY;
	}
	snprintf(why, why_len, "HTTP %ld%s%s", code, text[0] ? ": " : "",
		 text);
	if (code == 408 || code == 429 || code >= 500)
		return PUSH_RETRY;
	return PUSH_REFUSED;
}
