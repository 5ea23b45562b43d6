build-san/preload-san/interpose/signals.o: preload/interpose/signals.c \
 preload/control.h preload/config.h preload/guard.h preload/libc_next.h \
 preload/sampler.h preload/pyabi.h preload/ring.h
preload/control.h:
preload/config.h:
preload/guard.h:
preload/libc_next.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
