/* http/server.h - fixture. */
#include "daemon/api.h"
void server_run(void);
