/*
 * daemon_api.h - the one header the layers above the daemon include:
 * the HTTP server (http/) and the push sinks (push/). It names what they
 * may use of the daemon, and nothing else of daemon/ is theirs to
 * include (tools/check-includes enforces it, tools/layers declares it).
 *
 * What they get, all on the collector's loop thread:
 *   the processes       proc.h: the registry (procs_first, proc_next),
 *                       each process's proc_info, heap and liveness
 *   names               symtab.h: symtab_string for the ids in proc_info
 *   profiles            pprof.h: pprof_build over a list of processes
 *                       (heapagg.h: whether one has heap data)
 *   windows             window.h: profiles of the next N seconds
 *   sampling requests   control.h: switching sampling on for a window
 *   outputs             output.h: struct output_sink, the sinks' side
 *   options             collector_opts.h: what the collector was asked
 *   Unix sockets        listener.h: --http unix:PATH is made as safely as
 *                       the collector's own socket
 *
 * The daemon itself includes none of http/ or push/: main_collector.c
 * plugs them in (collector.h's struct collector_ext).
 */
#ifndef PYPROF_DAEMON_API_H
#define PYPROF_DAEMON_API_H

#include "daemon/collector_opts.h"
#include "daemon/control.h"
#include "daemon/heapagg.h"
#include "daemon/listener.h"
#include "daemon/output.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"
#include "daemon/window.h"

#endif /* PYPROF_DAEMON_API_H */
