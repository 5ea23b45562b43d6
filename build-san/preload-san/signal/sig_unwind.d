build-san/preload-san/signal/sig_unwind.o: preload/signal/sig_unwind.c \
 preload/native/cfi.h preload/sampler.h preload/pyabi.h preload/ring.h
preload/native/cfi.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
