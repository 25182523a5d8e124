# SPDX-License-Identifier: MIT
# settings.mk — the settings table (src/util/settings.c, issue 19): the helper
# programs of tests/test_settings.c and the table of docs/using.md.
#   settings_prog         preloaded; exports sizeclass_options (-rdynamic) so the
#                         preloaded library finds it
#   settings_prog_linked  the same program linked with libsizeclass.a
#   settings_doc          prints the table as docs/using.md's Markdown
#   make settings-doc     writes that table into docs/using.md between its markers

$(BUILD)/tests/progs/settings_prog: tests/progs/settings_prog.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -rdynamic -o $@ $< -lpthread -ldl

$(BUILD)/tests/progs/settings_prog_linked: tests/progs/settings_prog.c $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -DSETTINGS_PROG_LINKED -o $@ $< $(AR_LIB) -lpthread -ldl

$(BUILD)/tests/progs/settings_doc: tests/progs/settings_doc.c src/util/settings.h src/util/settings.def \
                                   $(AR_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) -o $@ $< $(AR_LIB) -lpthread -ldl

test: $(BUILD)/tests/progs/settings_prog_linked

SETTINGS_BEGIN := <!-- settings: generated from src/util/settings.c by `make settings-doc` -->
SETTINGS_END   := <!-- end of settings -->

.PHONY: settings-doc
settings-doc: $(BUILD)/tests/progs/settings_doc
	@$< > $(BUILD)/settings.md
	@awk -v begin='$(SETTINGS_BEGIN)' -v end='$(SETTINGS_END)' -v table='$(BUILD)/settings.md' \
	  '$$0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next } \
	   $$0 == end { skip = 0 } !skip { print }' docs/using.md > $(BUILD)/using.md
	@cmp -s $(BUILD)/using.md docs/using.md || cp $(BUILD)/using.md docs/using.md
