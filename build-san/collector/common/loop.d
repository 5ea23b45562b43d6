build-san/collector/common/loop.o: collector/common/loop.c \
 collector/common/loop.h collector/common/clock.h collector/common/grow.h
collector/common/loop.h:
collector/common/clock.h:
collector/common/grow.h:
