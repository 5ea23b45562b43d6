build-san/preload-san/signal/sig_handler.o: preload/signal/sig_handler.c \
 preload/native/cfi.h preload/clock.h preload/guard.h \
 preload/native/interp_text.h preload/sampler.h preload/pyabi.h \
 preload/ring.h preload/threads.h
preload/native/cfi.h:
preload/clock.h:
preload/guard.h:
preload/native/interp_text.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threads.h:
