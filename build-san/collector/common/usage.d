build-san/collector/common/usage.o: collector/common/usage.c \
 collector/common/usage.h collector/common/log.h
collector/common/usage.h:
collector/common/log.h:
