/* SPDX-License-Identifier: MIT */
/* text_end.c — the library's last object: it closes the code labels of
 * text_mark.h. */
#include "mark/text_mark.h"

__asm__(SC_TEXT_LABELS("end"));
