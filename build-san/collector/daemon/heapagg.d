build-san/collector/daemon/heapagg.o: collector/daemon/heapagg.c \
 collector/daemon/heapagg.h
collector/daemon/heapagg.h:
