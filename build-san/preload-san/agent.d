build-san/preload-san/agent.o: preload/agent.c preload/agent.h \
 preload/config.h preload/native/cfi.h preload/control.h \
 preload/cpuclock.h preload/clock.h preload/guard.h preload/intern.h \
 preload/labels.h include/pyprof/wire.h include/pyprof/leb128.h \
 preload/log.h preload/native/merge.h preload/native/modules.h \
 preload/intern.h preload/native/native.h preload/native/merge.h \
 preload/sampler.h preload/pyabi.h preload/ring.h preload/symbolize.h \
 preload/threads.h preload/transport.h preload/fdutil.h preload/wall.h \
 preload/threadnames.h preload/tid.h preload/lastthread.h preload/heap.h \
 preload/heapframe.h preload/ownthread.h
preload/agent.h:
preload/config.h:
preload/native/cfi.h:
preload/control.h:
preload/cpuclock.h:
preload/clock.h:
preload/guard.h:
preload/intern.h:
preload/labels.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/log.h:
preload/native/merge.h:
preload/native/modules.h:
preload/intern.h:
preload/native/native.h:
preload/native/merge.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/symbolize.h:
preload/threads.h:
preload/transport.h:
preload/fdutil.h:
preload/wall.h:
preload/threadnames.h:
preload/tid.h:
preload/lastthread.h:
preload/heap.h:
preload/heapframe.h:
preload/ownthread.h:
