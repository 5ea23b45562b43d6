/* daemon/api.h - fixture: the gate http/ may include. */
#include "daemon/core.h"
