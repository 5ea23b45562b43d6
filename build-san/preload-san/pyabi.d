build-san/preload-san/pyabi.o: preload/pyabi.c preload/pyabi.h \
 preload/pyabi_table.h
preload/pyabi.h:
preload/pyabi_table.h:
