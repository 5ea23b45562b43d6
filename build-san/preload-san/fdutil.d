build-san/preload-san/fdutil.o: preload/fdutil.c preload/fdutil.h
preload/fdutil.h:
