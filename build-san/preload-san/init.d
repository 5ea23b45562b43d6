build-san/preload-san/init.o: preload/init.c preload/agent.h \
 preload/config.h preload/clock.h preload/asyncio.h preload/pydict.h \
 preload/control.h preload/guard.h preload/log.h preload/pyabi.h \
 preload/refuse.h preload/sampler.h preload/ring.h preload/threads.h \
 preload/tid.h preload/wall.h preload/cpuclock.h preload/init.h \
 preload/libc_next.h preload/native/interp_text.h preload/threadnames.h \
 preload/native/native.h preload/native/merge.h preload/heap.h \
 preload/forkpause.h
preload/agent.h:
preload/config.h:
preload/clock.h:
preload/asyncio.h:
preload/pydict.h:
preload/control.h:
preload/guard.h:
preload/log.h:
preload/pyabi.h:
preload/refuse.h:
preload/sampler.h:
preload/ring.h:
preload/threads.h:
preload/tid.h:
preload/wall.h:
preload/cpuclock.h:
preload/init.h:
preload/libc_next.h:
preload/native/interp_text.h:
preload/threadnames.h:
preload/native/native.h:
preload/native/merge.h:
preload/heap.h:
preload/forkpause.h:
