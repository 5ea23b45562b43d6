build-san/collector/main_collector.o: collector/main_collector.c \
 collector/common/fileio.h collector/common/log.h \
 collector/common/usage.h collector/daemon/collector.h \
 collector/daemon/collector_opts.h collector/daemon/output.h \
 collector/http/http_pprof.h collector/http/http.h \
 collector/http/http_parse.h collector/push/push.h \
 collector/push/push_types.h collector/common/version.h \
 collector/push/push_opts.h collector/push/push_sink.h \
 include/pyprof/defaults.h
collector/common/fileio.h:
collector/common/log.h:
collector/common/usage.h:
collector/daemon/collector.h:
collector/daemon/collector_opts.h:
collector/daemon/output.h:
collector/http/http_pprof.h:
collector/http/http.h:
collector/http/http_parse.h:
collector/push/push.h:
collector/push/push_types.h:
collector/common/version.h:
collector/push/push_opts.h:
collector/push/push_sink.h:
include/pyprof/defaults.h:
