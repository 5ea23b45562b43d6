build-san/preload-san/signal/sig_toggle.o: preload/signal/sig_toggle.c \
 preload/control.h preload/config.h preload/guard.h preload/libc_next.h
preload/control.h:
preload/config.h:
preload/guard.h:
preload/libc_next.h:
