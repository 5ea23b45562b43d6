build-san/collector/daemon/agg.o: collector/daemon/agg.c \
 collector/daemon/agg.h
collector/daemon/agg.h:
