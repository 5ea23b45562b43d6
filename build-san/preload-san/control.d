build-san/preload-san/control.o: preload/control.c preload/control.h \
 preload/config.h preload/heap.h preload/clock.h preload/cpuclock.h \
 preload/log.h preload/threadnames.h include/pyprof/defaults.h \
 include/pyprof/wire.h include/pyprof/leb128.h preload/sampler.h \
 preload/pyabi.h preload/ring.h preload/threads.h preload/tid.h \
 preload/wall.h
preload/control.h:
preload/config.h:
preload/heap.h:
preload/clock.h:
preload/cpuclock.h:
preload/log.h:
preload/threadnames.h:
include/pyprof/defaults.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threads.h:
preload/tid.h:
preload/wall.h:
