/* common/log.h - fixture (tests/includes/README.md). */
void log_line(void);
