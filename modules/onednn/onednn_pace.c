/* onednn_pace.c — team or solo, from the run times (onednn_pace.h). */
#include "onednn_pace.h"

static int odnn_pace_team(struct odnn_pace *p)
{
    p->strikes = 0;
    p->suspect_us = 0;
    p->since_probe = 0;
    p->probing = 0;
    p->solo_us = 0;
    return p->solo = 0;
}

int odnn_pace_after(struct odnn_pace *p, double us, long csw, int was_solo, int solo_ok)
{
    if (p->need == 0)
        p->need = ODNN_PACE_STRIKES;
    if (++p->runs <= ODNN_PACE_SETTLE || !(us >= 0))
        return p->solo = was_solo && solo_ok;
    if (!solo_ok)
        return odnn_pace_team(p);
    if (was_solo) {
        p->solo_us += us;
        p->since_probe++;
        if (p->since_probe == ODNN_PACE_TRIAL && p->team_ref_us > 0 &&
            p->solo_us / ODNN_PACE_TRIAL * ODNN_PACE_GAIN >= p->team_ref_us) {
            /* solo did not pay: the team back, and slower to leave it */
            p->need = p->need * 2 < ODNN_PACE_MAX_STRIKES ? p->need * 2 : ODNN_PACE_MAX_STRIKES;
            return odnn_pace_team(p);
        }
        if (p->since_probe < ODNN_PACE_PROBE)
            return p->solo = 1;
        p->probing = 1; /* the next run asks the team again */
        return p->solo = 0;
    }
    if (p->best_team_us == 0 || us < p->best_team_us)
        p->best_team_us = us;
    if (p->probing) {
        /* the team is back when it beats the solo runs since the last probe */
        if (us <= p->solo_us / (p->since_probe > 0 ? p->since_probe : 1))
            return odnn_pace_team(p);
        p->probing = 0;
        p->since_probe = 0;
        p->solo_us = 0;
        p->team_ref_us = 0; /* (no trial after a probe) */
        return p->solo = 1;
    }
    int suspect = csw > 0 || (us > ODNN_PACE_SLOWER * p->best_team_us &&
                              us - p->best_team_us > ODNN_PACE_FLOOR_US);
    if (!suspect)
        return odnn_pace_team(p);
    p->suspect_us += us;
    if (++p->strikes < p->need)
        return p->solo = 0;
    p->team_ref_us = p->suspect_us / p->strikes;
    p->strikes = 0;
    p->suspect_us = 0;
    p->since_probe = 0;
    p->solo_us = 0;
    p->switches++;
    return p->solo = 1;
}

int odnn_pace_idle(double cpu_us, double wall_us, int threads)
{
    return threads > 1 && wall_us > 0 &&
           cpu_us < wall_us * (1.0 + ODNN_PACE_IDLE_SHARE * (double)(threads - 1));
}
