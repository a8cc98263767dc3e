/* completion.h — what a pl_completion is inside the core. A module only
 * holds a pointer and signals it through host->complete; whoever made the
 * completion (the engine) embeds it and learns of the signal through
 * on_complete, which takes ownership of the status. */
#ifndef PL_CORE_COMPLETION_H
#define PL_CORE_COMPLETION_H

#include "plinth/host.h"

struct pl_completion {
    void (*on_complete)(pl_completion *self, pl_status *status);
};

#endif
