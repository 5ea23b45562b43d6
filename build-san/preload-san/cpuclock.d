build-san/preload-san/cpuclock.o: preload/cpuclock.c preload/cpuclock.h \
 preload/clock.h preload/guard.h preload/labels.h preload/intern.h \
 include/pyprof/wire.h include/pyprof/leb128.h include/pyprof/defaults.h \
 preload/log.h preload/ownthread.h preload/pythreads.h preload/sampler.h \
 preload/pyabi.h preload/ring.h preload/taskstate.h preload/threads.h \
 preload/tid.h
preload/cpuclock.h:
preload/clock.h:
preload/guard.h:
preload/labels.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
include/pyprof/defaults.h:
preload/log.h:
preload/ownthread.h:
preload/pythreads.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/taskstate.h:
preload/threads.h:
preload/tid.h:
