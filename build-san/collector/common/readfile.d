build-san/collector/common/readfile.o: collector/common/readfile.c \
 collector/common/readfile.h collector/common/grow.h
collector/common/readfile.h:
collector/common/grow.h:
