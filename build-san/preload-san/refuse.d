build-san/preload-san/refuse.o: preload/refuse.c preload/refuse.h \
 preload/transport.h preload/fdutil.h preload/intern.h \
 include/pyprof/wire.h include/pyprof/leb128.h
preload/refuse.h:
preload/transport.h:
preload/fdutil.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
