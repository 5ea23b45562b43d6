build-san/collector/common/log.o: collector/common/log.c \
 collector/common/log.h
collector/common/log.h:
