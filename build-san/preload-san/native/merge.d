build-san/preload-san/native/merge.o: preload/native/merge.c \
 preload/native/merge.h
preload/native/merge.h:
