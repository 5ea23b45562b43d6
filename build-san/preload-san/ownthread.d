build-san/preload-san/ownthread.o: preload/ownthread.c \
 preload/ownthread.h
preload/ownthread.h:
