/* http/server.c - fixture: passes the gate by. */
#include "http/server.h"
#include "daemon/core.h"
