build-san/collector/common/idhash.o: collector/common/idhash.c \
 collector/common/idhash.h
collector/common/idhash.h:
