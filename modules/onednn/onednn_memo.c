/* onednn_memo.c — answers of oneDNN's implementation probes, kept for the
 * process (onednn.h, onednn_memo_get/put).
 *
 * The verdicts ask oneDNN which implementation it would give a node
 * (odnn_probe_binary_ref, odnn_probe_conv_impl) by creating a primitive
 * descriptor and reading its name, and each node is asked three times (its
 * verdict, the check of what fuses into it, its compile) and again for
 * every session and every staged tail: a descriptor costs tens of
 * microseconds, and the answer depends only on the descriptor's shape and
 * the calling thread's OpenMP team (part of every key). A fixed table,
 * one entry a slot (a newer key takes the slot of an older one). */
#include "onednn.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <plinth/graph_hash.h>

#define MEMO_SLOTS 512

typedef struct memo_entry {
    uint64_t hash; /* 0: empty */
    int n;
    int64_t key[ONEDNN_MEMO_MAX_KEY];
    int result;
    char impl[64];
} memo_entry;

static memo_entry memo_table[MEMO_SLOTS];
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long memo_asked, memo_remembered; /* under memo_mu */

static uint64_t memo_hash(const int64_t *key, int n)
{
    uint64_t h = PL_HASH_SEED;
    pl_hash_bytes(&h, key, (size_t)n * sizeof *key);
    return h ? h : 1; /* 0 marks an empty slot */
}

int onednn_memo_get(const int64_t *key, int n, int *result, char *impl, size_t cap)
{
    if (n <= 0 || n > ONEDNN_MEMO_MAX_KEY)
        return 0;
    uint64_t h = memo_hash(key, n);
    memo_entry *e = &memo_table[h % MEMO_SLOTS];
    int found = 0;
    pthread_mutex_lock(&memo_mu);
    memo_asked++;
    if (e->hash == h && e->n == n && memcmp(e->key, key, (size_t)n * sizeof *key) == 0) {
        *result = e->result;
        if (impl != NULL && cap > 0) {
            strncpy(impl, e->impl, cap - 1);
            impl[cap - 1] = '\0';
        }
        found = 1;
        memo_remembered++;
    }
    pthread_mutex_unlock(&memo_mu);
    return found;
}

void onednn_memo_counts(unsigned long long *asked, unsigned long long *remembered)
{
    pthread_mutex_lock(&memo_mu);
    *asked = memo_asked;
    *remembered = memo_remembered;
    pthread_mutex_unlock(&memo_mu);
}

void onednn_memo_put(const int64_t *key, int n, int result, const char *impl)
{
    if (n <= 0 || n > ONEDNN_MEMO_MAX_KEY)
        return;
    uint64_t h = memo_hash(key, n);
    memo_entry *e = &memo_table[h % MEMO_SLOTS];
    pthread_mutex_lock(&memo_mu);
    e->hash = h;
    e->n = n;
    memcpy(e->key, key, (size_t)n * sizeof *key);
    e->result = result;
    e->impl[0] = '\0';
    if (impl != NULL) {
        strncpy(e->impl, impl, sizeof e->impl - 1);
        e->impl[sizeof e->impl - 1] = '\0';
    }
    pthread_mutex_unlock(&memo_mu);
}
