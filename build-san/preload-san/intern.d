build-san/preload-san/intern.o: preload/intern.c preload/intern.h
preload/intern.h:
