build-san/preload-san/sampler.o: preload/sampler.c preload/sampler.h \
 preload/pyabi.h preload/ring.h
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
