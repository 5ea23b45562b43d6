build-san/preload-san/signal/sig_asyncio.o: preload/signal/sig_asyncio.c \
 preload/asyncio.h preload/pydict.h preload/guard.h preload/sampler.h \
 preload/pyabi.h preload/ring.h
preload/asyncio.h:
preload/pydict.h:
preload/guard.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
