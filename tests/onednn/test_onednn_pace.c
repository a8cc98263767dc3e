/* The onednn module's pacing (modules/onednn/onednn_pace.c, compiled in):
 * team or one thread from the run times and preemptions, on sequences of
 * runs as a quiet machine, a busy one and a changing one give them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_pace.h"

static int failures;

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

/* Feeds N runs: a team run takes TEAM us (preempted CSW times), a solo run
 * SOLO us; returns how many of them ran solo. */
static int feed(struct odnn_pace *p, int n, double team, long csw, double solo)
{
    int solos = 0;
    for (int i = 0; i < n; i++) {
        int was = p->solo;
        solos += was;
        odnn_pace_after(p, was ? solo : team, was ? 0 : csw, was, 1);
    }
    return solos;
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only == NULL || strcmp(only, "quiet") == 0) {
        /* quiet: runs vary a little and are never preempted: never solo */
        struct odnn_pace p = {0};
        int solos = 0;
        for (int i = 0; i < 200; i++) {
            int was = p.solo;
            solos += was;
            odnn_pace_after(&p, 2000 + (i * 37 % 300), 0, was, 1);
        }
        CHECK(solos == 0 && p.switches == 0, "quiet: %d solo runs, %ld switches", solos,
              p.switches);
        /* a lone preemption or a slow run is not contention */
        odnn_pace_after(&p, 2100, 1, 0, 1);
        odnn_pace_after(&p, 9000, 0, 0, 1);
        odnn_pace_after(&p, 2100, 0, 0, 1);
        odnn_pace_after(&p, 2100, 1, 0, 1);
        CHECK(!p.solo && p.switches == 0, "quiet with hiccups: went solo");
    }
    if (only == NULL || strcmp(only, "busy") == 0) {
        /* busy from the start: team runs preempted, 5x slower than solo */
        struct odnn_pace p = {0};
        int solos = feed(&p, 100, 17000, 3, 3300);
        CHECK(p.switches == 1 && solos >= 85, "busy: %d of 100 solo, %ld switches", solos,
              p.switches);
        /* without one-thread primitives it stays on the team */
        struct odnn_pace q = {0};
        int n = 0;
        for (int i = 0; i < 50; i++)
            n += odnn_pace_after(&q, 17000, 3, 0, 0);
        CHECK(n == 0 && !q.solo, "busy, no solo primitives: %d solo", n);
    }
    if (only == NULL || strcmp(only, "idle") == 0) {
        /* a team whose members waited: about one core busy over the run */
        CHECK(odnn_pace_idle(19000, 20000, 2) && odnn_pace_idle(10500, 10000, 2),
              "idle: one core busy over a 2-thread team's run is not idle");
        CHECK(!odnn_pace_idle(17000, 10000, 2) && !odnn_pace_idle(12000, 10000, 2),
              "idle: 1.2 or 1.7 cores busy on 2 threads is idle");
        CHECK(odnn_pace_idle(12000, 10000, 4) && !odnn_pace_idle(14000, 10000, 4),
              "idle: the share grows with the team (1.2 of 4 idle, 1.4 not)");
        CHECK(!odnn_pace_idle(5000, 10000, 1) && !odnn_pace_idle(0, 0, 2),
              "idle: one thread, or no time, is never idle");
        /* idle team runs counted as preempted (onednn_sg_run): solo when
         * solo pays (efficientformerv2_s0: 20 ms a team run, 10.7 solo) */
        struct odnn_pace p = {0};
        int solos = 0;
        for (int i = 0; i < 60; i++) {
            int was = p.solo;
            solos += was;
            double us = was ? 10700 : 20000;
            odnn_pace_after(&p, us, !was && odnn_pace_idle(0.93 * us, us, 2), was, 1);
        }
        CHECK(p.switches == 1 && solos >= 45, "idle team: %d of 60 solo, %ld switches", solos,
              p.switches);
    }
    if (only == NULL || strcmp(only, "ends") == 0) {
        /* contention, then quiet: the team is back at the next probe */
        struct odnn_pace p = {0};
        feed(&p, 3, 2000, 0, 3300); /* the settle runs and a quiet baseline */
        feed(&p, 40, 17000, 3, 3300);
        CHECK(p.solo || p.probing, "busy: not solo");
        feed(&p, ODNN_PACE_PROBE + 1, 2000, 0, 3300);
        int solos = feed(&p, 50, 2000, 0, 3300);
        CHECK(solos == 0 && !p.solo, "quiet again: %d of 50 solo", solos);
    }
    if (only == NULL || strcmp(only, "no_gain") == 0) {
        /* preempted often but solo is slower (a big subgraph a second
         * thread still speeds up): the team is back after the trial, and
         * each next switch needs twice the suspect runs */
        struct odnn_pace p = {0};
        int solos = feed(&p, 300, 10000, 1, 18000);
        CHECK(solos <= 8 * ODNN_PACE_TRIAL, "no gain: %d of 300 solo (%ld switches)", solos,
              p.switches);
        CHECK(p.need == ODNN_PACE_MAX_STRIKES, "no gain: need %d", p.need);
    }
    if (only == NULL || strcmp(only, "small_gain") == 0) {
        /* three team runs slowed by noise (145 us against the best 44),
         * solo 3x slower than a quiet team but a little faster than the
         * slowed runs (thai2rom_dec's LSTM): the team is back after the
         * trial, not at the next probe */
        struct odnn_pace p = {0};
        feed(&p, 10, 44, 0, 121);
        feed(&p, ODNN_PACE_STRIKES, 145, 1, 121);
        CHECK(p.solo && p.switches == 1, "small gain: did not go solo");
        int solos = feed(&p, ODNN_PACE_TRIAL + 20, 44, 0, 121);
        CHECK(solos == ODNN_PACE_TRIAL && !p.solo, "small gain: %d of %d solo", solos,
              ODNN_PACE_TRIAL + 20);
    }
    if (failures == 0)
        printf("ok\n");
    return failures ? 1 : 0;
}
