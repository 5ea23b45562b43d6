build-san/preload-san/native/native.o: preload/native/native.c \
 preload/native/native.h preload/native/merge.h preload/native/cfi.h \
 preload/config.h preload/log.h preload/native/interp_text.h \
 preload/native/objects.h preload/sampler.h preload/pyabi.h \
 preload/ring.h
preload/native/native.h:
preload/native/merge.h:
preload/native/cfi.h:
preload/config.h:
preload/log.h:
preload/native/interp_text.h:
preload/native/objects.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
