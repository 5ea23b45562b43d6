/*
 * push_sink.h - a push (push.h) as one of the output's sinks (output.h's
 * struct output_sink): which profiles go to --pyroscope and --otlp, as
 * what window (push_types.h's struct push_window), and Pyroscope's
 * grouping of processes by service.
 *
 * main_collector.c makes one sink per push (push_sink_new), adds it to
 * the output (output_add_sink) and, after the output's last windows,
 * removes it (output_clear_sinks) before push_sink_free and push_free.
 *
 * Pyroscope keeps one profile per series and timestamp, and a series is
 * a service (the process name, or --service-name for all) with the static
 * labels: the windows of processes of one service (a server's workers)
 * would be taken for copies of each other. So with --period and without
 * --merge, --pyroscope gets one window per service and period, every
 * sample labelled with its pid (the window_end of its sink), while the
 * files and --otlp (whose resource is the process) stay per process.
 *
 * Loop thread only, like the output.
 */
#ifndef PYPROF_PUSH_SINK_H
#define PYPROF_PUSH_SINK_H

#include "push/push_types.h"

struct collector_opts;
struct output_sink;
struct push;
struct push_sink;
struct symtab;

/* A sink handing profiles to push (which, like opts and st, outlives
 * it), for destination dest. NULL: out of memory. */
struct push_sink *push_sink_new(struct push *push, enum push_dest dest,
				const struct collector_opts *opts,
				struct symtab *st);
/* NULL is fine. */
void push_sink_free(struct push_sink *s);

/* Fills *out with s as an output sink (output_add_sink copies it). */
void push_sink_as_output(struct push_sink *s, struct output_sink *out);

#endif /* PYPROF_PUSH_SINK_H */
