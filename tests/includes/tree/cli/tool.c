/* cli/tool.c - fixture: reaches outside the tree. */
#include "common/log.h"
#include "../../outside/config.h"
