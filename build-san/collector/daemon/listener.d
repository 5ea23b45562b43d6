build-san/collector/daemon/listener.o: collector/daemon/listener.c \
 collector/daemon/listener.h collector/common/checked.h \
 collector/common/fileio.h collector/common/path.h
collector/daemon/listener.h:
collector/common/checked.h:
collector/common/fileio.h:
collector/common/path.h:
