build-san/preload-san/interpose/exec.o: preload/interpose/exec.c \
 preload/control.h preload/config.h preload/init.h preload/libc_next.h \
 preload/sampler.h preload/pyabi.h preload/ring.h preload/threads.h
preload/control.h:
preload/config.h:
preload/init.h:
preload/libc_next.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threads.h:
