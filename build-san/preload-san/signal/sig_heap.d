build-san/preload-san/signal/sig_heap.o: preload/signal/sig_heap.c \
 preload/native/cfi.h preload/clock.h preload/guard.h preload/heap.h \
 preload/sampler.h preload/pyabi.h preload/ring.h
preload/native/cfi.h:
preload/clock.h:
preload/guard.h:
preload/heap.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
