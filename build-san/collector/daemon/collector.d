build-san/collector/daemon/collector.o: collector/daemon/collector.c \
 collector/daemon/collector.h collector/daemon/collector_opts.h \
 collector/daemon/conn.h collector/daemon/control.h \
 collector/common/fileio.h collector/daemon/listener.h \
 collector/common/log.h collector/common/path.h \
 collector/common/pidring.h collector/common/loop.h \
 collector/daemon/output.h collector/daemon/proc.h include/pyprof/wire.h \
 include/pyprof/leb128.h include/pyprof/defaults.h \
 collector/daemon/symtab.h
collector/daemon/collector.h:
collector/daemon/collector_opts.h:
collector/daemon/conn.h:
collector/daemon/control.h:
collector/common/fileio.h:
collector/daemon/listener.h:
collector/common/log.h:
collector/common/path.h:
collector/common/pidring.h:
collector/common/loop.h:
collector/daemon/output.h:
collector/daemon/proc.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
include/pyprof/defaults.h:
collector/daemon/symtab.h:
