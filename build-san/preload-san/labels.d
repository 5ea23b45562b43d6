build-san/preload-san/labels.o: preload/labels.c preload/labels.h \
 preload/intern.h include/pyprof/wire.h include/pyprof/leb128.h \
 preload/asyncio.h preload/pydict.h preload/guard.h preload/log.h \
 preload/sampler.h preload/pyabi.h preload/ring.h
preload/labels.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/asyncio.h:
preload/pydict.h:
preload/guard.h:
preload/log.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
