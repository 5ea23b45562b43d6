build-san/collector/symbols/elfsym.o: collector/symbols/elfsym.c \
 collector/symbols/elfsym.h collector/symbols/dwarfline.h \
 collector/common/log.h collector/common/sorted.h include/pyprof/leb128.h
collector/symbols/elfsym.h:
collector/symbols/dwarfline.h:
collector/common/log.h:
collector/common/sorted.h:
include/pyprof/leb128.h:
