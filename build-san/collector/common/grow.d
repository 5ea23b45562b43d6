build-san/collector/common/grow.o: collector/common/grow.c \
 collector/common/grow.h
collector/common/grow.h:
