build-san/preload-san/native/cfi.o: preload/native/cfi.c \
 preload/native/cfi.h include/pyprof/leb128.h preload/clock.h \
 preload/guard.h preload/native/objects.h preload/log.h
preload/native/cfi.h:
include/pyprof/leb128.h:
preload/clock.h:
preload/guard.h:
preload/native/objects.h:
preload/log.h:
