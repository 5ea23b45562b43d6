build-san/preload-san/signal/frames.o: preload/signal/frames.c \
 preload/guard.h preload/sampler.h preload/pyabi.h preload/ring.h
preload/guard.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
