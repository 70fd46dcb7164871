/*-------------------------------------------------------------------------
 *
 * attempts.c
 *	  The history of a task's attempts (taskq.attempts), for the actions
 *	  whose policy keeps it (keep_attempts): a row per claim, its outcome
 *	  written when the claim ends (returned, released, expired, cancelled),
 *	  rows deleted with their task.
 *
 * Opt-in, so the paths of an action that keeps nothing pay what they paid
 * before: a claim notes its rows only while attempt rows can exist at all
 * (taskq_policy_attempts_possible, a backend-local flag read once per
 * change of taskq.action_policies), and then writes rows only for the
 * actions that keep them (a backend-local lookup per action, kept per
 * session: action_policy.c).  The ends of a claim look the action up the
 * same way.  Every write here is SQL, in the transaction of the claim or
 * the return it belongs to: the rows are small, and only for those who
 * asked for them.
 *
 * Locking: none of its own.  Every write is made while the caller holds
 * the task's row (the claim just updated it; a return, release, extension
 * or the expiry sweep locked it), so the attempts of one task are written
 * by one transaction at a time, in the order of the task's own changes.
 *
 * Which attempt a claim's end updates: the task's last one (the highest
 * try), if it was claimed at the task's claimed_at (else the claim that
 * ends was not recorded: the policy changed meanwhile) and is still open
 * (outcome NULL) or, for a late owner's return or extension, ended
 * expired.  A try number is the task's num_tries after the claim, or one
 * more than the last recorded try when that is higher (a release gives
 * its try back, a re-drive starts num_tries again: their attempts still
 * count).
 *
 * Deletion: the statement trigger taskq.tasks_written() fires for every
 * SQL DELETE of taskq.tasks (retention, purge_finished, replace_tasks, an
 * admin's DELETE) and hands its old rows here; the direct completion that
 * deletes a task (taskq.retention = 0) calls taskq_attempts_delete
 * itself.  Both do nothing while no attempt row can exist.  No foreign key:
 * its trigger would cost every delete of a task a probe of taskq.attempts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "common/args.h"
#include "common/direct_write.h"
#include "common/plan.h"
#include "queue/queue_internal.h"

/* A row per claim: try as the banner says, open (no outcome). */
static TaskqPlan insert_plan = {
	"INSERT INTO taskq.attempts AS a (task_id, try, actor, claimed_at)"
	" SELECT c.id, GREATEST(c.tries, COALESCE((SELECT pg_catalog.max(m.try) FROM taskq.attempts AS m"
	"                                            WHERE m.task_id OPERATOR(pg_catalog.=) c.id), 0)"
	"                                 OPERATOR(pg_catalog.+) 1),"
	"        $3, $4"
	"   FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::integer[]))"
	"        AS c(id, tries)",
	4, {TEXTARRAYOID, INT4ARRAYOID, TEXTOID, TIMESTAMPTZOID}
};

/*
 * The end of the task's current attempt: outcome $2, status and result as
 * returned; $5: an attempt that ended expired may be ended again (a late
 * owner's return).
 */
#define END_SQL \
	"UPDATE taskq.attempts AS a" \
	"   SET outcome = $2, finished_at = pg_catalog.now(), status = $3, result = $4" \
	"  FROM taskq.tasks AS t" \
	" WHERE t.id OPERATOR(pg_catalog.=) $1 AND a.task_id OPERATOR(pg_catalog.=) $1" \
	"   AND a.try OPERATOR(pg_catalog.=) (SELECT pg_catalog.max(m.try) FROM taskq.attempts AS m" \
	"                                      WHERE m.task_id OPERATOR(pg_catalog.=) $1)" \
	"   AND a.claimed_at OPERATOR(pg_catalog.=) t.claimed_at" \
	"   AND (a.outcome IS NULL OR ($5 AND a.outcome OPERATOR(pg_catalog.=) 'expired'))"

static TaskqPlan end_plan = {
	END_SQL,
	5, {TEXTOID, TEXTOID, TEXTOID, JSONBOID, BOOLOID}
};

/* The same where the caller does not know the action: its policy asked here. */
static TaskqPlan end_if_kept_plan = {
	END_SQL
	"   AND EXISTS (SELECT FROM taskq.action_policies AS p"
	"                WHERE p.action OPERATOR(pg_catalog.=) t.action AND p.keep_attempts)",
	5, {TEXTOID, TEXTOID, TEXTOID, JSONBOID, BOOLOID}
};

/* A late owner's extension: the expired attempt is held again. */
static TaskqPlan reopen_plan = {
	"UPDATE taskq.attempts AS a"
	"   SET outcome = NULL, finished_at = NULL"
	"  FROM taskq.tasks AS t"
	" WHERE t.id OPERATOR(pg_catalog.=) $1 AND a.task_id OPERATOR(pg_catalog.=) $1"
	"   AND a.try OPERATOR(pg_catalog.=) (SELECT pg_catalog.max(m.try) FROM taskq.attempts AS m"
	"                                      WHERE m.task_id OPERATOR(pg_catalog.=) $1)"
	"   AND a.claimed_at OPERATOR(pg_catalog.=) t.claimed_at"
	"   AND a.outcome OPERATOR(pg_catalog.=) 'expired'",
	1, {TEXTOID}
};

static TaskqPlan delete_plan = {
	"DELETE FROM taskq.attempts AS a WHERE a.task_id OPERATOR(pg_catalog.=) ANY ($1)",
	1, {TEXTARRAYOID}
};

/* ----------
 * Claims
 * ----------
 */
typedef struct ClaimNote
{
	char	   *id;
	char	   *action;
	int32		tries;
} ClaimNote;

static bool noting = false;		/* this claim notes its rows */
static List *noted = NIL;		/* ClaimNotes of this claim */
static MemoryContext noted_cxt = NULL;

/*
 * A claim begins (taskq_claim, before it sweeps or walks): its rows are
 * noted if attempt rows can exist.
 */
void
taskq_attempts_claim_begin(void)
{
	noted = NIL;
	noted_cxt = CurrentMemoryContext;
	noting = taskq_policy_attempts_possible();
}

/* The claim took task id (text) of action (text), its num_tries now tries. */
void
taskq_attempts_note_claim(Datum id, Datum action, int32 tries)
{
	MemoryContext old;
	ClaimNote  *c;

	if (!noting)
		return;
	old = MemoryContextSwitchTo(noted_cxt);
	c = palloc(sizeof(ClaimNote));
	c->id = TextDatumGetCString(id);
	c->action = TextDatumGetCString(action);
	c->tries = tries;
	noted = lappend(noted, c);
	MemoryContextSwitchTo(old);
}

/*
 * The claim is done (its rows written, in this transaction): a row in
 * taskq.attempts for each task it took of an action that keeps them,
 * claimed by actor at the claim's moment.
 */
void
taskq_attempts_claimed(const char *actor, TimestampTz at)
{
	List	   *ids = NIL;
	List	   *tries = NIL;
	ListCell   *lc;
	Datum		values[4];
	Datum	   *tryd;
	int			n = 0;

	if (!noting || noted == NIL)
	{
		noted = NIL;
		return;
	}
	foreach(lc, noted)
	{
		ClaimNote  *c = lfirst(lc);

		if (taskq_policy_keeps_attempts(c->action))
		{
			ids = lappend(ids, c->id);
			tries = lappend_int(tries, c->tries);
		}
	}
	noted = NIL;
	if (ids == NIL)
		return;
	tryd = palloc(sizeof(Datum) * list_length(tries));
	foreach(lc, tries)
		tryd[n++] = Int32GetDatum(lfirst_int(lc));
	values[0] = taskq_text_array_datum(ids);
	values[1] = PointerGetDatum(construct_array(tryd, n, INT4OID, sizeof(int32), true,
												TYPALIGN_INT));
	values[2] = CStringGetTextDatum(actor);
	values[3] = TimestampTzGetDatum(at);
	taskq_execute(&insert_plan, values, NULL, false, 0);
}

/* ----------
 * The end of a claim
 * ----------
 */
static void
run_end(TaskqPlan *plan, const char *id, const char *outcome, const char *status,
		Jsonb *result, bool late)
{
	Datum		values[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	values[0] = CStringGetTextDatum(id);
	values[1] = CStringGetTextDatum(outcome);
	if (status != NULL)
		values[2] = CStringGetTextDatum(status);
	else
		nulls[2] = 'n';
	if (result != NULL)
		values[3] = JsonbPGetDatum(result);
	else
		nulls[3] = 'n';
	values[4] = BoolGetDatum(late);
	taskq_execute(plan, values, nulls, false, 0);
}

/*
 * Task id of action, whose row the caller holds locked, ends its current
 * attempt with outcome (completed, aborted, pending, released, expired,
 * cancelled), and status and result as its owner returned them (NULL:
 * none).  late: by its owner (a return or release), which may also end an
 * attempt that ended expired; the expiry sweep ends only an open one.
 * Nothing for an action that keeps no attempts.
 */
void
taskq_attempt_end(const char *id, const char *action, const char *outcome,
				  const char *status, Jsonb *result, bool late)
{
	if (!taskq_policy_attempts_possible() || !taskq_policy_keeps_attempts(action))
		return;
	run_end(&end_plan, id, outcome, status, result, late);
}

/* The same for a task whose action the caller did not read (rare paths). */
void
taskq_attempt_end_unknown_action(const char *id, const char *outcome)
{
	if (!taskq_policy_attempts_possible())
		return;
	run_end(&end_if_kept_plan, id, outcome, NULL, NULL, false);
}

/*
 * Task id of action was extended by the owner of its last claim: an
 * attempt that had ended expired is held again.
 */
void
taskq_attempt_reopen(const char *id, const char *action)
{
	Datum		arg;

	if (!taskq_policy_attempts_possible() || !taskq_policy_keeps_attempts(action))
		return;
	arg = CStringGetTextDatum(id);
	taskq_execute(&reopen_plan, &arg, NULL, false, 0);
}

/* ----------
 * Deletion with the task
 * ----------
 */

/* The attempts of these tasks (C strings), which were deleted. */
void
taskq_attempts_delete(List *ids)
{
	Datum		arg;

	if (ids == NIL || !taskq_policy_attempts_possible())
		return;
	arg = taskq_text_array_datum(ids);
	taskq_execute(&delete_plan, &arg, NULL, false, 0);
}

/*
 * An SQL statement deleted these rows of taskq.tasks (the trigger
 * taskq.tasks_written(), its old rows): their attempts go too.
 */
void
taskq_attempts_tasks_deleted(Relation rel, Tuplestorestate *oldtable)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	idcol;
	TupleTableSlot *slot;
	List	   *ids = NIL;

	if (oldtable == NULL || !taskq_policy_attempts_possible())
		return;
	idcol = taskq_column(desc, "id");
	if (idcol == InvalidAttrNumber)
		return;
	slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	tuplestore_rescan(oldtable);
	while (tuplestore_gettupleslot(oldtable, true, false, slot))
	{
		bool		isnull;
		Datum		v = slot_getattr(slot, idcol, &isnull);

		if (!isnull)
			ids = lappend(ids, TextDatumGetCString(v));
	}
	ExecDropSingleTupleTableSlot(slot);
	if (ids == NIL)
		return;
	SPI_connect();
	taskq_attempts_delete(ids);
	SPI_finish();
}
