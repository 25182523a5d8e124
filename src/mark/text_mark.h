/* SPDX-License-Identifier: MIT */
/* text_mark.h — the labels that bracket the library's code in each section
 * where GCC puts code: .text, and .text.unlikely, .text.hot, .text.startup
 * and .text.exit (cold, hot, constructor and exit code). text_begin.c, the
 * library's first object, opens them; text_end.c, its last, closes them.
 * The Makefile links every library object between the two, in the shared
 * library and in the one relocatable object of the static archive, so each
 * section's library code lies between its two labels wherever the final
 * link puts that section. stack.c reads them to tell the library's own
 * stack frames from the program's. */
#ifndef SC_TEXT_MARK_H
#define SC_TEXT_MARK_H

/** One hidden label `name` at the current end of `section`. */
#define SC_TEXT_LABEL(section, name)                                                    \
  ".pushsection " section ",\"ax\",@progbits\n.globl " name "\n.hidden " name "\n" name \
  ":\n.popsection\n"

/** The labels sc__text[_SECTION]_<which> of every code section. */
#define SC_TEXT_LABELS(which)                                 \
  SC_TEXT_LABEL(".text", "sc__text_" which)                   \
  SC_TEXT_LABEL(".text.unlikely", "sc__text_unlikely_" which) \
  SC_TEXT_LABEL(".text.hot", "sc__text_hot_" which)           \
  SC_TEXT_LABEL(".text.startup", "sc__text_startup_" which)   \
  SC_TEXT_LABEL(".text.exit", "sc__text_exit_" which)

#endif /* SC_TEXT_MARK_H */
