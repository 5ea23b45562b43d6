build-san/preload-san/pydict.o: preload/pydict.c preload/pydict.h
preload/pydict.h:
