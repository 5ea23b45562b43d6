build-san/preload-san/config.o: preload/config.c preload/config.h \
 include/pyprof/envcheck.h preload/log.h include/pyprof/defaults.h
preload/config.h:
include/pyprof/envcheck.h:
preload/log.h:
include/pyprof/defaults.h:
