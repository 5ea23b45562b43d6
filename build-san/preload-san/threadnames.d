build-san/preload-san/threadnames.o: preload/threadnames.c \
 preload/threadnames.h preload/guard.h preload/sampler.h preload/pyabi.h \
 preload/ring.h preload/threads.h preload/tid.h preload/ownthread.h
preload/threadnames.h:
preload/guard.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threads.h:
preload/tid.h:
preload/ownthread.h:
