build-san/preload-san/pythreads.o: preload/pythreads.c \
 preload/pythreads.h preload/guard.h preload/pyabi.h preload/sampler.h \
 preload/ring.h preload/tid.h
preload/pythreads.h:
preload/guard.h:
preload/pyabi.h:
preload/sampler.h:
preload/ring.h:
preload/tid.h:
