/* SPDX-License-Identifier: MIT */
/* settings.h — every SIZECLASS_* setting, declared once (settings.c), and
 * the one reader that serves the environment, the program's
 * `sizeclass_options` string and sc_option_set() alike (docs/architecture.md, guarantee 11).
 *
 * The settings are read once, when the process starts (the first
 * allocation or the library's first constructor, whichever comes first):
 * each value is parsed by its kind, a bad one gets one warning
 *     sizeclass: NAME="value": expected WHAT; WHAT HAPPENS INSTEAD
 * and the setting's fallback, and the modules ask for the parsed values.
 * Nothing here allocates: it runs inside the first malloc. */
#ifndef SC_SETTINGS_H
#define SC_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The settings, in the order of the table (and of the docs): one row each
 * in settings.def. */
typedef enum {
#define SC_SETTING(id, ...) SC_SET_##id,
#include "util/settings.def"
#undef SC_SETTING
  SC_SETTINGS /* how many */
} sc_setting_id_t;

/* What a value may be. */
typedef enum {
  SC_KIND_SWITCH, /* on/off: 1, on, yes, true / 0, off, no, false (any case) */
  SC_KIND_NUMBER, /* a plain decimal in [min, max], or one of the words */
  SC_KIND_ENUM,   /* one of the words */
  SC_KIND_PATH,   /* one of the words, or a file path */
  SC_KIND_SIGNAL, /* a signal name or number */
} sc_setting_kind_t;

/* When sc_option_set may still change a setting. */
typedef enum {
  SC_WHEN_ANY,    /* at any time: it takes effect at once */
  SC_WHEN_START,  /* before the first allocation of 1024 B or less, and only
                     to switch its feature on (never off) */
  SC_WHEN_FRAMES, /* before the first sc_frame_mark() */
  SC_WHEN_LOAD,   /* only when the library loads */
} sc_setting_when_t;

/* Flags of a setting. */
enum {
  SC_SETF_SWITCH_WORDS = 1u << 0, /* also on/off words: off -> 0, on -> `on` */
  SC_SETF_BYTES = 1u << 1,        /* numbers take a k, m or g suffix (x 1024^n) */
  SC_SETF_STRICT_PATH = 1u << 2,  /* a path must hold a '/' or end in .txt or .json */
  SC_SETF_REPORT = 1u << 3,       /* a report setting: ignored outside SIZECLASS_STATS_PID */
  SC_SETF_SECURE = 1u << 4,       /* read with secure_getenv (a path or a signal) */
};

/* A word a setting accepts (any case) and the value it stands for. */
typedef struct sc_setting_word_s {
  const char *word;
  uint64_t value;
} sc_setting_word_t;

/* One setting's declaration. */
typedef struct sc_setting_s {
  const char *name; /* "SIZECLASS_CHECK" */
  sc_setting_kind_t kind;
  sc_setting_when_t when;
  unsigned flags;                 /* SC_SETF_* */
  const sc_setting_word_t *words; /* accepted words, {NULL} last; NULL: none */
  uint64_t min, max;              /* numbers */
  uint64_t on;                    /* the value of an on word (SC_SETF_SWITCH_WORDS) */
  uint64_t def;                   /* the value when unset */
  uint64_t fallback;              /* the value after a bad one */
  const char *def_doc;            /* the default as the docs say it */
  const char *expect;             /* what a value must be; NULL: said from kind and range */
  const char *instead;            /* what a bad value gets: "checking mode stays off" */
  const char *doc;                /* one line */
} sc_setting_t;

/** The table (settings.c), indexed by sc_setting_id_t. */
extern const sc_setting_t sc__settings[SC_SETTINGS];

/* The state of a setting after reading. */
typedef enum {
  SC_SETTING_UNSET = 0, /* not given (or empty): its default */
  SC_SETTING_GIVEN = 1, /* given, and parsed */
  SC_SETTING_BAD = 2,   /* given, refused with a warning: its fallback */
} sc_setting_state_t;

/** The value of a PATH setting given a path (its text holds it). */
#define SC_SETTING_PATH 3
/* Values of the enumerated settings (SIZECLASS_STATS is a path setting too). */
enum {
  SC_STATS_OFF = 0,
  SC_STATS_STDERR = 1,
  SC_STATS_STDOUT = 2,
  SC_STATS_FILE = SC_SETTING_PATH
};
enum { SC_STATS_FORMAT_TEXT = 0, SC_STATS_FORMAT_JSON = 1 };
enum { SC_SITES_FORMAT_REPORT = 0, SC_SITES_FORMAT_FOLDED = 1 };
enum { SC_FRAME_CHECK_OFF = 0, SC_FRAME_CHECK_WARN = 1, SC_FRAME_CHECK_ABORT = 2 };
enum { SC_SYSTEM_TRIM_PACED = 0, SC_SYSTEM_TRIM_GLIBC = 1 };
enum { SC_BUDGET_ACTION_WARN = 0, SC_BUDGET_ACTION_ABORT = 1 };
/* SIZECLASS_HARDEN: optional hardening beyond the default's. */
enum { SC_HARDEN_OFF = 0, SC_HARDEN_RANDOM = 1 };
/** Sampling rate of SIZECLASS_SITES=on: about one allocation per this
 * many requested bytes (docs/performance.md: its cost and accuracy). */
#define SC_SITES_DEFAULT_RATE ((uint64_t)256 << 10)
/** Largest SIZECLASS_SITES rate accepted (the sites' weights must fit
 * their address map's 40 bits: features/sites.h). */
#define SC_SITES_MAX_RATE ((uint64_t)1 << 27)

/** Read every setting, once (later calls return at once). */
void sc__settings_load(void);

/** The value of a setting: parsed, its default, or its fallback. */
uint64_t sc__setting(sc_setting_id_t id);
sc_setting_state_t sc__setting_state(sc_setting_id_t id);
/** The value as given (NUL-terminated; "" when unset): a PATH setting's path. */
const char *sc__setting_text(sc_setting_id_t id);

/** One "sizeclass: NAME="value": PROBLEM; INSTEAD" line about a setting's
 * current value (for the problems found when it is used, e.g. a path that
 * cannot be written). */
void sc__setting_warn(sc_setting_id_t id, const char *problem, const char *instead);

/** True when this process reports: SIZECLASS_STATS_PID is unset, bad, or
 * this process's pid. */
bool sc__settings_report_here(void);
/** True when the settings ask for a statistics report (exit or signal). */
bool sc__settings_report_asked(void);

/** The setting called name; SC_SETTINGS when none is. */
sc_setting_id_t sc__setting_find(const char *name, size_t len);

/* ---- for sc_option_set (options.c) ---- */

/** Longest value kept, with its NUL. */
#define SC_SETTING_TEXT_CAP 4096

/** Parse v for setting id and keep it: a bad value gets its warning and
 * the fallback, an empty one means unset. Returns the state. */
sc_setting_state_t sc__setting_store(sc_setting_id_t id, const char *v);

/** A setting's state, value and text, to put back when a change cannot
 * be applied. */
typedef struct sc_setting_saved_s {
  uint8_t state;
  uint64_t value;
  char text[SC_SETTING_TEXT_CAP];
} sc_setting_saved_t;
void sc__setting_save(sc_setting_id_t id, sc_setting_saved_t *out);
void sc__setting_restore(sc_setting_id_t id, const sc_setting_saved_t *in);

/** The warning for a name that is no setting: it names the closest one. */
void sc__setting_warn_unknown(const char *name, size_t len, const char *v);

/** Write what a value of setting `s` must be (its warning's "expected ...")
 * into out; its length. */
size_t sc__setting_expect(const sc_setting_t *s, char *out, size_t cap);

#endif /* SC_SETTINGS_H */
