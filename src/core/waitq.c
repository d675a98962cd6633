/* waitq.c - the local wait queues; see waitq.h. */
#include "rdl_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/table.h"
#include "base/timeutil.h"
#include "base/wake.h"
#include "client/client.h"
#include "core/waitq.h"

enum { SUB_NONE, SUB_SENT, SUB_ON, SUB_UNSENT };

struct rdl_waitq {
    rdl_tnode_t node;       /* keyed by key */
    char *key;
    size_t keylen;
    int nwaiters;           /* local threads waiting on this key */
    unsigned long gen;      /* bumped by every wake-up */
    pthread_cond_t cond;    /* on the client's mu */
    int sub;                /* SUB_*: the key's subscription */
    long long idle_since;   /* when nwaiters last dropped to 0 */
    long long last_poll;    /* last look by any local waiter */
    rdl_waiter_t *waiters;  /* the local threads waiting */
    uint64_t last_grant;    /* newest hand-over token seen for this key */
    unsigned voter;         /* Redlock: the local thread voting now, 0 none */
};

struct wq_key {
    const char *key;
    size_t keylen;
};

static int wq_eq(const rdl_tnode_t *nd, const void *k)
{
    const rdl_waitq_t *q = (const rdl_waitq_t *)nd;
    const struct wq_key *wk = k;
    return q->keylen == wk->keylen && memcmp(q->key, wk->key, wk->keylen) == 0;
}

static rdl_waitq_t *wq_find(rdlock_client_t *c, const char *key, size_t keylen)
{
    struct wq_key wk = { key, keylen };
    return (rdl_waitq_t *)rdl_table_find(&c->waits, rdl_hash(key, keylen, 0), wq_eq, &wk);
}

static void wq_free(rdl_waitq_t *q)
{
    pthread_cond_destroy(&q->cond);
    free(q->key);
    free(q);
}

static void wq_wake(rdl_waitq_t *q)
{
    q->gen++;
    RDL_CHECK(pthread_cond_broadcast(&q->cond));
}

rdl_waitq_t *rdl_waitq_join(rdlock_client_t *c, const char *key, size_t keylen, long long until,
                            rdl_waiter_t *w)
{
    rdl_waitq_t *q = wq_find(c, key, keylen);

    if (q == NULL) {
        q = calloc(1, sizeof *q);
        if (q == NULL || (q->key = malloc(keylen + 1)) == NULL) {
            free(q);
            return NULL;
        }
        memcpy(q->key, key, keylen + 1);
        q->keylen = keylen;
        rdl_cond_init(&q->cond);
        q->node.hash = rdl_hash(key, keylen, 0);
        if (rdl_table_insert(&c->waits, &q->node) != 0) {
            wq_free(q);
            return NULL;
        }
    }
    q->nwaiters++;
    w->next = q->waiters;
    q->waiters = w;
    if (c->bg_start(c) != 0)
        return q; /* no thread, no wake-ups: the waiter polls */
    if (q->sub == SUB_NONE)
        rdl_wake(c->wake[1]);
    /* Wait for SUBSCRIBE to be confirmed: only then can no release go
     * unheard.  If the server is away, give up at `until` and poll. */
    while (q->sub != SUB_ON && c->sub_fails == 0 && !w->granted) {
        if (rdl_cond_wait_until(&q->cond, &c->mu, until) == ETIMEDOUT)
            break;
    }
    return q;
}

void rdl_waitq_leave(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w)
{
    rdl_waiter_t **pp;
    (void)c;
    for (pp = &q->waiters; *pp != NULL; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    if (q->voter == w->thread)
        q->voter = 0;
    if (--q->nwaiters == 0)
        q->idle_since = rdl_now_ms();
}

unsigned long rdl_waitq_look(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w)
{
    (void)c;
    w->granted = false;
    q->last_poll = rdl_now_ms();
    return q->gen;
}

void rdl_waitq_busy(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w, uint64_t fence)
{
    (void)c;
    /* Set, not raised: after a restart without persistence the counter
     * starts again low. */
    w->floor = fence;
    if (q != NULL && q->last_grant > fence)
        q->last_grant = fence;
}

void rdl_waitq_sleep(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w, unsigned long gen, long long until,
                     const rdl_waitq_share_t *share)
{
    while (q->gen == gen && !w->granted) {
        long long now;
        if (rdl_cond_wait_until(&q->cond, &c->mu, until) != ETIMEDOUT)
            continue;
        /* Threads of one process share the re-check: if another one
         * looked in the meantime, wait a further period. */
        now = rdl_now_ms();
        if (share != NULL && q->last_poll > share->since && now < share->limit &&
            now - q->last_poll < share->period) {
            until = q->last_poll + share->period;
            if (until > share->limit)
                until = share->limit;
            continue;
        }
        break;
    }
}

bool rdl_waitq_vote_begin(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w)
{
    (void)c;
    if (q->voter != 0 && q->voter != w->thread)
        return false;
    q->voter = w->thread;
    return true;
}

void rdl_waitq_vote_end(rdlock_client_t *c, rdl_waitq_t *q, rdl_waiter_t *w)
{
    (void)c;
    if (q->voter == w->thread)
        q->voter = 0;
}

void rdl_waitq_wake(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_waitq_t *q;
    if (c->waits.n == 0)
        return;
    q = wq_find(c, key, keylen);
    if (q != NULL && q->nwaiters > 0)
        wq_wake(q);
}

void rdl_waitq_grant(rdlock_client_t *c, const char *key, size_t keylen, const char *owner, size_t ownerlen,
                     uint64_t token)
{
    rdl_waitq_t *q;
    rdl_waiter_t *w;
    unsigned long thread = 0;
    size_t i;

    if (c->waits.n == 0 || ownerlen <= RDL_ID_HEX + 1 || memcmp(owner, c->id, RDL_ID_HEX) != 0 ||
        owner[RDL_ID_HEX] != ':')
        return; /* another client's waiter */
    for (i = RDL_ID_HEX + 1; i < ownerlen && owner[i] >= '0' && owner[i] <= '9'; i++)
        thread = thread * 10 + (unsigned long)(owner[i] - '0');
    q = wq_find(c, key, keylen);
    if (q == NULL)
        return;
    /* Each hand-over is announced twice for a local waiter (the releasing
     * thread's reply, then the pub/sub echo), and an echo can arrive after
     * the thread has moved on to a new wait: only newer tokens count. */
    if (token <= q->last_grant)
        return;
    q->last_grant = token;
    for (w = q->waiters; w != NULL; w = w->next)
        if (w->thread == thread && token > w->floor && !w->granted) {
            w->granted = true;
            w->token = token;
            /* The cond is shared by the name's local waiters; the others
             * see no new generation and sleep on. */
            RDL_CHECK(pthread_cond_broadcast(&q->cond));
            return;
        }
}

void rdl_waitq_sub_collect(rdlock_client_t *c, long long now, long long idle_ms, bool may_subscribe,
                           rdl_waitq_chan_fn sub, rdl_waitq_chan_fn unsub, void *arg)
{
    size_t i;
    rdl_tnode_t *nd, *next;
    RDL_TABLE_FOREACH_SAFE(&c->waits, i, nd, next)
    {
        rdl_waitq_t *q = (rdl_waitq_t *)nd;
        if (q->nwaiters > 0 && q->sub == SUB_NONE && may_subscribe) {
            sub(arg, q->key, q->keylen);
            q->sub = SUB_SENT;
        } else if (q->nwaiters == 0 && q->sub == SUB_ON && now - q->idle_since >= idle_ms) {
            unsub(arg, q->key, q->keylen);
            q->sub = SUB_UNSENT;
        } else if (q->nwaiters == 0 && q->sub == SUB_NONE && now - q->idle_since >= idle_ms) {
            rdl_table_remove(&c->waits, &q->node);
            wq_free(q);
        }
    }
}

void rdl_waitq_sub_confirmed(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_waitq_t *q = wq_find(c, key, keylen);
    if (q == NULL)
        return;
    if (q->sub == SUB_SENT)
        q->sub = SUB_ON;
    /* Waiters blocked in join see the confirmation; waking them also makes
     * them look once more, which is what join's caller does. */
    RDL_CHECK(pthread_cond_broadcast(&q->cond));
}

void rdl_waitq_sub_ended(rdlock_client_t *c, const char *key, size_t keylen)
{
    rdl_waitq_t *q = wq_find(c, key, keylen);
    if (q == NULL)
        return;
    if (q->sub == SUB_UNSENT) {
        q->sub = SUB_NONE; /* subscribed again next round if waited on again */
    } else if (q->sub != SUB_NONE) {
        /* Ended by the server, not asked for: a shard channel whose slot
         * moved to another node.  Subscribed again (there) next round;
         * a release meanwhile may go unheard, so the waiters look now. */
        q->sub = SUB_NONE;
        wq_wake(q);
    }
}

void rdl_waitq_sub_lost(rdlock_client_t *c)
{
    size_t i;
    rdl_tnode_t *nd;
    RDL_TABLE_FOREACH(&c->waits, i, nd)
    {
        rdl_waitq_t *q = (rdl_waitq_t *)nd;
        q->sub = SUB_NONE;
        wq_wake(q);
    }
}

bool rdl_waitq_any(const rdlock_client_t *c)
{
    return c->waits.n > 0;
}

void rdl_waitq_free_all(rdlock_client_t *c, bool after_fork)
{
    size_t i;
    rdl_tnode_t *nd, *next;
    RDL_TABLE_FOREACH_SAFE(&c->waits, i, nd, next)
    {
        rdl_waitq_t *q = (rdl_waitq_t *)nd;
        if (after_fork) {
            /* glibc's pthread_cond_destroy waits for the condvar's waiters
             * to leave, and in the child those threads do not exist: just
             * drop the memory. */
            free(q->key);
            free(q);
        } else {
            wq_free(q);
        }
    }
    rdl_table_free(&c->waits);
}
