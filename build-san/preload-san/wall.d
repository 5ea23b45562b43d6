build-san/preload-san/wall.o: preload/wall.c preload/wall.h \
 preload/asyncio.h preload/pydict.h preload/clock.h preload/guard.h \
 preload/labels.h preload/intern.h include/pyprof/wire.h \
 include/pyprof/leb128.h preload/log.h include/pyprof/defaults.h \
 preload/pythreads.h preload/sampler.h preload/pyabi.h preload/ring.h \
 preload/threads.h preload/tid.h
preload/wall.h:
preload/asyncio.h:
preload/pydict.h:
preload/clock.h:
preload/guard.h:
preload/labels.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/log.h:
include/pyprof/defaults.h:
preload/pythreads.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threads.h:
preload/tid.h:
