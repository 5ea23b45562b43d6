build-san/preload-san/asyncio.o: preload/asyncio.c preload/asyncio.h \
 preload/pydict.h preload/clock.h preload/log.h preload/sampler.h \
 preload/pyabi.h preload/ring.h preload/threadnames.h
preload/asyncio.h:
preload/pydict.h:
preload/clock.h:
preload/log.h:
preload/sampler.h:
preload/pyabi.h:
preload/ring.h:
preload/threadnames.h:
