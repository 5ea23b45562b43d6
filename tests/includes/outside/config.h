/* outside/config.h - fixture: a file of another tree. */
int config_value(void);
