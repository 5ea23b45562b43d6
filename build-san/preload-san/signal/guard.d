build-san/preload-san/signal/guard.o: preload/signal/guard.c \
 preload/guard.h preload/libc_next.h
preload/guard.h:
preload/libc_next.h:
