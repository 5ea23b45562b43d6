build-san/preload-san/transport.o: preload/transport.c \
 preload/transport.h preload/fdutil.h preload/intern.h \
 include/pyprof/wire.h include/pyprof/leb128.h preload/log.h
preload/transport.h:
preload/fdutil.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/log.h:
