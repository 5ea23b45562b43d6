build-san/preload-san/native/interp_text.o: preload/native/interp_text.c \
 preload/native/interp_text.h preload/native/objects.h
preload/native/interp_text.h:
preload/native/objects.h:
