build-san/preload-san/native/modules.o: preload/native/modules.c \
 preload/native/modules.h preload/intern.h preload/clock.h \
 preload/guard.h preload/native/objects.h preload/log.h
preload/native/modules.h:
preload/intern.h:
preload/clock.h:
preload/guard.h:
preload/native/objects.h:
preload/log.h:
