build-san/collector/common/timeline_file.o: \
 collector/common/timeline_file.c collector/common/timeline_file.h \
 include/pyprof/wire.h include/pyprof/leb128.h
collector/common/timeline_file.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
