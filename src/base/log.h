/* log.h - the library's log hook (rdlock_set_logger) and its helpers. */
#ifndef RDL_LOG_H
#define RDL_LOG_H

#include "rdlock.h"

/* printf-style; formats into a bounded buffer and calls the hook. */
void rdl_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where this thread's next log lines come from (RDLOCK_ERRSRC_*, for
 * rdlock_last_error()): the config loader sets CONFIG while it runs.
 * Returns the previous source (RDLOCK_ERRSRC_*), to put back. */
int rdl_log_source(int src);

/* fork(): take the log mutex before (0), release it after (1), in parent
 * and child alike, so a child never inherits it locked. */
void rdl_log_atfork(int after);

#endif
