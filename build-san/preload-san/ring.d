build-san/preload-san/ring.o: preload/ring.c preload/ring.h
preload/ring.h:
