build-san/preload-san/signal/sig_labels.o: preload/signal/sig_labels.c \
 preload/guard.h preload/labels.h preload/intern.h include/pyprof/wire.h \
 include/pyprof/leb128.h preload/sampler.h preload/pyabi.h preload/ring.h
preload/guard.h:
preload/labels.h:
preload/intern.h:
include/pyprof/wire.h:
include/pyprof/leb128.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
