build-san/preload-san/log.o: preload/log.c preload/log.h
preload/log.h:
