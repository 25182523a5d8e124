/* SPDX-License-Identifier: MIT */
/* settings_doc.c — print the table of settings (src/util/settings.c) as the
 * Markdown table of docs/using.md: one row per setting, from the
 * declarations themselves. `make settings-doc` puts it into docs/using.md
 * between its markers; tests/test_settings.c fails while the two differ.
 * Linked with libsizeclass.a (mk/settings.mk) for the table. */
#include <stdio.h>

#include "util/settings.h"

static const char *when(sc_setting_when_t w) {
  switch (w) {
    case SC_WHEN_ANY:
      return "any time";
    case SC_WHEN_START:
      return "before the first allocation of 1024 B or less, to switch its feature on";
    case SC_WHEN_FRAMES:
      return "before the first `sc_frame_mark`";
    case SC_WHEN_LOAD:
      return "no";
  }
  return "?";
}

int main(void) {
  printf("| setting | values | default | a bad value | `sc_option_set` | what it does |\n");
  printf("|---|---|---|---|---|---|\n");
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    const sc_setting_t *s = &sc__settings[i];
    char expect[320];
    sc__setting_expect(s, expect, sizeof(expect));
    printf("| `%s` | %s | %s | %s | %s | %s |\n", s->name, expect, s->def_doc, s->instead,
           when(s->when), s->doc);
  }
  return 0;
}
