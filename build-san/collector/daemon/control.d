build-san/collector/daemon/control.o: collector/daemon/control.c \
 collector/daemon/control.h collector/daemon/conn.h \
 collector/common/log.h collector/common/wire_fields.h \
 include/pyprof/wire.h include/pyprof/leb128.h collector/common/loop.h
collector/daemon/control.h:
collector/daemon/conn.h:
collector/common/log.h:
collector/common/wire_fields.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
collector/common/loop.h:
