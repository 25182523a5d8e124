/* SPDX-License-Identifier: MIT */
/* options.c — sc_option_set(): the program sets a SIZECLASS_* setting while
 * it runs. The value goes through the reader of the environment and of
 * `sizeclass_options` (settings.c: the same parser, the same warning and
 * fallback), and the module that uses the setting takes it now, or says
 * that it is too late: then the setting keeps its value. */
#include <errno.h>
#include <string.h>

#include "core/internal.h"
#include "core/purge.h"
#include "report/report_sites.h"
#include "core/feature_bits.h"
#include "features/seam.h"
#include "util/settings.h"
#include "sizeclass.h"
#include "features/timeline.h"
#include "report/report.h"

/** Let the module that uses setting id take its new value; false when it
 * no longer can (settings.h: sc_setting_when_t). */
static bool apply(sc_setting_id_t id) {
  switch (id) {
    case SC_SET_STATS:
    case SC_SET_STATS_FORMAT:
    case SC_SET_STATS_SIGNAL:
    case SC_SET_STATS_PID:
      sc__stats_dump_configure();
      /* A report implies exact statistics when they can still start; too
       * late, the report says what was not tracked. */
      if (sc__settings_report_asked()) (void)sc__seam_enable(SC_FEATURE_EXACT);
      return true;
    case SC_SET_PURGE_DELAY_MS:
    case SC_SET_PURGE_STEP:
      sc__purge_apply_settings();
      return true;
    case SC_SET_WARMUP_FRAMES:
    case SC_SET_FRAME_CHECK_AFTER:
      return true; /* read at each mark */
    case SC_SET_FRAME_HISTORY:
      return !sc__timeline_started();
    case SC_SET_LIVE:
      sc__live_configure();
      return true;
    case SC_SET_SYSTEM_TRIM:
      return false; /* glibc's thresholds are set when the library loads */
    default:
      if (!sc__seam_option(id)) return false;
      /* SIZECLASS_SITES alone implies a report at exit; folded stacks are
       * written at exit. */
      if (id == SC_SET_SITES || id == SC_SET_SITES_FORMAT || id == SC_SET_SITES_FOLDED) {
        sc__stats_dump_configure();
        sc__report_sites_arm();
      }
      return true;
  }
}

sc_public bool sc_option_set(const char *name, const char *value) {
  sc__init(); /* the settings are read, the features decided */
  if (name == NULL) {
    errno = EINVAL;
    return false;
  }
  sc_setting_id_t id = sc__setting_find(name, strlen(name));
  if (id == SC_SETTINGS) {
    sc__setting_warn_unknown(name, strlen(name), value != NULL ? value : "");
    errno = EINVAL;
    return false;
  }
  sc_setting_saved_t before;
  sc__setting_save(id, &before);
  sc_setting_state_t st = sc__setting_store(id, value != NULL ? value : "");
  bool same = sc__setting(id) == before.value && sc__setting_state(id) == before.state &&
              strcmp(sc__setting_text(id), before.text) == 0;
  if (!same && !apply(id)) {
    sc__setting_restore(id, &before);
    errno = EBUSY;
    return false;
  }
  if (st == SC_SETTING_BAD) {
    errno = EINVAL;
    return false;
  }
  return true;
}
