build-san/preload-san/ownthread.o: preload/ownthread.c \
 preload/ownthread.h preload/libc_next.h preload/threads.h preload/tid.h
preload/ownthread.h:
preload/libc_next.h:
preload/threads.h:
preload/tid.h:
