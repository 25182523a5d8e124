/* SPDX-License-Identifier: MIT */
/* stream.h — the only descriptors the library writes to without opening
 * them itself: stdout and stderr as they were when the process started
 * (docs/architecture.md, guarantee 12). At startup (the first of: the settings being read, the
 * core's sc__init, the report's constructor) it notes whether fd 1 and fd
 * 2 were open and which file each referred to (st_dev, st_ino). Every
 * later write checks that the descriptor still refers to that file: a
 * stream that was closed at startup, or whose number the program reused
 * for a file of its own, gets nothing from the library. Nothing here
 * allocates; everything but sc__stream_keep is async-signal-safe. */
#ifndef SC_STREAM_H
#define SC_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)

/** Note, once, what fd 1 and fd 2 are (later calls return at once). */
void sc__stream_record(void);
/** True when stream fd (1 or 2) was open at startup. */
bool sc__stream_was_open(int fd);
/** Keep a close-on-exec copy of stream fd (1 or 2), so that the report
 * still reaches it after the program closes the number or reuses it: made
 * only while fd still refers to what it did at startup. */
void sc__stream_keep(int fd);
/** The descriptor that reaches stream fd (1 or 2) as it was at startup:
 * the copy while it still refers to that file, else fd itself while it
 * does; -1 when the stream was closed at startup or neither refers to
 * that file now. Checked on every call. */
int sc__stream_fd(int fd);
/** Take what fd (1 or 2) refers to now as that stream, dropping our copy:
 * for the library's own tests, which capture stderr in the process with
 * dup2 and put it back. */
void sc__stream_rebind(int fd);
/** Write buf to stream fd (1 or 2) through sc__stream_fd: nothing at all
 * when the stream is gone. */
void sc__stream_write(int fd, const char *buf, size_t len);

#pragma GCC visibility pop

#endif /* SC_STREAM_H */
