/* SPDX-License-Identifier: MIT */
/* text_begin.c — the library's first object: it opens the code labels of
 * text_mark.h. */
#include "mark/text_mark.h"

__asm__(SC_TEXT_LABELS("begin"));
