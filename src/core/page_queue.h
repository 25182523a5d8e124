/* SPDX-License-Identifier: MIT */
/* page_queue.h — doubly linked lists of page descriptors: the class queues
 * (arena.c) and the idle lists (purge.c). Linking only; callers keep the
 * page's `queued` flag. */
#ifndef SC_PAGE_QUEUE_H
#define SC_PAGE_QUEUE_H

#include "core/internal.h"

/** Unlink page from q. */
static inline void sc__pq_remove(sc_page_queue_t *q, sc_page_t *page) {
  if (page->prev)
    page->prev->next = page->next;
  else
    q->first = page->next;
  if (page->next)
    page->next->prev = page->prev;
  else
    q->last = page->prev;
  page->next = page->prev = NULL;
}

/** Append page to q. */
static inline void sc__pq_push_back(sc_page_queue_t *q, sc_page_t *page) {
  page->next = NULL;
  page->prev = q->last;
  if (q->last)
    q->last->next = page;
  else
    q->first = page;
  q->last = page;
}

/** Put page first in q. */
static inline void sc__pq_push_front(sc_page_queue_t *q, sc_page_t *page) {
  page->prev = NULL;
  page->next = q->first;
  if (q->first)
    q->first->prev = page;
  else
    q->last = page;
  q->first = page;
}

#endif /* SC_PAGE_QUEUE_H */
