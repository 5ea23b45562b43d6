/* daemon/core.h - fixture. */
#include "common/log.h"
void core_run(void);
