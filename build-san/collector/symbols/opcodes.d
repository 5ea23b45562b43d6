build-san/collector/symbols/opcodes.o: collector/symbols/opcodes.c \
 collector/symbols/opcodes.h collector/symbols/opcodes_table.h
collector/symbols/opcodes.h:
collector/symbols/opcodes_table.h:
