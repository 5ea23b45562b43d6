build-san/preload-san/heapframe.o: preload/heapframe.c \
 preload/heapframe.h preload/intern.h preload/transport.h \
 preload/fdutil.h include/pyprof/wire.h include/pyprof/leb128.h \
 preload/heap.h
preload/heapframe.h:
preload/intern.h:
preload/transport.h:
preload/fdutil.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/heap.h:
