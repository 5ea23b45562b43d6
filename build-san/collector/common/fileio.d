build-san/collector/common/fileio.o: collector/common/fileio.c \
 collector/common/fileio.h collector/common/path.h
collector/common/fileio.h:
collector/common/path.h:
