build-san/collector/daemon/conn.o: collector/daemon/conn.c \
 collector/daemon/conn.h collector/common/log.h \
 collector/common/pidring.h collector/daemon/hello.h \
 collector/daemon/proc.h include/pyprof/wire.h include/pyprof/leb128.h \
 collector/common/loop.h
collector/daemon/conn.h:
collector/common/log.h:
collector/common/pidring.h:
collector/daemon/hello.h:
collector/daemon/proc.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
collector/common/loop.h:
