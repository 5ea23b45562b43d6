build-san/preload-san/native/objects.o: preload/native/objects.c \
 preload/native/objects.h
preload/native/objects.h:
