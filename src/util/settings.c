/* SPDX-License-Identifier: MIT */
/* settings.c — the table of every SIZECLASS_* setting, and the one reader
 * (settings.h). mimalloc's options.c is the model: one declaration per
 * setting (name, kind, range, default, what a bad value gets, one line of
 * doc), read once at startup from the environment, else from the
 * program's `sizeclass_options` string, and later through sc_option_set()
 * by the same parser. The docs are checked against this table
 * (tests/test_settings.c; docs/using.md's table is generated from it).
 *
 * Nothing here allocates or uses stdio: the reader runs inside the first
 * malloc. Values are copied into static buffers. */
#include "util/settings.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/format.h"
#include "util/os.h"
#include "util/stream.h"

/* A program may define this (NAME=value words separated by spaces, commas
 * or semicolons); the library reads it when it starts. */
extern const char *const sizeclass_options __attribute__((weak));

/* ---- the table ------------------------------------------------------------------ */

static const sc_setting_word_t stats_words[] = {
    {"0", SC_STATS_OFF},
    {"off", SC_STATS_OFF},
    {"no", SC_STATS_OFF},
    {"false", SC_STATS_OFF},
    {"1", SC_STATS_STDERR},
    {"on", SC_STATS_STDERR},
    {"yes", SC_STATS_STDERR},
    {"true", SC_STATS_STDERR},
    {"stderr", SC_STATS_STDERR},
    {"stdout", SC_STATS_STDOUT},
    {NULL, 0},
};
static const sc_setting_word_t format_words[] = {
    {"text", SC_STATS_FORMAT_TEXT}, {"json", SC_STATS_FORMAT_JSON}, {NULL, 0}};
static const sc_setting_word_t default_word[] = {{"default", 0}, {NULL, 0}};
static const sc_setting_word_t sites_format_words[] = {
    {"report", SC_SITES_FORMAT_REPORT}, {"folded", SC_SITES_FORMAT_FOLDED}, {NULL, 0}};
/* ...and the on/off words (SC_SETF_SWITCH_WORDS): on means warn. */
static const sc_setting_word_t frame_check_words[] = {
    {"warn", SC_FRAME_CHECK_WARN}, {"abort", SC_FRAME_CHECK_ABORT}, {NULL, 0}};
static const sc_setting_word_t budget_action_words[] = {
    {"warn", SC_BUDGET_ACTION_WARN}, {"abort", SC_BUDGET_ACTION_ABORT}, {NULL, 0}};
static const sc_setting_word_t trim_words[] = {
    {"paced", SC_SYSTEM_TRIM_PACED}, {"glibc", SC_SYSTEM_TRIM_GLIBC}, {NULL, 0}};
static const sc_setting_word_t harden_words[] = {
    {"off", SC_HARDEN_OFF}, {"random", SC_HARDEN_RANDOM}, {NULL, 0}};

#define GUARD_RATE 100000 /* one allocation in 100000 */

const sc_setting_t sc__settings[SC_SETTINGS] = {
#define SC_SETTING(id, kind_, when_, flags_, words_, min_, max_, on_, def_, fallback_, def_doc_, \
                   expect_, instead_, doc_)                                                      \
  [SC_SET_##id] = {.name = "SIZECLASS_" #id,                                                     \
                   .kind = SC_KIND_##kind_,                                                      \
                   .when = SC_WHEN_##when_,                                                      \
                   .flags = (flags_),                                                            \
                   .words = (words_),                                                            \
                   .min = (min_),                                                                \
                   .max = (max_),                                                                \
                   .on = (on_),                                                                  \
                   .def = (def_),                                                                \
                   .fallback = (fallback_),                                                      \
                   .def_doc = (def_doc_),                                                        \
                   .expect = (expect_),                                                          \
                   .instead = (instead_),                                                        \
                   .doc = (doc_)},
#include "util/settings.def"
#include "util/startup.h"
#undef SC_SETTING
};

/* Names in the environment that are not settings but belong to the
 * project (sizeclass-run reads SIZECLASS_LIB): no warning for them. */
static const char *const not_settings[] = {"SIZECLASS_LIB"};

/* ---- the state ---------------------------------------------------------------------- */

#define TEXT_CAP SC_SETTING_TEXT_CAP

static uint8_t state[SC_SETTINGS];
static uint64_t value[SC_SETTINGS];
static char text[SC_SETTINGS][TEXT_CAP];

/* 0: not read, 1: being read, 2: read. */
static _Atomic int loaded;

/* ---- words ---------------------------------------------------------------------------- */

static const char *const on_words[] = {"1", "on", "yes", "true"};
static const char *const off_words[] = {"0", "off", "no", "false"};

static bool in_list(const char *v, const char *const *list, size_t n, size_t skip) {
  for (size_t i = skip; i < n; i++)
    if (strcasecmp(v, list[i]) == 0) return true;
  return false;
}

/** True when s ends in suffix, any case. */
static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/** A plain decimal number (k or m suffix with `bytes`); false when v is
 * not one or it overflows. */
static bool parse_decimal(const char *v, bool bytes, uint64_t *out) {
  uint64_t n = 0;
  const char *p = v;
  if (*p < '0' || *p > '9') return false;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (n > (UINT64_MAX - 9) / 10) return false;
    n = n * 10 + (uint64_t)(*p - '0');
  }
  unsigned shift = 0;
  if (bytes && (*p == 'k' || *p == 'K')) shift = 10;
  if (bytes && (*p == 'm' || *p == 'M')) shift = 20;
  if (shift != 0) p++;
  if (*p != 0 || n > (UINT64_MAX >> shift)) return false;
  *out = n << shift;
  return true;
}

/** The signal named by value ("USR2", "SIGUSR2", "usr2", "12", "RTMIN+3")
 * when it is one the report may take (USR1, USR2, a real-time signal); 0
 * otherwise. *why (may be NULL) says why a known signal is refused. */
static int signal_of(const char *value, const char **why);

/** Parse value as setting id would be (no warning, nothing stored):
 * SC_SETTING_GIVEN with *out set, SC_SETTING_UNSET for an empty value, or
 * SC_SETTING_BAD. */
static sc_setting_state_t setting_parse(sc_setting_id_t id, const char *v, uint64_t *out) {
  const sc_setting_t *s = &sc__settings[id];
  const size_t n_on = sizeof(on_words) / sizeof(on_words[0]);
  const size_t n_off = sizeof(off_words) / sizeof(off_words[0]);
  if (v == NULL || v[0] == 0) return SC_SETTING_UNSET;
  if (s->kind == SC_KIND_SWITCH) {
    if (in_list(v, on_words, n_on, 0)) return *out = 1, SC_SETTING_GIVEN;
    if (in_list(v, off_words, n_off, 0)) return *out = 0, SC_SETTING_GIVEN;
    return SC_SETTING_BAD;
  }
  if ((s->flags & SC_SETF_SWITCH_WORDS) != 0) {
    /* For a number "1" is a number (every allocation), not "on". */
    if (in_list(v, on_words, n_on, s->kind == SC_KIND_NUMBER))
      return *out = s->on, SC_SETTING_GIVEN;
    if (in_list(v, off_words, n_off, 0)) return *out = 0, SC_SETTING_GIVEN;
  }
  for (const sc_setting_word_t *w = s->words; w != NULL && w->word != NULL; w++) {
    if (strcasecmp(v, w->word) != 0) continue;
    /* "default": the on value of a number that takes switch words */
    *out = (s->flags & SC_SETF_SWITCH_WORDS) != 0 && s->kind == SC_KIND_NUMBER ? s->on : w->value;
    return SC_SETTING_GIVEN;
  }
  uint64_t n;
  switch (s->kind) {
    case SC_KIND_NUMBER:
      if (!parse_decimal(v, (s->flags & SC_SETF_BYTES) != 0, &n) || n < s->min || n > s->max)
        return SC_SETTING_BAD;
      *out = n;
      return SC_SETTING_GIVEN;
    case SC_KIND_PATH:
      if ((s->flags & SC_SETF_STRICT_PATH) != 0 && strchr(v, '/') == NULL &&
          !ends_with(v, ".txt") && !ends_with(v, ".json"))
        return SC_SETTING_BAD;
      *out = SC_SETTING_PATH;
      return SC_SETTING_GIVEN;
    case SC_KIND_SIGNAL:
      n = (uint64_t)signal_of(v, NULL);
      if (n == 0) return SC_SETTING_BAD;
      *out = n;
      return SC_SETTING_GIVEN;
    default:
      return SC_SETTING_BAD;
  }
}

/* ---- signals ----------------------------------------------------------------------- */

/* Every signal with a name, and why the report may not take it: the
 * program, its shell or its terminal relies on what it does (a report on
 * SIGINT would leave Ctrl-C unable to stop the program, on SIGCHLD break
 * waiting for children), or it cannot be caught, or it reports a fault.
 * Only USR1, USR2 and the real-time signals are free for the report. */
static const struct {
  const char *name;
  int signo;
  const char *why; /* NULL: the report may take it */
} signals[] = {
    {"USR1", SIGUSR1, NULL},
    {"USR2", SIGUSR2, NULL},
    {"HUP", SIGHUP, "a hang-up must still end the program"},
    {"INT", SIGINT, "Ctrl-C must still stop the program"},
    {"QUIT", SIGQUIT, "Ctrl-\\ must still stop the program"},
    {"TERM", SIGTERM, "kill and timeout must still end the program"},
    {"PIPE", SIGPIPE, "the program relies on it when a reader goes away"},
    {"ALRM", SIGALRM, "the program's timers rely on it"},
    {"VTALRM", SIGVTALRM, "the program's timers rely on it"},
    {"PROF", SIGPROF, "profilers rely on it"},
    {"CHLD", SIGCHLD, "waiting for child processes relies on it"},
    {"CONT", SIGCONT, "job control relies on it"},
    {"TSTP", SIGTSTP, "Ctrl-Z must still suspend the program"},
    {"TTIN", SIGTTIN, "job control relies on it"},
    {"TTOU", SIGTTOU, "job control relies on it"},
    {"WINCH", SIGWINCH, "the terminal's size changes rely on it"},
    {"URG", SIGURG, "sockets rely on it"},
    {"IO", SIGIO, "asynchronous I/O relies on it"},
    {"POLL", SIGPOLL, "asynchronous I/O relies on it"},
    {"XCPU", SIGXCPU, "resource limits rely on it"},
    {"XFSZ", SIGXFSZ, "resource limits rely on it"},
    {"PWR", SIGPWR, "power failures rely on it"},
    {"KILL", SIGKILL, "it cannot be caught"},
    {"STOP", SIGSTOP, "it cannot be caught"},
    {"SEGV", SIGSEGV, "it reports a fault"},
    {"BUS", SIGBUS, "it reports a fault"},
    {"ILL", SIGILL, "it reports a fault"},
    {"FPE", SIGFPE, "it reports a fault"},
    {"TRAP", SIGTRAP, "debuggers rely on it"},
    {"SYS", SIGSYS, "it reports a fault"},
    {"ABRT", SIGABRT, "abort() must still end the program"},
#ifdef SIGSTKFLT
    {"STKFLT", SIGSTKFLT, "it reports a fault"},
#endif
};

/** A decimal number of at most 3 digits; -1 if s is not one. */
static int small_number(const char *s) {
  int v = 0, n = 0;
  for (; *s; s++, n++) {
    if (*s < '0' || *s > '9' || n == 3) return -1;
    v = v * 10 + (*s - '0');
  }
  return n ? v : -1;
}

static int signal_of(const char *value, const char **why) {
  const char *s = value;
  const char *no = NULL;
  if (why == NULL) why = &no;
  *why = NULL;
  if (strncasecmp(s, "SIG", 3) == 0) s += 3;
  int n = small_number(s);
  if (n < 0) {
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
      if (strcasecmp(s, signals[i].name) == 0) n = signals[i].signo;
    if (strncasecmp(s, "RTMIN", 5) == 0 && (s[5] == 0 || s[5] == '+'))
      n = s[5] ? (small_number(s + 6) < 0 ? -1 : SIGRTMIN + small_number(s + 6)) : SIGRTMIN;
    if (strncasecmp(s, "RTMAX", 5) == 0 && (s[5] == 0 || s[5] == '-'))
      n = s[5] ? (small_number(s + 6) < 0 ? -1 : SIGRTMAX - small_number(s + 6)) : SIGRTMAX;
  }
  if (n >= SIGRTMIN && n <= SIGRTMAX) return n;
  if (n == 0) *why = "0 is no signal";
  for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
    if (signals[i].signo == n) {
      *why = signals[i].why;
      return *why == NULL ? n : 0;
    }
  return 0;
}

/* ---- messages ---------------------------------------------------------------------- */

/* The longest line of a warning, before it is cut. */
#define LINE_CAP 640

/** "sizeclass: NAME="value": PROBLEM; INSTEAD", the value cut at 64 bytes
 * ("..." then), control characters as '?' (a value from the environment
 * stays on its line). */
static void warn_line(const char *name, size_t name_len, const char *v, const char *problem,
                      const char *instead) {
  char line[LINE_CAP];
  int name_prec = name_len < LINE_CAP ? (int)name_len : LINE_CAP;
  sc__format(line, sizeof(line), "%.*s=\"%.64s%s\": %s; %s", name_prec, name, v,
             strlen(v) > 64 ? "..." : "", problem, instead);
  sc__text_printable(line);
  sc__diag_printf("sizeclass: %s", line);
}

size_t sc__setting_expect(const sc_setting_t *s, char *out, size_t cap) {
  if (cap == 0) return 0;
  size_t n = 0;
  out[0] = 0;
  if (s->expect != NULL) {
    n = sc__format(out, cap, "%s", s->expect);
  } else if (s->kind == SC_KIND_SWITCH) {
    n = sc__format(out, cap, "on/off (1, 0, yes, no, true, false)");
  } else if (s->kind == SC_KIND_ENUM) {
    size_t k = 0;
    while (s->words[k].word != NULL) k++;
    for (size_t i = 0; i < k; i++)
      n += sc__format(out + n, cap - n, "%s%s",
                      i == 0       ? ""
                      : i + 1 == k ? " or "
                                   : ", ",
                      s->words[i].word);
  } else {
    n = sc__format(out, cap, "%sa number from %" PRIu64 " to %" PRIu64,
                   (s->flags & SC_SETF_SWITCH_WORDS) != 0 ? "on, off or " : "", s->min, s->max);
  }
  return n;
}

/** The warning for a bad value of setting s; a signal the report may not
 * take says why first ("SIGINT is refused: Ctrl-C must ..., expected ..."). */
static void warn_bad(const sc_setting_t *s, const char *v) {
  char refused[LINE_CAP] = "", expect[320], problem[LINE_CAP];
  const char *why = NULL;
  if (s->kind == SC_KIND_SIGNAL) (void)signal_of(v, &why);
  if (why != NULL) {
    const char *name = strncasecmp(v, "SIG", 3) == 0 ? v + 3 : v;
    int n = small_number(name);
    for (size_t i = 0; n > 0 && i < sizeof(signals) / sizeof(signals[0]); i++)
      if (signals[i].signo == n) name = signals[i].name;
    char sig[20] = "";
    if (n != 0) {
      size_t k = sc__format(sig, sizeof(sig), "SIG");
      for (size_t i = 0; i < 16 && name[i] != 0; i++) {
        char ch = name[i];
        if (ch >= 'a' && ch <= 'z') ch = (char)(ch - 'a' + 'A');
        sig[k++] = ch;
      }
      sig[k] = 0;
    }
    sc__format(refused, sizeof(refused), "%s%s (%s): ", sig, n != 0 ? " is refused" : "refused",
               why);
  }
  sc__setting_expect(s, expect, sizeof(expect));
  sc__format(problem, sizeof(problem), "%sexpected %s", refused, expect);
  warn_line(s->name, strlen(s->name), v, problem, s->instead);
}

void sc__setting_warn(sc_setting_id_t id, const char *problem, const char *instead) {
  warn_line(sc__settings[id].name, strlen(sc__settings[id].name), text[id], problem, instead);
}

/* ---- names -------------------------------------------------------------------------- */

sc_setting_id_t sc__setting_find(const char *name, size_t len) {
  for (unsigned i = 0; i < SC_SETTINGS; i++)
    if (strlen(sc__settings[i].name) == len && memcmp(sc__settings[i].name, name, len) == 0)
      return (sc_setting_id_t)i;
  return SC_SETTINGS;
}

/** Edit distance between a[0..n) and b (both short: names). */
static size_t distance(const char *a, size_t n, const char *b) {
  size_t m = strlen(b);
  size_t row[65];
  if (n > 64) n = 64;
  if (m > 64) m = 64;
  for (size_t j = 0; j <= m; j++) row[j] = j;
  for (size_t i = 1; i <= n; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= m; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[m];
}

void sc__setting_warn_unknown(const char *name, size_t len, const char *v) {
  size_t best = (size_t)-1;
  const char *closest = sc__settings[0].name;
  for (unsigned i = 0; i < SC_SETTINGS; i++) {
    size_t d = distance(name, len, sc__settings[i].name);
    if (d < best) {
      best = d;
      closest = sc__settings[i].name;
    }
  }
  char problem[LINE_CAP];
  sc__format(problem, sizeof(problem), "unknown setting (did you mean %s?)", closest);
  warn_line(name, len, v, problem, "ignored");
}

static bool ignored_name(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof(not_settings) / sizeof(not_settings[0]); i++)
    if (strlen(not_settings[i]) == len && memcmp(not_settings[i], name, len) == 0) return true;
  return false;
}

/* ---- reading ---------------------------------------------------------------------- */

sc_setting_state_t sc__setting_store(sc_setting_id_t id, const char *v) {
  const sc_setting_t *s = &sc__settings[id];
  uint64_t parsed = s->def;
  size_t n = strlen(v);
  sc_setting_state_t st = n < TEXT_CAP ? setting_parse(id, v, &parsed) : SC_SETTING_BAD;
  if (n >= TEXT_CAP) n = TEXT_CAP - 1;
  memcpy(text[id], v, n);
  text[id][n] = 0;
  if (st == SC_SETTING_BAD) {
    warn_bad(s, v);
    parsed = s->fallback;
  } else if (st == SC_SETTING_UNSET) {
    parsed = s->def;
  }
  state[id] = (uint8_t)st;
  value[id] = parsed;
  return st;
}

static bool separator(char c) { return c == ' ' || c == ',' || c == ';' || c == '\t' || c == '\n'; }

/** The words of the options string: fn(word, length) for each. */
static void options_words(const char *opts, void (*fn)(const char *, size_t, void *), void *ctx) {
  for (const char *s = opts; *s != 0;) {
    while (separator(*s)) s++;
    const char *word = s;
    while (*s != 0 && !separator(*s)) s++;
    if (s > word) fn(word, (size_t)(s - word), ctx);
  }
}

/* The value of one setting in the options string (the last one given). */
typedef struct {
  const char *name;
  const char *value;
  size_t len;
} find_t;

static void find_word(const char *word, size_t len, void *ctx) {
  find_t *f = ctx;
  size_t k = strlen(f->name);
  if (len > k && memcmp(word, f->name, k) == 0 && word[k] == '=') {
    f->value = word + k + 1;
    f->len = len - k - 1;
  }
}

/** Unknown names and words without '=' in the options string. */
static void check_word(const char *word, size_t len, void *ctx) {
  (void)ctx;
  const char *eq = memchr(word, '=', len);
  char v[TEXT_CAP];
  if (eq == NULL) {
    size_t n = len < sizeof(v) - 1 ? len : sizeof(v) - 1;
    memcpy(v, word, n);
    v[n] = 0;
    warn_line("sizeclass_options", 17, v, "expected SETTING=value", "the word is ignored");
    return;
  }
  size_t name_len = (size_t)(eq - word);
  if (name_len == 0) { /* "=1": no name at all */
    size_t n = len < sizeof(v) - 1 ? len : sizeof(v) - 1;
    memcpy(v, word, n);
    v[n] = 0;
    warn_line("sizeclass_options", 17, v, "expected SETTING=value (no setting named)",
              "the word is ignored");
    return;
  }
  if (sc__setting_find(word, name_len) != SC_SETTINGS) return;
  size_t n = len - name_len - 1 < sizeof(v) - 1 ? len - name_len - 1 : sizeof(v) - 1;
  memcpy(v, eq + 1, n);
  v[n] = 0;
  sc__setting_warn_unknown(word, name_len, v);
}

/** Read setting id: the environment, else the options string. */
static sc_startup void read_one(sc_setting_id_t id, const char *opts) {
  const sc_setting_t *s = &sc__settings[id];
  /* secure_getenv: a set-user-ID program (libsizeclass in ld.so.preload)
   * must not write a report wherever the caller names, nor on any signal. */
  const char *v = (s->flags & SC_SETF_SECURE) != 0 ? secure_getenv(s->name) : getenv(s->name);
  char buf[TEXT_CAP];
  if (v == NULL && opts != NULL) {
    find_t f = {.name = s->name, .value = NULL, .len = 0};
    options_words(opts, find_word, &f);
    if (f.value != NULL) {
      size_t n = f.len < sizeof(buf) - 1 ? f.len : sizeof(buf) - 1;
      memcpy(buf, f.value, n);
      buf[n] = 0;
      v = buf;
    }
  }
  if (v != NULL) sc__setting_store(id, v);
}

/** Variables of the environment that look like settings but are none. */
static void check_environment(void) {
  extern char **environ;
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    if (strncmp(*e, "SIZECLASS_", 10) != 0) continue;
    const char *eq = strchr(*e, '=');
    size_t len = eq != NULL ? (size_t)(eq - *e) : strlen(*e);
    if (sc__setting_find(*e, len) != SC_SETTINGS || ignored_name(*e, len)) continue;
    sc__setting_warn_unknown(*e, len, eq != NULL ? eq + 1 : "");
  }
}

bool sc__settings_report_here(void) {
  sc__settings_load();
  return state[SC_SET_STATS_PID] != SC_SETTING_GIVEN ||
         value[SC_SET_STATS_PID] == (uint64_t)getpid();
}

sc_startup void sc__settings_load(void) {
  if (atomic_load_explicit(&loaded, memory_order_acquire) == 2) return;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&loaded, &expected, 1)) {
    while (atomic_load_explicit(&loaded, memory_order_acquire) != 2) {
      /* another thread reads them: microseconds */
    }
    return;
  }
  sc__stream_record(); /* before any warning: what stderr is at startup */
  const char *opts = &sizeclass_options != NULL ? sizeclass_options : NULL;
  for (unsigned i = 0; i < SC_SETTINGS; i++) value[i] = sc__settings[i].def;
  /* The pid first: outside it, the report settings are not even read. */
  read_one(SC_SET_STATS_PID, opts);
  bool here =
      state[SC_SET_STATS_PID] != SC_SETTING_GIVEN || value[SC_SET_STATS_PID] == (uint64_t)getpid();
  for (unsigned i = 0; i < SC_SETTINGS; i++)
    if (i != SC_SET_STATS_PID && (here || (sc__settings[i].flags & SC_SETF_REPORT) == 0))
      read_one((sc_setting_id_t)i, opts);
  check_environment();
  if (opts != NULL) options_words(opts, check_word, NULL);
  atomic_store_explicit(&loaded, 2, memory_order_release);
}

uint64_t sc__setting(sc_setting_id_t id) {
  sc__settings_load();
  return value[id];
}

sc_setting_state_t sc__setting_state(sc_setting_id_t id) {
  sc__settings_load();
  return (sc_setting_state_t)state[id];
}

const char *sc__setting_text(sc_setting_id_t id) {
  sc__settings_load();
  return text[id];
}

sc_startup bool sc__settings_report_asked(void) {
  sc__settings_load();
  if (!sc__settings_report_here()) return false;
  /* A bad signal (refused with its warning) asks for nothing. */
  return value[SC_SET_STATS] != SC_STATS_OFF || state[SC_SET_STATS_SIGNAL] == SC_SETTING_GIVEN;
}

void sc__setting_save(sc_setting_id_t id, sc_setting_saved_t *out) {
  out->state = state[id];
  out->value = value[id];
  memcpy(out->text, text[id], TEXT_CAP);
}

void sc__setting_restore(sc_setting_id_t id, const sc_setting_saved_t *in) {
  state[id] = in->state;
  value[id] = in->value;
  memcpy(text[id], in->text, TEXT_CAP);
}
