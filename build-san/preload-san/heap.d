build-san/preload-san/heap.o: preload/heap.c preload/heap.h \
 preload/guard.h preload/log.h preload/sampler.h preload/pyabi.h \
 preload/ring.h
preload/heap.h:
preload/guard.h:
preload/log.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
