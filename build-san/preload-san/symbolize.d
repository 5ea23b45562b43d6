build-san/preload-san/symbolize.o: preload/symbolize.c \
 preload/symbolize.h preload/intern.h preload/sampler.h preload/pyabi.h \
 preload/ring.h preload/guard.h preload/pycode.h
preload/symbolize.h:
preload/intern.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/guard.h:
preload/pycode.h:
