build-san/collector/daemon/hello.o: collector/daemon/hello.c \
 collector/daemon/hello.h collector/daemon/proc.h include/pyprof/wire.h \
 include/pyprof/leb128.h collector/common/grow.h \
 collector/common/wire_fields.h
collector/daemon/hello.h:
collector/daemon/proc.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
collector/common/grow.h:
collector/common/wire_fields.h:
