build-san/collector/common/gunzip.o: collector/common/gunzip.c \
 collector/common/gunzip.h
collector/common/gunzip.h:
