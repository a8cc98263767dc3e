/* onednn_pace.h — whether a compiled subgraph's next run uses its OpenMP
 * team or one thread (the onednn module's own header; no oneDNN types).
 *
 * oneDNN's primitives split their work over an OpenMP team statically:
 * each parallel region waits at its end for every member. On a quiet
 * machine the members spin between regions (GOMP_SPINCOUNT, runtime.c),
 * which a run of many small primitives needs (c2_shufflenet: 2.1 ms a run
 * spinning, 9.4 ms when the members sleep between regions, each wake-up a
 * futex and a halted vCPU's IPI). Beside another busy process the spin
 * turns against the run: a member that lost its core is waited for by one
 * that spins on the other, and every region costs the whole spin (the same
 * model 17-27 ms a run beside one busy loop; ONNX Runtime, whose pool lets
 * the caller take a missing worker's share, 3.4). One thread runs it in
 * 3.1-3.4 ms there. So each compiled subgraph times its runs and paces
 * itself. A team run is suspect when it was preempted (an involuntary
 * context switch of the calling thread) or took over twice the best team
 * run; after ODNN_PACE_STRIKES suspects in a row the runs go solo (each
 * primitive made again for one thread, at the first solo run). Solo stays
 * while it pays: when its first two runs are not ODNN_PACE_GAIN times
 * faster than the suspect team runs were (means: a preempted team's runs
 * vary tenfold), the team is back at once and the next switch needs twice
 * the suspects (up to ODNN_PACE_MAX_STRIKES); otherwise every
 * ODNN_PACE_PROBE solo runs one team run asks again, and the team is back
 * when it beats the solo runs' mean since the last probe. */
#ifndef PLINTH_ONEDNN_PACE_H
#define PLINTH_ONEDNN_PACE_H

/* How many solo runs between two probes of the team. */
#define ODNN_PACE_PROBE 16
/* Suspect team runs in a row before the runs go solo, at first and at
 * most; a team run is suspect when preempted or this much slower than the
 * best team run. */
#define ODNN_PACE_STRIKES 3
#define ODNN_PACE_MAX_STRIKES 48
#define ODNN_PACE_SLOWER 2.0
/* Solo runs before they are weighed against the suspect team runs, and
 * how much faster they must be to stay. Beside a busy process solo gains
 * 2.3-8x (DenseNet-121 109 -> 47 ms, ShuffleNet 17-27 -> 3.1); a subgraph
 * whose big LSTM a second core speeds up (thai2rom_dec: 0.12 ms a run
 * solo, 0.04 on its team) gained 1.2x over three team runs a quiet VM's
 * noise had slowed, and then ran solo, 3x slower, until the next probe. */
#define ODNN_PACE_TRIAL 2
#define ODNN_PACE_GAIN 1.5
/* ... and at least this many microseconds slower (a small subgraph's
 * noise is not contention). */
#define ODNN_PACE_FLOOR_US 20.0
/* A team run (once the best is ODNN_PACE_IDLE_MIN_US or more) during which
 * the process was busy less than 1 + ODNN_PACE_IDLE_SHARE * (threads - 1)
 * cores counts as preempted (odnn_pace_idle): its members mostly waited
 * for each other. efficientformerv2_s0 on 2 threads ran 19-21 ms a run at
 * 0.93 cores busy in most processes (a 1x1 convolution 0.14 ms one run and
 * 5.3 the next), 10.7 ms on one thread, and was never preempted nor twice
 * its best team run; healthy teams keep 1.7-1.9 cores busy (pit_ti,
 * resnet10t, mobilenetv3_small_050). At 0.25 of a core the small nets whose
 * steps run mostly on one thread (mobilenetv3_small_050) tried solo runs
 * again and again, 5-8% slower. */
#define ODNN_PACE_IDLE_MIN_US 500.0
#define ODNN_PACE_IDLE_SHARE 0.1
/* Runs not timed at first (page faults, cold caches and JIT code). */
#define ODNN_PACE_SETTLE 2

enum odnn_pace_policy { ODNN_PACE_AUTO, ODNN_PACE_TEAM, ODNN_PACE_SOLO };

struct odnn_pace {
    int solo;            /* the next run is solo */
    int runs;            /* runs told of */
    int strikes;         /* suspect team runs in a row */
    int need;            /* suspects that make the runs go solo (0: ODNN_PACE_STRIKES) */
    int since_probe;     /* solo runs since the switch or the last probe */
    int probing;         /* the next (or current) team run is a probe */
    double best_team_us; /* the fastest team run (0: none yet) */
    double suspect_us;   /* the suspect runs in a row, summed */
    double team_ref_us;  /* what solo runs must beat: the suspects' mean, or the last probe */
    double solo_us;      /* the solo runs since the switch or last probe, summed */
    long switches;       /* team -> solo changes */
};

/* Tells P how long the run just made took (US, solo or with the team) and
 * how many times the calling thread was preempted during it (CSW), and
 * returns whether the next run goes solo. SOLO_OK: one-thread primitives
 * exist (or can be made); without them every run uses the team. */
int odnn_pace_after(struct odnn_pace *p, double us, long csw, int was_solo, int solo_ok);

/* Whether a team run of WALL_US during which the process used CPU_US of
 * CPU time, on THREADS threads, left its team idle (ODNN_PACE_IDLE_SHARE). */
int odnn_pace_idle(double cpu_us, double wall_us, int threads);

#endif
