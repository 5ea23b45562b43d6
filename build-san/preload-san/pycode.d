build-san/preload-san/pycode.o: preload/pycode.c preload/pycode.h \
 preload/pyabi.h
preload/pycode.h:
preload/pyabi.h:
