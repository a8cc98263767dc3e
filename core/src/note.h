/* note.h — reads a module file's identity note without running any of it. */
#ifndef PL_CORE_NOTE_H
#define PL_CORE_NOTE_H

#include "plinth/module.h"
#include "plinth/plinth.h"

/* Checks that the open file FD (PATH, for messages) is an ELF shared object
 * for this machine and reads its Plinth identity note into *out_desc. The
 * reasons are the user's: "empty file", "not an ELF file", "built for
 * another architecture …", "no Plinth identity note …", "malformed identity
 * note: …". */
pl_status *pl_note_read(int fd, pl_identity_desc *out_desc);

#endif
