build-san/preload-san/threads.o: preload/threads.c preload/fdutil.h \
 preload/threads.h preload/heap.h preload/config.h preload/log.h \
 preload/libc_next.h preload/native/native.h preload/native/merge.h \
 preload/sampler.h preload/pyabi.h preload/ring.h preload/tid.h \
 include/pyprof/wire.h include/pyprof/leb128.h
preload/fdutil.h:
preload/threads.h:
preload/heap.h:
preload/config.h:
preload/log.h:
preload/libc_next.h:
preload/native/native.h:
preload/native/merge.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/tid.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
