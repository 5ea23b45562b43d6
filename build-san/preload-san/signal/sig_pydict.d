build-san/preload-san/signal/sig_pydict.o: preload/signal/sig_pydict.c \
 preload/pydict.h preload/sampler.h preload/pyabi.h preload/ring.h
preload/pydict.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
