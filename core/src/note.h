/* note.h — reads a module file's identity note without running any of it. */
#ifndef PL_CORE_NOTE_H
#define PL_CORE_NOTE_H

#include "plinth/module.h"
#include "plinth/plinth.h"

/* Checks that the open file FD (PATH, for messages) is an ELF shared object
 * for this machine and reads its Plinth identity note into *out_desc. The
 * reasons are the user's: "empty file", "not an ELF file", "built for
 * another architecture …", "no Plinth identity note …", "malformed identity
 * note: …". *OUT_CPU receives the CPU features its requirement notes name
 * (0 when it has none). */
pl_status *pl_note_read(int fd, pl_identity_desc *out_desc, uint64_t *out_cpu);

/* The PL_CPU_* features (sdk/plinth/module.h) this machine has and its
 * operating system lets programs use. */
uint64_t pl_cpu_features(void);
/* Writes the names of the features in BITS, comma-separated ("avx512f,
 * avx512bw"); bits this core does not know appear as "bit N". */
void pl_cpu_feature_names(uint64_t bits, char *buf, size_t size);

#endif
