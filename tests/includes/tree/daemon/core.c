/* daemon/core.c - fixture: includes a layer above its own. */
#include "daemon/core.h"
#include "http/server.h"
