build-san/collector/symbols/dwarfline.o: collector/symbols/dwarfline.c \
 collector/symbols/dwarfline.h collector/common/idhash.h \
 collector/common/sorted.h include/pyprof/leb128.h
collector/symbols/dwarfline.h:
collector/common/idhash.h:
collector/common/sorted.h:
include/pyprof/leb128.h:
