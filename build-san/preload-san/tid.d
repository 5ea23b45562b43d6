build-san/preload-san/tid.o: preload/tid.c preload/tid.h preload/guard.h
preload/tid.h:
preload/guard.h:
