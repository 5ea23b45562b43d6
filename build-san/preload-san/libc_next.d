build-san/preload-san/libc_next.o: preload/libc_next.c \
 preload/libc_next.h
preload/libc_next.h:
