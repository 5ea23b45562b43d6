build-san/preload-san/lastthread.o: preload/lastthread.c \
 preload/lastthread.h preload/fdutil.h preload/threads.h
preload/lastthread.h:
preload/fdutil.h:
preload/threads.h:
