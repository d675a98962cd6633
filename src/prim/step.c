/* step.c - the request loop of the primitives' steps (step.h). */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "client/clock.h"
#include "exec/call.h"
#include "exec/exec.h"
#include "prim/step.h"

#define RDL_STEP_VOID_MAX 3 /* void requests in a row (clock trouble) before EIO */

static int reply_parse(const redisReply *r, rdl_step_reply_t *o)
{
    size_t i;
    long long *f[3] = { &o->status, &o->now, &o->x };
    memset(o, 0, sizeof *o);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 1)
        return EIO;
    for (i = 0; i < r->elements && i < 3; i++) {
        const redisReply *e = r->element[i];
        if (e->type == REDIS_REPLY_INTEGER) {
            *f[i] = e->integer;
        } else if (e->type == REDIS_REPLY_STRING && e->len < sizeof o->str) {
            /* A hold's call number, or a type letter (sem.lua): kept as
             * text too. */
            if (i == 2) {
                memcpy(o->str, e->str, e->len);
                o->str[e->len] = '\0';
            }
            *f[i] = strtoll(e->str, NULL, 10);
        } else {
            return EIO;
        }
    }
    return 0;
}

int rdl_step_run(rdlock_client_t *c, const rdl_step_t *s, rdl_step_reply_t *out)
{
    int rc, voids = 0;
    for (;;) {
        rdl_call_t call = { 0 };
        redisReply *reply;
        call.stamp = s->stamp;
        /* On a Redlock quorum the step runs on a leader and its state is
         * copied to a majority (prim_quorum.h). */
        rc = c->exec->step(c, s->script, s->nkeys, s->argc, s->argv, s->lens, s->stamp_arg, s->hkey, s->deadline,
                           &reply, &call);
        if (call.unsure_until > *s->unsure_until)
            *s->unsure_until = call.unsure_until;
        if (call.sent_at >= 0)
            *s->sent_at = call.sent_at;
        if (rc != 0)
            return rc;
        rc = reply_parse(reply, out);
        freeReplyObject(reply);
        if (rc != 0) {
            rdl_log(RDLOCK_LOG_ERROR, "%s %s: unexpected reply from the server", s->what, s->name);
            return EIO;
        }
        if (out->now > 0)
            rdl_client_clock(c, call.route, out->now, call.answer_at);
        if (out->status != -2 || s->stamp == NULL)
            return 0;
        if (++voids >= RDL_STEP_VOID_MAX) {
            rdl_log(RDLOCK_LOG_ERROR, "%s %s: the server's clock keeps moving under the request deadlines",
                    s->what, s->name);
            return EIO;
        }
    }
}
